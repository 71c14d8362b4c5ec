"""Ties item by item: how many other items share each item's score, and the largest clusters of tied items.

The per-item view of `tie_rate`: summed over items, `tied_others` counts every tied pair twice, so
sum(tied_others) / (n * (n - 1)) is the run's tie rate (within groups: sum(tied_in_group) over the sum of
size * (size - 1)). Scores are compared after rounding to `DECIMALS` places, as everywhere in stats.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from ..judgment import single_rating
from .kernels import DECIMALS, tie_blocks
from .onepass import dense
from .paired import group_codes, to_floats


def _others(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """For every item, the number of other items of its group with the same value."""
    b = tie_blocks(values, codes, n_groups)
    out = np.empty(len(values), dtype=np.int64)
    out[b.order] = b.block_len[b.block_id] - 1
    return out


def _spread(others: np.ndarray, sizes: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts (-1 where the score is missing) and shares of the possible partners (NaN when none)."""
    counts = np.full(len(valid), -1, dtype=np.int64)
    counts[valid] = others
    shares = np.full(len(valid), np.nan)
    shares[valid] = np.where(sizes > 1, others / np.maximum(sizes - 1, 1), np.nan)
    return counts, shares


def item_ties(
    scores: Iterable[float | None], groups: Sequence[Hashable] | None = None
) -> dict[str, np.ndarray]:
    """Per item: `tied_others` and `tied_share` over the run; with groups also `tied_in_group`, `group_share`.

    A count is the number of OTHER items with an equal score (-1 for an item without a score); a share
    divides it by the number of other scored items (of the run, or of the item's group; NaN if none).
    """
    x = to_floats(scores)
    if groups is not None and len(groups) != len(x):
        raise ValueError(f"scores ({len(x)}) and groups ({len(groups)}) must have the same length")
    valid = np.isfinite(x)
    values = x[valid]
    n_valid = len(values)
    d = dense(values)  # over the whole run a count per distinct score is enough: no sort
    others = d.counts[d.codes] - 1
    out: dict[str, np.ndarray] = {}
    out["tied_others"], out["tied_share"] = _spread(others, np.full(n_valid, n_valid), valid)
    if groups is not None:
        codes, n_groups = group_codes(groups, valid)
        sizes = np.bincount(codes, minlength=n_groups)[codes]
        in_group = _others(np.round(values, DECIMALS), codes, n_groups)
        out["tied_in_group"], out["group_share"] = _spread(in_group, sizes, valid)
    return out


def tie_clusters(
    scores: Iterable[float | None], human: Iterable[float | None] | None = None, top: int = 10
) -> list[dict[str, Any]]:
    """The `top` largest sets (2+ items) sharing one score: {score, size, human_distinct}, largest first.

    human_distinct is the number of distinct human ratings in the set (missing ratings not counted), or
    None without human ratings: a large cluster that people rate differently is a tie that hides ranks.
    """
    x = to_floats(scores)
    h = None if human is None else to_floats(human)
    if h is not None and len(h) != len(x):
        raise ValueError(f"scores ({len(x)}) and human ({len(h)}) must have the same length")
    valid = np.isfinite(x)
    rounded = np.round(x[valid], DECIMALS)
    b = tie_blocks(rounded, np.zeros(len(rounded), dtype=np.int64), 1)
    block_score = rounded[b.order][b.block_start]
    tied = np.flatnonzero(b.block_len >= 2)
    pick = tied[np.lexsort((block_score[tied], -b.block_len[tied]))][: max(int(top), 0)]
    distinct = None
    if h is not None:
        hv = np.round(h[valid], DECIMALS)
        item_block = np.empty(len(rounded), dtype=np.int64)
        item_block[b.order] = b.block_id
        rated = np.isfinite(hv)
        distinct = tie_blocks(hv[rated], item_block[rated], len(b.block_start)).distinct
    return [
        {
            "score": float(block_score[k]),
            "size": int(b.block_len[k]),
            "human_distinct": None if distinct is None else int(distinct[k]),
        }
        for k in pick
    ]


def _counts(values: np.ndarray) -> list[int | None]:
    return [None if v < 0 else int(v) for v in values.tolist()]


def _shares(values: np.ndarray) -> list[float | None]:
    return [None if v != v else float(v) for v in values.tolist()]  # NaN -> None


def reply_agreement(row: dict[str, Any]) -> float | None:
    """Sampling: the share of pairs of parsed replies that gave the same rating (None below 2 replies)."""
    parsed = int(row.get("parsed") or 0)
    if row.get("mode") != "sampling" or parsed < 2:
        return None
    counts = [round(share * parsed) for share in (row.get("distribution") or {}).values()]
    return sum(c * (c - 1) for c in counts) / (parsed * (parsed - 1))


def judgment_ties(rows: list[dict[str, Any]], groups: Sequence[Hashable] | None = None) -> dict[str, list]:
    """Per judgment row: ties of its weighted and its single (top-token) rating, in the run and its group.

    Columns: ties_weighted / ties_top (other items with the same score; None without a score), their
    shares of the other scored items, the same within the item's group when groups are given, and
    reply_agreement for sampling items.
    """
    out: dict[str, list] = {}
    for name, scores in (
        ("weighted", [r.get("score") for r in rows]),
        ("top", [single_rating(r) for r in rows]),
    ):
        ties = item_ties(scores, groups)
        out[f"ties_{name}"] = _counts(ties["tied_others"])
        out[f"ties_{name}_share"] = _shares(ties["tied_share"])
        if groups is not None:
            out[f"ties_{name}_in_group"] = _counts(ties["tied_in_group"])
            out[f"ties_{name}_group_share"] = _shares(ties["group_share"])
    out["reply_agreement"] = [reply_agreement(r) for r in rows]
    return out


def with_ties(rows: list[dict[str, Any]], groups: Sequence[Hashable] | None = None) -> list[dict[str, Any]]:
    """The rows with `judgment_ties` columns added (for exports and tables)."""
    columns = judgment_ties(rows, groups)
    return [{**row, **{name: values[i] for name, values in columns.items()}} for i, row in enumerate(rows)]
