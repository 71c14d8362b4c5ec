"""Agreement between judge and human scores: Spearman, Kendall tau-b, Pearson, tie rate, Cohen's kappa.

Two readings. Group-level (the G-Eval paper's SummEval reading): correlate within each group (source
document), skip groups where either side is constant, average over groups; tie rate pooled over
within-group pairs. Dataset-level: all items pooled. `agreement` is the one place the CLI and the app
get these figures from.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .bootstrap import grouped_ci, items_ci
from .groupstats import DECIMALS, GroupStats, group_stats, runs
from .scoring import parse_reply
from .types import Scale

KAPPA_WEIGHTS = (None, "linear", "quadratic")
CI_METRICS = ("spearman", "kendall", "pearson", "tie_rate", "kappa", "kappa_linear", "kappa_quadratic")
REPLY_KS = (1, 2, 4, 5, 10, 20)
# A 0-100 scale at most: wider spans (unbounded scores) get no kappa rather than a huge table.
MAX_KAPPA_POINTS = 101


def _floats(values: Iterable[float | None]) -> np.ndarray:
    values = values if isinstance(values, np.ndarray) else list(values)
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):  # None among the numbers
        return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _codes(groups: Sequence[Hashable] | None, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """0-based group codes of the kept items and the number of groups (one group when ungrouped)."""
    if groups is None:
        return np.zeros(int(keep.sum()), dtype=np.int64), 1
    kept = [g for g, k in zip(groups, keep.tolist(), strict=True) if k]
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(g, len(index)) for g in kept), dtype=np.int64, count=len(kept))
    return codes, len(index)


@dataclass(frozen=True)
class _Paired:
    x: np.ndarray  # judge
    y: np.ndarray  # human
    codes: np.ndarray
    n_groups: int
    missing: int  # pairs dropped because a side had no score


def _pair(judge: Iterable[float | None], human: Iterable[float | None],
          groups: Sequence[Hashable] | None = None) -> _Paired:
    x, y = _floats(judge), _floats(human)
    if len(x) != len(y) or (groups is not None and len(groups) != len(x)):
        raise ValueError(f"judge ({len(x)}), human ({len(y)}) and groups must have the same length")
    keep = np.isfinite(x) & np.isfinite(y)
    codes, n_groups = _codes(groups, keep)
    return _Paired(x[keep], y[keep], codes, n_groups, int(len(x) - keep.sum()))


def _mean_used(values: np.ndarray, use: np.ndarray) -> float | None:
    return float(np.mean(values[use])) if use.any() else None


def _pooled(judge: Iterable[float | None], human: Iterable[float | None], name: str) -> float | None:
    p = _pair(judge, human)
    gs = group_stats(p.x, p.y, p.codes, 1)
    return _mean_used(getattr(gs, name), gs.use)


def spearman(judge: Iterable[float | None], human: Iterable[float | None]) -> float | None:
    """Spearman's rho over all pairs; None when a side is constant or there are fewer than 2 pairs."""
    return _pooled(judge, human, "spearman")


def kendall(judge: Iterable[float | None], human: Iterable[float | None]) -> float | None:
    """Kendall's tau-b over all pairs; None when a side is constant or there are fewer than 2 pairs."""
    return _pooled(judge, human, "kendall")


def pearson(judge: Iterable[float | None], human: Iterable[float | None]) -> float | None:
    """Pearson's r over all pairs; None when a side is constant or there are fewer than 2 pairs."""
    return _pooled(judge, human, "pearson")


def tie_rate(scores: Iterable[float | None], groups: Sequence[Hashable] | None = None) -> float | None:
    """Share of item pairs (within-group pairs when grouped) whose scores are equal to 6 decimals."""
    x = _floats(scores)
    if groups is not None and len(groups) != len(x):
        raise ValueError(f"scores ({len(x)}) and groups ({len(groups)}) must have the same length")
    keep = np.isfinite(x)
    codes, n_groups = _codes(groups, keep)
    sizes = np.bincount(codes, minlength=n_groups)
    pairs = float((sizes * (sizes - 1) / 2.0).sum())
    tied = float(runs(np.round(x[keep], DECIMALS), codes, n_groups).tied_pairs.sum())
    return tied / pairs if pairs else None


# ---- Cohen's kappa -------------------------------------------------------------------------------

def to_points(values: np.ndarray, scale: Scale) -> np.ndarray:
    """Round to the nearest scale point (halves up) and clip into the scale; 0-based category index."""
    return (np.clip(np.floor(values + 0.5), scale.min, scale.max) - scale.min).astype(np.int64)


def _kappa_weights(k: int, weights: str | None) -> np.ndarray:
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j) / (k - 1)
    if weights == "quadratic":
        return ((i - j) / (k - 1)) ** 2
    raise ValueError(f"kappa weights must be None, 'linear' or 'quadratic', got {weights!r}")


def kappa_from_confusion(confusion: np.ndarray, weights: str | None = None) -> float | None:
    """Cohen's kappa from a k x k table (rows judge, columns human); None when undefined."""
    k, n = confusion.shape[0], confusion.sum()
    if k < 2 or n == 0:
        return None
    w = _kappa_weights(k, weights)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / n
    denominator = float((w * expected).sum())
    return None if denominator == 0 else 1.0 - float((w * confusion).sum()) / denominator


def _confusions(x: np.ndarray, y: np.ndarray, scale: Scale, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """One k x k table per group (groups x k x k); 1 x 1 tables, where kappa is undefined, on too wide a scale."""
    k = scale.max - scale.min + 1
    if k > MAX_KAPPA_POINTS:
        return np.zeros((n_groups, 1, 1), dtype=np.int64)
    cells = (codes * k + to_points(x, scale)) * k + to_points(y, scale)
    return np.bincount(cells, minlength=n_groups * k * k).reshape(n_groups, k, k)


def _confusion(x: np.ndarray, y: np.ndarray, scale: Scale) -> np.ndarray:
    return _confusions(x, y, scale, np.zeros(len(x), dtype=np.int64), 1)[0]


def cohen_kappa(judge: Iterable[float | None], human: Iterable[float | None], scale: Scale,
                weights: str | None = None) -> float | None:
    """Cohen's kappa (unweighted, linear or quadratic) after rounding both sides to scale points."""
    p = _pair(judge, human)
    return kappa_from_confusion(_confusion(p.x, p.y, scale), weights)


def infer_scale(*arrays: np.ndarray) -> Scale:
    """The integer scale spanning the data (floor of the lowest value to ceil of the highest)."""
    values = np.concatenate([a for a in arrays if len(a)]) if any(len(a) for a in arrays) else np.zeros(1)
    return Scale(int(math.floor(values.min())), int(math.ceil(values.max())))


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
    ci: dict[str, list[float | None]] = field(default_factory=dict)  # 95% percentile intervals
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _figures(gs: GroupStats, confusion: np.ndarray) -> dict[str, float | None]:
    pairs = float(gs.pairs.sum())
    return {
        "spearman": _mean_used(gs.spearman, gs.use), "kendall": _mean_used(gs.kendall, gs.use),
        "pearson": _mean_used(gs.pearson, gs.use),
        "tie_rate": float(gs.tied_x.sum()) / pairs if pairs else None,
        "human_tie_rate": float(gs.tied_y.sum()) / pairs if pairs else None,
        **{_kappa_key(w): kappa_from_confusion(confusion, w) for w in KAPPA_WEIGHTS},
    }


def _kappa_key(weights: str | None) -> str:
    return "kappa" if weights is None else f"kappa_{weights}"


def _note(reading: str, scale: Scale, inferred: bool) -> str:
    how = "inferred from the data" if inferred else "given"
    where = ("Correlations computed within each group and averaged over groups with no constant side; "
             "tie rate pooled over within-group pairs; kappa pooled over all items"
             if reading == "group" else "All items pooled")
    if scale.max - scale.min + 1 > MAX_KAPPA_POINTS:
        return (f"{where}. No kappa: the {scale} scale ({how}) has more than {MAX_KAPPA_POINTS} points. "
                f"Ties and ranks compare scores rounded to {DECIMALS} decimals.")
    return (f"{where}. Kappa: both sides rounded to the nearest point of the {scale} scale ({how}; halves up, "
            f"values outside clipped). Ties and ranks compare scores rounded to {DECIMALS} decimals.")


def agreement(judge: Iterable[float | None], human: Iterable[float | None],
              groups: Sequence[Hashable] | None = None, scale: Scale | None = None,
              bootstrap: int = 0, seed: int = 0) -> AgreementResult:
    """All agreement figures in one result; bootstrap>0 adds 95% CIs (resampling groups when grouped)."""
    p = _pair(judge, human, groups)
    inferred = scale is None
    scale = infer_scale(p.x, p.y) if scale is None else scale
    gs = group_stats(p.x, p.y, p.codes, p.n_groups)
    reading = "dataset" if groups is None else "group"
    figures = _figures(gs, _confusion(p.x, p.y, scale))
    ci = _bootstrap(p, gs, scale, reading, bootstrap, seed) if bootstrap > 0 and len(p.x) else {}
    used = int(gs.use.sum())
    return AgreementResult(
        reading=reading, items=len(p.x),
        groups=used if reading == "group" else 0,
        groups_skipped=p.n_groups - used if reading == "group" else 0,
        scale=str(scale), missing=p.missing, bootstrap=int(bootstrap), seed=int(seed), ci=ci,
        note=_note(reading, scale, inferred), **figures)


def _bootstrap(p: _Paired, gs: GroupStats, scale: Scale, reading: str, resamples: int,
               seed: int) -> dict[str, list[float | None]]:
    if reading == "group":
        confusions = _confusions(p.x, p.y, scale, p.codes, p.n_groups)
        return grouped_ci(gs, confusions, resamples, seed, kappa_from_confusion, CI_METRICS)
    return items_ci(p.x, p.y, lambda x, y: _confusion(x, y, scale), _figures, resamples, seed, CI_METRICS)


def replies_curve(replies_per_item: Sequence[Sequence[str | float]], human: Sequence[float | None],
                  scale: Scale, groups: Sequence[Hashable] | None = None,
                  ks: Iterable[int] = REPLY_KS) -> list[dict[str, Any]]:
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
        curve.append({"k": k, "spearman": result.spearman, "kendall": result.kendall,
                      "tie_rate": result.tie_rate, "items": result.items, "groups": result.groups,
                      "groups_skipped": result.groups_skipped, "reading": result.reading})
    return curve
