"""The pooled (one-group) rank figures in one pass: tied pairs, Spearman's rho and Kendall's tau-b.

Each side is coded once into dense ranks (0 = its lowest value) with a count per value: by counting over
the value range when it is narrow (any 1-5 or 0-10 scale at 6 decimals), so no sort at all, else by one
sort. Tied pairs and Spearman's average ranks follow from the counts alone. Kendall's tau-b needs the
joint ties and the discordant pairs: read off the judge x human count table when it is small (scores on
a few hundred points), otherwise from one sort of a joint int64 key, whose runs are the occupied cells,
and an inversion count over those cells that splits on one bit of the rarer side's rank per level.
Scipy sorts each side twice (argsorts of floats) and ranks again for Spearman; this does at most one
sort of integers and never holds more than a few int32/int64 arrays of n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DECIMALS = 6
_STEP = 10.0**DECIMALS
# Value ranges (in steps of 10^-DECIMALS) up to RANGE_PER_ITEM * n steps, and at most RANGE_CELLS, are
# coded by counting: the table costs 13 bytes a step (counts, flags, ranks), less than sorting the largest
# samples. Small samples (a bootstrap's many resamples) sort instead: a weighted 1-5 score spans millions of
# steps, and counting those for a few hundred items costs far more than a sort.
RANGE_CELLS = 1 << 23
RANGE_PER_ITEM = 4
# The joint count table is used when it has at most max(n, 4096) * TABLE_PER_ITEM cells (so it costs
# O(n), also in the bootstrap's many small resamples) and at most TABLE_CELLS (its ~5 copies stay small).
TABLE_PER_ITEM = 2
TABLE_CELLS = 1 << 22
_EXACT = 2.0**53  # integers below this are exact in float64


@dataclass(frozen=True)
class Dense:
    """Every item's dense rank (0 = lowest value) and the number of items with each distinct value."""

    codes: np.ndarray  # int32, in item order
    counts: np.ndarray  # int64, one per distinct value, ascending

    @property
    def distinct(self) -> int:
        """Number of distinct values."""
        return len(self.counts)


def dense(values: np.ndarray) -> Dense:
    """Dense ranks of finite values compared after rounding to DECIMALS places."""
    n = len(values)
    if n == 0:
        return Dense(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64))
    # np.round(v, 6) is rint(v * 1e6) / 1e6: the integers rint(v * 1e6) tie and order exactly as it does.
    steps = np.multiply(values, _STEP)
    np.rint(steps, out=steps)
    lo, hi = float(steps.min()), float(steps.max())
    if max(-lo, hi) < _EXACT and hi - lo < min(RANGE_CELLS, max(RANGE_PER_ITEM * n, 4096)):
        steps -= lo
        offsets = steps.astype(np.int64)
        del steps
        counts = np.bincount(offsets, minlength=int(hi - lo) + 1)
        seen = counts != 0
        rank_of = np.cumsum(seen, dtype=np.int32)
        rank_of -= 1
        codes = rank_of[offsets]
        return Dense(codes, counts[seen])
    del steps
    _, codes, counts = np.unique(np.round(values, DECIMALS), return_inverse=True, return_counts=True)
    return Dense(codes.astype(np.int32), counts.astype(np.int64))


def tied_pairs(counts: np.ndarray) -> int:
    """Pairs of items that share a value, from the count of items per value."""
    return int((counts * (counts - 1) // 2).sum())


@dataclass(frozen=True)
class Pooled:
    """The rank figures of one sample; spearman and kendall are NaN when undefined."""

    n: int
    tied_x: int  # pairs with equal x
    tied_y: int  # pairs with equal y
    spearman: float
    kendall: float  # tau-b

    @property
    def defined(self) -> bool:
        """At least 2 items and neither side constant."""
        return not np.isnan(self.kendall)


def pooled(x: np.ndarray, y: np.ndarray) -> Pooled:
    """Tied pairs of each side, Spearman's rho and Kendall's tau-b of paired finite x and y."""
    dx, dy = dense(x), dense(y)
    n = len(x)
    if n < 2 or dx.distinct < 2 or dy.distinct < 2:
        return Pooled(n, tied_pairs(dx.counts), tied_pairs(dy.counts), float("nan"), float("nan"))
    cell_x, cell_y, weight, discordant = _cells(dx, dy, n)
    return rank_figures(dx.counts, dy.counts, cell_x, cell_y, weight, discordant)


def rank_figures(
    counts_x: np.ndarray,
    counts_y: np.ndarray,
    cell_x: np.ndarray,
    cell_y: np.ndarray,
    weight: np.ndarray,
    discordant: int,
) -> Pooled:
    """Pooled from the items per value of each side (zeros allowed), the occupied (x, y) cells with their
    counts and the discordant pairs; both sides must hold two values or more."""
    n = int(counts_x.sum())
    tx, ty = tied_pairs(counts_x), tied_pairs(counts_y)
    joint = tied_pairs(weight)
    rho = _spearman(cell_x, cell_y, weight, counts_x, counts_y, n)
    total = n * (n - 1) // 2
    # scipy.stats.kendalltau's own arithmetic, so equal counts give the same float.
    tau = (total - tx - ty + joint - 2 * discordant) / np.sqrt(total - tx) / np.sqrt(total - ty)
    return Pooled(n, tx, ty, min(1.0, max(-1.0, rho)), min(1.0, max(-1.0, float(tau))))


def _centred_ranks(counts: np.ndarray, n: int) -> np.ndarray:
    """Each value's average rank minus the mean rank: halves of integers, exact in float64."""
    ends = np.cumsum(counts)
    return (2 * ends - counts - n) / 2.0


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Every value's average rank from 1 (ties share their mean rank), compared at DECIMALS places."""
    d = dense(values)
    n = len(values)
    return _centred_ranks(d.counts, n)[d.codes] + (n + 1) / 2.0


def _spearman(
    cell_x: np.ndarray,
    cell_y: np.ndarray,
    weight: np.ndarray,
    counts_x: np.ndarray,
    counts_y: np.ndarray,
    n: int,
) -> float:
    """Pearson's r of the average ranks, summed over occupied cells instead of over items."""
    rx, ry = _centred_ranks(counts_x, n), _centred_ranks(counts_y, n)
    sxy = float(np.dot(weight * rx[cell_x], ry[cell_y]))
    sxx, syy = float(np.dot(counts_x, rx * rx)), float(np.dot(counts_y, ry * ry))
    return sxy / np.sqrt(sxx * syy)


def _cells(dx: Dense, dy: Dense, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The occupied (x rank, y rank) cells with their item counts, and the discordant pairs."""
    cells = dx.distinct * dy.distinct
    if cells <= min(TABLE_CELLS, TABLE_PER_ITEM * max(n, 4096)):
        return _from_table(dx, dy)
    # Sort on the side with more values and count inversions of the other: fewer bits, fewer levels.
    outer, inner, swapped = (dx, dy, False) if dx.distinct >= dy.distinct else (dy, dx, True)
    key = outer.codes.astype(np.int64)
    key *= inner.distinct
    key += inner.codes
    key.sort()  # by (outer, inner): a run of equal keys is one occupied cell
    # In this order a pair is discordant exactly when its inner ranks are inverted (equal outer
    # ranks come with ascending inner ranks).
    discordant = inversions(np.remainder(key, inner.distinct).astype(small_int(inner.distinct)))
    starts = np.flatnonzero(np.diff(key))
    starts += 1
    starts = np.concatenate(([0], starts))
    weight = np.diff(np.append(starts, n))
    cell_out, cell_in = np.divmod(key[starts], inner.distinct)
    del key, starts
    return (cell_in, cell_out, weight, discordant) if swapped else (cell_out, cell_in, weight, discordant)


def small_int(limit: int) -> type:
    """The narrowest signed integer type holding 0..limit: less memory to stream at every level."""
    return next(t for t in (np.int8, np.int16, np.int32, np.int64) if limit <= np.iinfo(t).max)


def _from_table(dx: Dense, dy: Dense) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Occupied cells and discordant pairs from the dense x-by-y count table."""
    key = dx.codes.astype(np.int64)
    key *= dy.distinct
    key += dy.codes
    table = np.bincount(key, minlength=dx.distinct * dy.distinct).reshape(dx.distinct, dy.distinct)
    del key
    cell_x, cell_y = np.nonzero(table)
    return cell_x, cell_y, table[cell_x, cell_y], table_discordant(table)


def table_discordant(table: np.ndarray) -> int:
    """Discordant pairs of the items counted in an x-by-y table."""
    lower_x = np.cumsum(table, axis=0) - table  # per cell: items with a lower x and the same y
    # ... summed over every higher y: the items that form a discordant pair with each item of the cell
    discordant_with = np.cumsum(lower_x[:, ::-1], axis=1)[:, ::-1] - lower_x
    return int((table * discordant_with).sum())


def inversions(values: np.ndarray) -> int:
    """Pairs i < j with values[i] > values[j] (values >= 0), by MSD radix on the bits of the values.

    Level by level from the top bit the items stay stably sorted by the bits above the level, so a
    group of equal upper bits is contiguous; in it, every 1 before a 0 on the level's bit is an
    inversion, and no inversion is counted at two levels. A level is a few O(n) passes (a cumsum, a
    stable partition by the bit); there are log2(max value) levels, 4 for 15 human score levels.
    """
    n = len(values)
    total = 0
    position = np.arange(n, dtype=np.int64)
    where_to = np.empty(n, dtype=np.int64)
    ends = np.array([n], dtype=np.int64)  # end of every group (indexed by the upper bits' value)
    for level in range(int(values.max()).bit_length() - 1, -1, -1):
        key = values >> level  # the group (upper bits) and the level's bit, as one class index
        bit = (key & 1).astype(bool)
        ones = np.cumsum(bit, dtype=np.int64)  # 1s up to and including each position
        starts = np.concatenate(([0], ends[:-1]))
        ones_before = _upto(ones, starts)
        zeros = (ends - starts) - (_upto(ones, ends) - ones_before)
        ones_total = int(ones[-1])
        # Each 0 counts the 1s before it in its group: all 1s before it, less those of earlier groups.
        total += int(ones.sum()) - ones_total * (ones_total + 1) // 2 - int(np.dot(zeros, ones_before))
        if level == 0:
            break
        # Stable partition of every group, 0s first. A 0 goes to (0s before it) + (1s before its
        # group); a 1 to (1s before it) + (0s up to its group's end).
        offset = np.empty(2 * len(ends), dtype=np.int64)
        offset[0::2] = ones_before
        offset[1::2] = starts + zeros - 1 - ones_before
        np.subtract(position, ones, out=where_to)
        np.copyto(where_to, ones, where=bit)
        where_to += offset[key]
        del key, bit, ones
        moved = np.empty_like(values)
        moved[where_to] = values
        values = moved
        ends = np.column_stack((starts + zeros, ends)).ravel()  # the classes are next level's groups
    return total


def _upto(cumulative: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """cumulative[end - 1] for every end (0 where end is 0): the running count before `end`."""
    return np.where(ends > 0, cumulative[ends - 1], 0)
