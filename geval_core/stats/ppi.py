"""Prediction-powered inference (Angelopoulos et al., Science 2023) for the mean human score.

The judge scores all N items; people rate n of them. Classic PPI corrects the judge's mean on the
unrated items by the judge's average error on the rated ones:

    estimate = mean(judge on unrated) + mean(human - judge on rated)
    variance = var(judge on unrated) / N_u + var(human - judge on rated) / n

PPI++ (Angelopoulos, Duchi and Zrnic, 2023) weighs the judge by lambda = Cov(human, judge) /
((1 + n / N_u) Var(judge)) on the rated items, clipped to [0, 1], which minimises the variance: lambda=0
is the human-only mean, lambda=1 classic PPI, so PPI++ is never much wider than either.

The intervals assume the rated items are a random sample of the items (ASSUMPTION). They use Student's
t with n_rated - 1 degrees of freedom, not the paper's normal z: with z, PPI++ covered 89% at 10 rated
items and 91% at 20 (bench/bench_coverage.py); with t, 93-94% at 20-30 and classic PPI 95% from 10.
Below MIN_RATED[method] rated items, or when every rating is the same (no spread to estimate), the
estimate has no interval. When the items come in groups (documents), items of a group are not
independent: the variance is cluster-robust (the sum of each group's influence, squared), and its
precision rests on the groups that hold a rating (the rectifier, the larger part, lives only there): the
small-sample factor is Gr/(Gr-1) and the quantile t(Gr-1) for Gr such groups (with all G groups, 10 ratings
spread over 50 documents covered 91%). Fewer than MIN_UNITS groups, or ratings in fewer than
MIN_RATED_GROUPS of them, give none. Grouped data read as independent items get an interval that is too
narrow (PPI++ covered 86-93% on the bench): a reader that knows the groups must pass them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .bootstrap import MIN_UNITS, t975
from .paired import to_floats

METHODS = ("classic", "ppi++")
Z95 = 1.959963984540054
# Fewer rated items: no interval. With t, classic PPI covered 95% from 10 rated items; PPI++, whose weight
# lambda is itself estimated from the rated items, 89% at 10, 93% at 20, 94-95% from 30 (the bench).
MIN_RATED = {"classic": 10, "ppi++": 30}
MIN_RATED_GROUPS = 5  # grouped data: ratings in fewer groups give no interval (not measured below)
ASSUMPTION = (
    "PPI assumes the rated items are a random sample of the items (each as likely to be rated); "
    "ratings chosen by hand, or only the hard cases, bias the estimate and its interval."
)


@dataclass(frozen=True)
class Estimate:
    """A corrected estimate of the mean human score with its 95% interval, beside the naive means."""

    method: str
    estimate: float
    ci: list[float] | None  # None: withheld (see warning)
    se: float
    judge_mean: float | None  # judge on every scored item
    human_mean: float | None  # people on the rated items
    human_ci: list[float] | None  # the human-only mean's own 95% interval (the width PPI must beat)
    n_rated: int
    n_total: int
    lam: float
    warning: str = ""  # why there is no interval, "" when there is one
    groups: int = 0  # groups the variance is clustered on (0: items independent)
    rated_groups: int = 0  # of those, the groups that hold a rating (the interval's degrees of freedom + 1)
    assumption: str = ASSUMPTION

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _split(
    judge: Iterable[float | None], human: Iterable[float | None], clusters: Iterable[Any] | None = None
) -> tuple[np.ndarray, ...]:
    """(judge on rated, human on rated, judge on unrated, cluster codes of rated, of unrated); items
    without a judge score are dropped; codes are empty without clusters."""
    x, y = to_floats(judge), to_floats(human)
    if len(x) != len(y):
        raise ValueError(f"judge ({len(x)}) and human ({len(y)}) must have the same length")
    scored = np.isfinite(x)
    rated = scored & np.isfinite(y)
    codes = np.zeros(0, dtype=np.int64)
    if clusters is not None:
        labels = [str(c) for c in clusters]
        if len(labels) != len(x):
            raise ValueError(f"clusters ({len(labels)}) and judge ({len(x)}) must have the same length")
        codes = np.unique(np.asarray(labels), return_inverse=True)[1]
        return x[rated], y[rated], x[scored & ~rated], codes[rated], codes[scored & ~rated]
    return x[rated], y[rated], x[scored & ~rated], codes, codes


def _var(values: np.ndarray) -> float:
    return float(np.var(values, ddof=1)) if len(values) > 1 else 0.0


def power_lambda(judge_rated: np.ndarray, human_rated: np.ndarray, n_unrated: int) -> float:
    """PPI++'s variance-minimising weight of the judge for a mean, clipped to [0, 1]."""
    var = _var(judge_rated)
    if var == 0 or n_unrated == 0 or len(judge_rated) < 2:
        return 0.0
    cov = float(np.cov(human_rated, judge_rated, ddof=1)[0, 1])
    return float(np.clip(cov / ((1 + len(judge_rated) / n_unrated) * var), 0.0, 1.0))


def ppi_parts(
    judge_rated: np.ndarray, human_rated: np.ndarray, judge_unrated: np.ndarray, lam: float
) -> tuple[float, float]:
    """(estimate, variance) of the mean for a given judge weight lam (1 = classic PPI)."""
    n, m = len(human_rated), len(judge_unrated)
    rectifier = human_rated - lam * judge_rated
    unrated_mean = float(judge_unrated.mean()) if m else 0.0
    estimate = lam * unrated_mean + float(rectifier.mean())
    variance = _var(rectifier) / n + (lam**2 * _var(judge_unrated) / m if m else 0.0)
    return estimate, variance


def cluster_variance(
    judge_rated: np.ndarray,
    human_rated: np.ndarray,
    judge_unrated: np.ndarray,
    lam: float,
    rated_codes: np.ndarray,
    unrated_codes: np.ndarray,
) -> tuple[float, int, int]:
    """(cluster-robust variance of the estimate, groups, groups with a rating): each group's summed influence,
    squared, x Gr/(Gr-1) for the Gr groups that hold a rating."""
    n, m = len(human_rated), len(judge_unrated)
    rectifier = human_rated - lam * judge_rated
    influence = (rectifier - rectifier.mean()) / n
    groups = int(max(rated_codes.max(initial=-1), unrated_codes.max(initial=-1))) + 1
    sums = np.bincount(rated_codes, weights=influence, minlength=groups)
    if m:
        sums += np.bincount(
            unrated_codes, weights=lam * (judge_unrated - judge_unrated.mean()) / m, minlength=groups
        )
    used = int(np.count_nonzero(np.bincount(np.concatenate([rated_codes, unrated_codes]), minlength=groups)))
    rated = int(np.count_nonzero(np.bincount(rated_codes, minlength=groups)))
    return (float(rated / (rated - 1) * (sums**2).sum()) if rated > 1 else 0.0), used, rated


def _withheld(n_rated: int, human_rated: np.ndarray, groups: int, method: str, rated_groups: int = 0) -> str:
    """Why this estimate gets no interval ("" when it gets one)."""
    least = MIN_RATED[method]
    if n_rated < least:
        return (
            f"no interval: {n_rated} rated items, fewer than {least} for {method} (below that its intervals "
            "covered under 93% in simulation on resampled SummEval documents)"
        )
    if np.ptp(human_rated) == 0:
        return "no interval: every rated item has the same rating, so their spread cannot be estimated"
    if groups and groups < MIN_UNITS:
        return f"no interval: the items come in {groups} groups, fewer than {MIN_UNITS}"
    if groups and rated_groups < MIN_RATED_GROUPS:
        return (
            f"no interval: the ratings sit in {rated_groups} groups, fewer than {MIN_RATED_GROUPS} (the "
            "interval's precision rests on the groups that hold a rating)"
        )
    return ""


def _ci(centre: float, se: float, df: int, warning: str) -> list[float] | None:
    half = t975(df) * se
    return None if warning else [centre - half, centre + half]


def ppi_mean(
    judge: Iterable[float | None],
    human: Iterable[float | None],
    method: str = "ppi++",
    clusters: Iterable[Any] | None = None,
) -> Estimate:
    """The PPI estimate of the mean human score: judge on all items, human where rated (None elsewhere).

    `clusters` (e.g. each item's document) makes the variance cluster-robust over those groups.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    xr, yr, xu, cr, cu = _split(judge, human, clusters)
    if len(yr) < 2:
        raise InputError(
            f"PPI needs at least 2 items with both a judge score and a human rating (got {len(yr)})"
        )
    lam = 1.0 if method == "classic" else power_lambda(xr, yr, len(xu))
    if not len(xu):  # nothing unrated: the judge adds nothing, the estimate is the human mean
        lam = 0.0
    estimate, variance = ppi_parts(xr, yr, xu, lam)
    df, groups, rated_groups = len(yr) - 1, 0, 0
    human_var = _var(yr) / len(yr)
    if clusters is not None:
        variance, groups, rated_groups = cluster_variance(xr, yr, xu, lam, cr, cu)
        human_var = cluster_variance(xr, yr, xu, 0.0, cr, cu)[0]
        df = max(rated_groups - 1, 1)
    se = float(np.sqrt(variance))
    warning = _withheld(len(yr), yr, groups, method, rated_groups)
    all_judge = np.concatenate([xr, xu])
    return Estimate(
        method,
        estimate,
        _ci(estimate, se, df, warning),
        se,
        float(all_judge.mean()),
        float(yr.mean()),
        # The human-only mean is a plain mean: classic PPI's minimum (lambda = 0) holds for it.
        _ci(
            float(yr.mean()),
            float(np.sqrt(human_var)),
            df,
            _withheld(len(yr), yr, groups, "classic", rated_groups),
        ),
        len(yr),
        len(all_judge),
        lam,
        warning,
        groups,
        rated_groups,
    )


def ppi_difference(a: Estimate, b: Estimate) -> dict[str, Any]:
    """A minus B for two estimates made on disjoint items (independent: their variances add)."""
    diff = a.estimate - b.estimate
    se = float(np.hypot(a.se, b.se))
    warning = a.warning or b.warning
    # Welch-Satterthwaite degrees of freedom of the summed variances, each side with its own df.
    dfa, dfb = (a.rated_groups or a.n_rated) - 1, (b.rated_groups or b.n_rated) - 1
    df = int(se**4 / (a.se**4 / max(dfa, 1) + b.se**4 / max(dfb, 1))) if se > 0 else max(dfa + dfb, 1)
    naive = None if a.judge_mean is None or b.judge_mean is None else a.judge_mean - b.judge_mean
    human = None if a.human_mean is None or b.human_mean is None else a.human_mean - b.human_mean
    return {
        "estimate": diff,
        "ci": _ci(diff, se, max(df, 1), warning),
        "se": se,
        "judge_mean": naive,
        "human_mean": human,
        "n_rated": a.n_rated + b.n_rated,
        "n_total": a.n_total + b.n_total,
        "method": a.method,
        "warning": warning,
    }


def hold_out(human: list[float | None], keep: int | None, seed: int = 0) -> list[float | None]:
    """Keep `keep` randomly chosen human ratings and blank the rest (how many ratings would PPI need?)."""
    rated = [i for i, v in enumerate(human) if v is not None]
    if keep is not None and keep > len(rated):
        raise InputError(
            f"cannot keep {keep} ratings: only {len(rated)} items are rated (--rated at most {len(rated)})"
        )
    if keep is None or keep == len(rated):
        return list(human)
    chosen = set(np.random.default_rng(seed).choice(rated, size=keep, replace=False).tolist())
    return [v if i in chosen else None for i, v in enumerate(human)]
