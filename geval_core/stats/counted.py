"""The pooled rank figures of a bootstrap resample, from a count per item instead of the resample's items.

A resample (of items, or of whole clusters) is a multiset of the sample's items. Laid out once, sorted by
the (x rank, y rank) cell key, the sample answers every resample in O(n) passes with no sort: the counts
per value and per cell are weighted sums over the items, and the discordant pairs are the inversions of
the inner ranks repeated as often as each item was drawn (copies of an item are adjacent and equal, so
they add no inversion). The figures equal pooled() of the resample's items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .onepass import (
    TABLE_CELLS,
    Dense,
    Pooled,
    dense,
    inversions,
    rank_figures,
    small_int,
    table_discordant,
    tied_pairs,
)

__all__ = ["Layout", "layout", "pooled_counted"]


@dataclass(frozen=True)
class Layout:
    """The whole sample's dense ranks and occupied cells, items ordered by cell."""

    dx: Dense
    dy: Dense
    order: np.ndarray  # item indices sorted by (outer rank, inner rank): the side with more values outer
    inner: np.ndarray  # the inner side's ranks in that order
    cell_of: np.ndarray  # per item: the index of its occupied cell
    cell_x: np.ndarray  # per occupied cell: its x rank
    cell_y: np.ndarray  # ... and its y rank


def layout(x: np.ndarray, y: np.ndarray) -> Layout:
    """Rank both sides and sort the items by cell, once for all resamples."""
    dx, dy = dense(x), dense(y)
    outer, inner, swapped = (dx, dy, False) if dx.distinct >= dy.distinct else (dy, dx, True)
    width = max(inner.distinct, 1)  # inner ranks per outer rank in the cell key
    key = outer.codes.astype(np.int64)
    key *= width
    key += inner.codes
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    new_cell = np.empty(len(ordered), dtype=bool)
    new_cell[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_cell[1:])
    cell_of = np.empty(len(ordered), dtype=np.int64)
    cell_of[order] = np.cumsum(new_cell) - 1
    cell_out, cell_in = np.divmod(ordered[new_cell], width)
    cell_x, cell_y = (cell_in, cell_out) if swapped else (cell_out, cell_in)
    ranks: np.ndarray = np.remainder(ordered, width).astype(small_int(width))
    return Layout(dx, dy, order, ranks, cell_of, cell_x, cell_y)


def pooled_counted(lay: Layout, drawn: np.ndarray) -> Pooled:
    """pooled() of the resample that holds item i drawn[i] times (drawn: non-negative integers)."""
    weights = drawn.astype(float)
    counts_x = np.bincount(lay.dx.codes, weights=weights, minlength=lay.dx.distinct).astype(np.int64)
    counts_y = np.bincount(lay.dy.codes, weights=weights, minlength=lay.dy.distinct).astype(np.int64)
    n = int(counts_x.sum())
    if n < 2 or np.count_nonzero(counts_x) < 2 or np.count_nonzero(counts_y) < 2:
        return Pooled(n, tied_pairs(counts_x), tied_pairs(counts_y), float("nan"), float("nan"))
    cells = np.bincount(lay.cell_of, weights=weights, minlength=len(lay.cell_x)).astype(np.int64)
    side = lay.dy.distinct
    if lay.dx.distinct * side <= min(TABLE_CELLS, len(drawn)):  # few values: the x-by-y table is smaller
        table = np.zeros(lay.dx.distinct * side, dtype=np.int64)
        table[lay.cell_x * side + lay.cell_y] = cells
        discordant = table_discordant(table.reshape(lay.dx.distinct, side))
    else:
        discordant = inversions(np.repeat(lay.inner, drawn[lay.order]))
    return rank_figures(counts_x, counts_y, lay.cell_x, lay.cell_y, cells, discordant)
