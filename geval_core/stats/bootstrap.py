"""Bootstrap confidence intervals for the agreement figures (95%, percentile method).

Grouped data resample groups: every group's correlation and counts are computed once, and a resample
is a vector of group multiplicities, so B resamples cost matrix products, not B recomputations.
Ungrouped data resample items and recompute everything per resample.
"""

from __future__ import annotations

import numpy as np

from ..types import Scale
from .figures import figures
from .kappa import KAPPA_WEIGHTS, confusion, confusions, kappa_from_confusion, kappa_key
from .kernels import GroupStats, group_stats
from .paired import Paired

CI_METRICS = ("spearman", "kendall", "pearson", "tie_rate", "kappa", "kappa_linear", "kappa_quadratic")
_CELLS = 4_000_000  # resamples x groups held in memory at once


def interval(values: list[float | None] | np.ndarray) -> list[float | None]:
    """The 2.5th and 97.5th percentiles of the finite values; [None, None] if there are none."""
    arr = np.array([np.nan if v is None else v for v in values], dtype=float)
    arr = arr[np.isfinite(arr)]
    if not len(arr):
        return [None, None]
    lo, hi = np.percentile(arr, [2.5, 97.5])
    return [float(lo), float(hi)]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def bootstrap_ci(p: Paired, gs: GroupStats, scale: Scale, grouped: bool, resamples: int,
                 seed: int) -> dict[str, list[float | None]]:
    """95% intervals of every figure in CI_METRICS: groups resampled when grouped, items otherwise."""
    if grouped:
        return grouped_ci(gs, confusions(p.x, p.y, scale, p.codes, p.n_groups), resamples, seed)
    return items_ci(p.x, p.y, scale, resamples, seed)


def grouped_ci(gs: GroupStats, tables_per_group: np.ndarray, resamples: int,
               seed: int) -> dict[str, list[float | None]]:
    """Resample groups with replacement; tables_per_group is groups x k x k (judge rows, human columns)."""
    rng = np.random.default_rng(seed)
    n_groups, k = tables_per_group.shape[0], tables_per_group.shape[1]
    use = gs.use.astype(float)
    per_group = {name: np.where(gs.use, getattr(gs, name), 0.0) for name in ("spearman", "kendall", "pearson")}
    flat = tables_per_group.reshape(n_groups, k * k).astype(float)
    out: dict[str, list[float | None]] = {m: [] for m in CI_METRICS}
    chunk = max(1, _CELLS // max(n_groups, 1))
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        picks = rng.integers(0, n_groups, size=(b, n_groups))
        weights = np.zeros((b, n_groups))
        np.add.at(weights, (np.repeat(np.arange(b), n_groups), picks.ravel()), 1.0)
        used = weights @ use
        for name, values in per_group.items():
            out[name].extend(_ratio(weights @ values, used))
        out["tie_rate"].extend(_ratio(weights @ gs.tied_x, weights @ gs.pairs))
        tables = (weights @ flat).reshape(b, k, k)
        for w in KAPPA_WEIGHTS:
            out[kappa_key(w)].extend(kappa_from_confusion(t, w) for t in tables)
    return {m: interval(out[m]) for m in CI_METRICS}


def items_ci(x: np.ndarray, y: np.ndarray, scale: Scale, resamples: int,
             seed: int) -> dict[str, list[float | None]]:
    """Resample items with replacement and recompute every figure (kappa on the given scale)."""
    rng = np.random.default_rng(seed)
    n = len(x)
    zeros = np.zeros(n, dtype=np.int64)
    out: dict[str, list[float | None]] = {m: [] for m in CI_METRICS}
    for _ in range(resamples):
        idx = rng.integers(0, n, size=n)
        gs = group_stats(x[idx], y[idx], zeros, 1)
        fig = figures(gs, confusion(x[idx], y[idx], scale))
        # An item drawn twice would tie with its own copy: leave such pairs out of the tie rate,
        # or the interval sits above the estimate (0 ties, interval [0.07, 0.4] on 6 items).
        mult = np.bincount(idx, minlength=n).astype(float)
        copies = float((mult * (mult - 1) / 2).sum())
        pairs = float(gs.pairs[0]) - copies
        fig["tie_rate"] = (float(gs.tied_x[0]) - copies) / pairs if pairs > 0 else None
        for m in CI_METRICS:
            out[m].append(fig[m])
    return {m: interval(out[m]) for m in CI_METRICS}
