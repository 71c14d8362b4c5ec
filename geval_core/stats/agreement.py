"""Agreement between judge and human scores: Spearman, Kendall tau-b, Pearson, tie rate, Cohen's kappa.

Two readings. Group-level (the G-Eval paper's SummEval reading): correlate within each group (source
document), skip groups where either side is constant, average over groups; tie rate pooled over
within-group pairs. Dataset-level: all items pooled. `agreement` is the one place the CLI and the app
get these figures from; it assembles them from kernels (per-group ranks), kappa, figures and bootstrap.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..scoring import parse_reply
from ..types import Scale
from .bootstrap import METHOD, bootstrap_ci, figure_flags, flagged, withheld
from .figures import figures, mean_used
from .kappa import MAX_KAPPA_POINTS, confusion, infer_scale
from .kernels import DECIMALS, group_stats, tie_blocks
from .onepass import Pooled, dense, pooled, tied_pairs
from .paired import group_codes, pair, to_floats

REPLY_KS = (1, 2, 4, 5, 10, 20)


def _pooled(judge: Iterable[float | None], human: Iterable[float | None]) -> Pooled:
    p = pair(judge, human)
    return pooled(p.x, p.y)


def spearman(judge: Iterable[float | None], human: Iterable[float | None]) -> float | None:
    """Spearman's rho over all pairs; None when a side is constant or there are fewer than 2 pairs."""
    r = _pooled(judge, human)
    return r.spearman if r.defined else None


def kendall(judge: Iterable[float | None], human: Iterable[float | None]) -> float | None:
    """Kendall's tau-b over all pairs; None when a side is constant or there are fewer than 2 pairs."""
    r = _pooled(judge, human)
    return r.kendall if r.defined else None


def pearson(judge: Iterable[float | None], human: Iterable[float | None]) -> float | None:
    """Pearson's r over all pairs; None when a side is constant or there are fewer than 2 pairs."""
    p = pair(judge, human)
    gs = group_stats(p.x, p.y, p.codes, 1)
    return mean_used(gs.pearson, gs.use)


def tie_rate(scores: Iterable[float | None], groups: Sequence[Hashable] | None = None) -> float | None:
    """Share of item pairs (within-group pairs when grouped) whose scores are equal to 6 decimals."""
    x = to_floats(scores)
    if groups is not None and len(groups) != len(x):
        raise ValueError(f"scores ({len(x)}) and groups ({len(groups)}) must have the same length")
    keep = np.isfinite(x)
    if groups is None:  # counts per distinct score are enough: no sort, no group codes
        n = int(keep.sum())
        return tied_pairs(dense(x[keep]).counts) / (n * (n - 1) / 2) if n > 1 else None
    codes, n_groups = group_codes(groups, keep)
    sizes = np.bincount(codes, minlength=n_groups)
    pairs = float((sizes * (sizes - 1) / 2.0).sum())
    tied = float(tie_blocks(np.round(x[keep], DECIMALS), codes, n_groups).tied_pairs.sum())
    return tied / pairs if pairs else None


# ---- agreement -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementResult:
    """Judge-human agreement, with the reading it was computed under and what was left out."""

    reading: str  # "group" (per group, averaged) or "dataset" (all items pooled)
    items: int  # pairs with both scores
    groups: int  # groups averaged over (0 for the dataset reading)
    groups_skipped: int  # groups with < 2 items or a constant side
    spearman: float | None
    kendall: float | None  # tau-b
    pearson: float | None
    tie_rate: float | None  # judge scores
    human_tie_rate: float | None
    kappa: float | None
    kappa_linear: float | None
    kappa_quadratic: float | None
    scale: str
    missing: int = 0  # pairs dropped because the judge or the human score was missing
    bootstrap: int = 0
    seed: int = 0
    ci: dict[str, list[float | None]] = field(default_factory=dict)  # 95% intervals (bootstrap.METHOD)
    note: str = ""
    ci_undefined: dict[str, int] = field(default_factory=dict)  # resamples where a figure was undefined
    ci_resampled: str = ""  # what the bootstrap resampled: "groups" or "items"
    out_of_scale: int = 0  # judge scores outside the scale (kappa clips them to its ends)
    ci_units: int = 0  # how many units (groups or items) the bootstrap resampled
    ci_method: str = ""  # how the intervals are made from the resamples
    ci_warning: str = ""  # why intervals are withheld (too few units), "" when they are shown
    ci_flag: str = ""  # a caution on intervals that are shown (few units, or ci_flags'), "" when none
    ci_flags: dict[str, str] = field(default_factory=dict)  # figure -> the caution its own interval carries

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _note(reading: str, scale: Scale, inferred: bool) -> str:
    how = "inferred from the data" if inferred else "given"
    where = (
        "Correlations computed within each group and averaged over groups with no constant side; "
        "tie rate pooled over within-group pairs; kappa pooled over all items"
        if reading == "group"
        else "All items pooled"
    )
    if scale.max - scale.min + 1 > MAX_KAPPA_POINTS:
        return (
            f"{where}. No kappa: the {scale} scale ({how}) has more than {MAX_KAPPA_POINTS} points. "
            f"Ties and ranks compare scores rounded to {DECIMALS} decimals."
        )
    return (
        f"{where}. Kappa: both sides rounded to the nearest point of the {scale} scale ({how}; halves up, "
        f"values outside clipped). Ties and ranks compare scores rounded to {DECIMALS} decimals."
    )


def agreement(
    judge: Iterable[float | None],
    human: Iterable[float | None],
    groups: Sequence[Hashable] | None = None,
    scale: Scale | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    clusters: Sequence[Hashable] | None = None,
) -> AgreementResult:
    """All agreement figures in one result; bootstrap>0 adds 95% CIs.

    The bootstrap resamples groups when grouped, and for the dataset-level reading resamples the
    `clusters` (e.g. the documents of grouped data) when given, items otherwise.
    """
    # Float arrays once (None as NaN), not lists: 10^7 Python floats are 0.3 GB a side.
    judge, human = to_floats(judge), to_floats(human)
    p = pair(judge, human, groups)
    inferred = scale is None
    scale = infer_scale(p.x, p.y) if scale is None else scale
    gs = group_stats(p.x, p.y, p.codes, p.n_groups)
    reading = "dataset" if groups is None else "group"
    figs = figures(gs, confusion(p.x, p.y, scale))
    cp = pair(judge, human, clusters) if clusters is not None and groups is None else None
    codes = cp.codes if cp is not None else None
    ci, undefined = (
        bootstrap_ci(p, gs, scale, groups is not None, bootstrap, seed, figs, codes)
        if bootstrap > 0 and len(p.x)
        else ({}, {})
    )
    used = int(gs.use.sum())
    unit = "groups" if groups is not None or codes is not None else "items"
    units = used if groups is not None else cp.n_groups if cp is not None else len(p.x)
    flags = (
        figure_flags(ci, figs, units, unit, groups is not None) if ci and not withheld(units, unit) else {}
    )
    caution = "; ".join(filter(None, [flagged(units, unit) if ci else "", *flags.values()]))
    return AgreementResult(
        reading=reading,
        items=len(p.x),
        groups=used if reading == "group" else 0,
        # A group whose every pair is missing (e.g. no judge score) is skipped too, not silently gone.
        groups_skipped=len(set(groups)) - used if groups is not None else 0,
        scale=str(scale),
        missing=p.missing,
        bootstrap=int(bootstrap),
        seed=int(seed),
        ci=ci,
        note=_note(reading, scale, inferred),
        ci_undefined=undefined,
        ci_resampled=unit if ci else "",
        ci_units=units if ci else 0,
        ci_method=METHOD if ci else "",
        ci_warning=withheld(units, unit) if ci else "",
        ci_flag=caution,
        ci_flags=flags,
        out_of_scale=int(((p.x < scale.min) | (p.x > scale.max)).sum()),
        **figs,
    )


def replies_curve(
    replies_per_item: Sequence[Sequence[str | float]],
    human: Sequence[float | None],
    scale: Scale,
    groups: Sequence[Hashable] | None = None,
    ks: Iterable[int] = REPLY_KS,
) -> list[dict[str, Any]]:
    """For each k (<= replies per item): score items by the mean of their first k parsed replies."""
    parsed = []
    for replies in replies_per_item:
        values = [v if isinstance(v, (int, float)) else parse_reply(v) for v in replies]
        parsed.append([v for v in values if v is not None and scale.min <= v <= scale.max])
    n = max((len(r) for r in replies_per_item), default=0)
    curve = []
    for k in sorted(set(ks)):
        if k > n:
            continue
        scores = [float(np.mean(v[:k])) if v else None for v in parsed]
        result = agreement(scores, human, groups, scale)
        curve.append(
            {
                "k": k,
                "spearman": result.spearman,
                "kendall": result.kendall,
                "tie_rate": result.tie_rate,
                "items": result.items,
                "groups": result.groups,
                "groups_skipped": result.groups_skipped,
                "reading": result.reading,
            }
        )
    return curve
