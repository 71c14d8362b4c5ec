"""Judge and human scores as paired float arrays: missing pairs dropped, groups as 0-based codes."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np


def to_floats(values: Iterable[float | None]) -> np.ndarray:
    """A float array of the values, None as NaN."""
    values = values if isinstance(values, np.ndarray) else list(values)
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):  # None among the numbers
        return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def group_codes(groups: Sequence[Hashable] | None, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """0-based group codes of the kept items and the number of groups (one group when ungrouped)."""
    if groups is None:
        return np.zeros(int(keep.sum()), dtype=np.int64), 1
    kept = [g for g, k in zip(groups, keep.tolist(), strict=True) if k]
    # Codes in order of first appearance (the bootstrap draws groups by code); dict.fromkeys and map run
    # in C, where a setdefault per item would run in Python.
    index = {g: code for code, g in enumerate(dict.fromkeys(kept))}
    codes = np.fromiter(map(index.__getitem__, kept), dtype=np.int64, count=len(kept))
    return codes, len(index)


@dataclass(frozen=True)
class Paired:
    """The pairs with both scores, their group codes, and how many pairs were dropped."""

    x: np.ndarray  # judge
    y: np.ndarray  # human
    codes: np.ndarray
    n_groups: int
    missing: int  # pairs dropped because a side had no score


def pair(
    judge: Iterable[float | None], human: Iterable[float | None], groups: Sequence[Hashable] | None = None
) -> Paired:
    """Pair judge and human scores item by item, keeping the items where both are finite."""
    x, y = to_floats(judge), to_floats(human)
    if len(x) != len(y) or (groups is not None and len(groups) != len(x)):
        raise ValueError(f"judge ({len(x)}), human ({len(y)}) and groups must have the same length")
    keep = np.isfinite(x)
    keep &= np.isfinite(y)
    codes, n_groups = group_codes(groups, keep)
    kept = len(codes)
    if kept == len(x):  # nothing missing: no copies (nothing downstream writes into x or y)
        return Paired(x, y, codes, n_groups, 0)
    return Paired(x[keep], y[keep], codes, n_groups, len(x) - kept)
