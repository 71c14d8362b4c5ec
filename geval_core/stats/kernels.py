"""Per-group rank statistics, vectorised: ranks, tie counts, Spearman, Kendall tau-b and Pearson.

Every agreement figure in geval_core.stats comes from here. A dataset-level reading is the special case of one group,
handed to `onepass` (one coding of each side, no per-figure sorts). Values are compared after rounding to
`DECIMALS` places, so float noise from probability weighting neither breaks nor makes ties; Pearson uses
the unrounded values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .onepass import DECIMALS, pooled

# Groups up to this size get Kendall's S from pairwise comparisons at every lag (O(n * size), no loop
# over groups); larger groups go to scipy's O(m log m) tau-b one by one (there are few of them).
SMALL_GROUP = 64


@dataclass(frozen=True)
class TieBlocks:
    """Blocks of equal (group, value) in sorted order: the basis of ranks and tie counts."""

    order: np.ndarray  # item indices sorted by (group, value)
    block_id: np.ndarray  # block of each item, in sorted order
    block_start: np.ndarray  # first sorted index of each block
    block_len: np.ndarray
    distinct: np.ndarray  # distinct values per group
    tied_pairs: np.ndarray  # pairs with equal values per group


def tie_blocks(values: np.ndarray, codes: np.ndarray, n_groups: int) -> TieBlocks:
    """Find blocks of equal values within each group in O(n log n)."""
    n = len(values)
    order = np.argsort(values, kind="stable") if n_groups == 1 else np.lexsort((values, codes))
    cs, vs = codes[order], values[order]
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = (cs[1:] != cs[:-1]) | (vs[1:] != vs[:-1])
    block_start = np.flatnonzero(new)
    block_len = np.diff(np.append(block_start, n))
    block_group = cs[block_start]
    distinct = np.bincount(block_group, minlength=n_groups)
    tied = np.bincount(block_group, weights=block_len * (block_len - 1) / 2.0, minlength=n_groups)
    return TieBlocks(order, np.cumsum(new) - 1, block_start, block_len, distinct, tied)


def ranks(b: TieBlocks, codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """1-based average ranks within each group (ties share the mean of their positions)."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    block_group = codes[b.order][b.block_start]
    mean_pos = b.block_start + (b.block_len - 1) / 2.0 - starts[block_group] + 1.0
    out = np.empty(len(b.order), dtype=float)
    out[b.order] = mean_pos[b.block_id]
    return out


def group_pearson(x: np.ndarray, y: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Pearson r per group (NaN where a side is constant); centred first for numerical stability."""
    g = len(sizes)
    safe = np.maximum(sizes, 1)
    dx = x - (np.bincount(codes, weights=x, minlength=g) / safe)[codes]
    dy = y - (np.bincount(codes, weights=y, minlength=g) / safe)[codes]
    sxy = np.bincount(codes, weights=dx * dy, minlength=g)
    sxx = np.bincount(codes, weights=dx * dx, minlength=g)
    syy = np.bincount(codes, weights=dy * dy, minlength=g)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    return np.clip(r, -1.0, 1.0)


def pooled_pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r of one sample (NaN where a side is constant); centred first for numerical stability."""
    dx, dy = x - x.mean(), y - y.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.dot(dx, dy) / np.sqrt(np.dot(dx, dx) * np.dot(dy, dy))
    return float(np.clip(r, -1.0, 1.0))


def _small_group_s(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Kendall's S (concordant minus discordant pairs) per group, items sorted by group."""
    s = np.zeros(n_groups)
    lag = 1
    while lag < len(x):
        same = np.flatnonzero(codes[lag:] == codes[:-lag])
        if not len(same):
            break  # sorted by group: no pair at this lag means none at any larger lag
        sign = np.sign(x[same + lag] - x[same]) * np.sign(y[same + lag] - y[same])
        s += np.bincount(codes[same], weights=sign, minlength=n_groups)
        lag += 1
    return s


def group_kendall(
    xr: np.ndarray,
    yr: np.ndarray,
    codes: np.ndarray,
    sizes: np.ndarray,
    tied_x: np.ndarray,
    tied_y: np.ndarray,
    use: np.ndarray,
) -> np.ndarray:
    """Kendall tau-b per group on rounded values; NaN for groups not in `use`."""
    g = len(sizes)
    tau = np.full(g, np.nan)
    small = use & (sizes <= SMALL_GROUP)
    if small.any():
        pick = small[codes]
        order = np.argsort(codes[pick], kind="stable")
        s = _small_group_s(xr[pick][order], yr[pick][order], codes[pick][order], g)
        n0 = sizes * (sizes - 1) / 2.0
        with np.errstate(divide="ignore", invalid="ignore"):
            tau[small] = (s / np.sqrt((n0 - tied_x) * (n0 - tied_y)))[small]
    large = np.flatnonzero(use & (sizes > SMALL_GROUP))
    if len(large):
        from scipy.stats import kendalltau  # imported late: scipy costs ~0.5 s at every CLI start

        order = np.argsort(codes, kind="stable")
        starts = np.concatenate(([0], np.cumsum(sizes)))
        for k in large:
            idx = order[starts[k] : starts[k + 1]]
            tau[k] = kendalltau(xr[idx], yr[idx]).statistic
    return np.clip(tau, -1.0, 1.0)


@dataclass(frozen=True)
class GroupStats:
    """Per-group figures, plus what tie rates and the bootstrap need."""

    spearman: np.ndarray
    kendall: np.ndarray
    pearson: np.ndarray
    use: np.ndarray  # groups with >= 2 items and neither side constant
    sizes: np.ndarray
    tied_x: np.ndarray  # tied judge pairs per group
    tied_y: np.ndarray  # tied human pairs per group

    @property
    def pairs(self) -> np.ndarray:
        """Item pairs per group."""
        return self.sizes * (self.sizes - 1) / 2.0


def group_stats(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_groups: int) -> GroupStats:
    """Correlate judge x with human y inside every group."""
    if n_groups == 1:
        return _one_group(x, y)
    sizes = np.bincount(codes, minlength=n_groups)
    xr, yr = np.round(x, DECIMALS), np.round(y, DECIMALS)
    rx, ry = tie_blocks(xr, codes, n_groups), tie_blocks(yr, codes, n_groups)
    use = (sizes >= 2) & (rx.distinct >= 2) & (ry.distinct >= 2)
    nan = np.full(n_groups, np.nan)
    if not use.any():
        return GroupStats(nan, nan.copy(), nan.copy(), use, sizes, rx.tied_pairs, ry.tied_pairs)
    spearman = group_pearson(ranks(rx, codes, sizes), ranks(ry, codes, sizes), codes, sizes)
    pearson = group_pearson(x, y, codes, sizes)
    kendall = group_kendall(xr, yr, codes, sizes, rx.tied_pairs, ry.tied_pairs, use)
    return GroupStats(
        np.where(use, spearman, np.nan),
        kendall,
        np.where(use, pearson, np.nan),
        use,
        sizes,
        rx.tied_pairs,
        ry.tied_pairs,
    )


def _one_group(x: np.ndarray, y: np.ndarray) -> GroupStats:
    """The figures of a single group (the dataset-level reading, item resamples) in one pass."""
    p = pooled(x, y)
    pearson = pooled_pearson(x, y) if p.defined else np.nan
    return GroupStats(
        np.array([p.spearman]),
        np.array([p.kendall]),
        np.array([pearson]),
        np.array([p.defined]),
        np.array([p.n]),
        np.array([float(p.tied_x)]),
        np.array([float(p.tied_y)]),
    )
