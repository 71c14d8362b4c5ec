"""How far a judge's answers on the same items moved between two runs: per item, the total-variation distance
between the two rating distributions, whether the likeliest rating moved, and the score difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..judgment import single_rating

__all__ = ["item_shift", "shift_summary", "tv_distance"]


def tv_distance(p: Mapping[Any, float] | None, q: Mapping[Any, float] | None) -> float | None:
    """Half the summed absolute difference of two rating distributions (0: the same, 1: no rating in common);
    None when either is missing or empty. Ratings are matched by value (1 and "1" are one rating)."""
    if not p or not q:
        return None
    a = {float(k): float(v) for k, v in p.items()}
    b = {float(k): float(v) for k, v in q.items()}
    return 0.5 * sum(abs(a.get(r, 0.0) - b.get(r, 0.0)) for r in set(a) | set(b))


def item_shift(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """One item's move between two judgments: score difference (after - before), TV distance, top rating moved."""
    s0, s1 = before.get("score"), after.get("score")
    t0, t1 = single_rating(dict(before)), single_rating(dict(after))
    return {
        "before": s0,
        "after": s1,
        "difference": None if s0 is None or s1 is None else float(s1) - float(s0),
        "tv": tv_distance(before.get("distribution"), after.get("distribution")),
        "top_before": t0,
        "top_after": t1,
        "top_moved": None if t0 is None or t1 is None else t0 != t1,
    }


def _mean(values: Sequence[float | bool | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def shift_summary(shifts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Over items: how many were compared, the mean TV distance, the share whose top rating moved, the mean and
    mean absolute score difference, and the largest moves (items by |difference|)."""
    diffs = [s["difference"] for s in shifts]
    return {
        "compared": sum(d is not None for d in diffs),
        "mean_tv": _mean([s["tv"] for s in shifts]),
        "top_moved_share": _mean([s["top_moved"] for s in shifts]),
        "mean_difference": _mean(diffs),
        "mean_abs_difference": _mean([abs(d) for d in diffs if d is not None]),
    }
