"""How far scores and rankings move when the rubric's form changes: one item's score under the original rubric
against its score under a variant (mapped back onto the original scale), over the items scored under both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .agreement import kendall, spearman, tie_rate
from .paired import to_floats


def score_moves(
    original: Sequence[float | None],
    variant: Sequence[float | None],
    human: Sequence[float | None] | None = None,
) -> dict[str, Any]:
    """Mean absolute and signed change (variant minus original), the largest change, Spearman and Kendall tau-b of
    the two scorings (rank movement) with their tie rates; with `human`, each scoring's Spearman with people on
    the items all three have."""
    x, y = to_floats(original), to_floats(variant)
    both = np.isfinite(x) & np.isfinite(y)
    change = y[both] - x[both]
    out: dict[str, Any] = {
        "items": int(both.sum()),
        "mean_abs_change": float(np.abs(change).mean()) if change.size else None,
        "mean_signed_change": float(change.mean()) if change.size else None,
        "max_abs_change": float(np.abs(change).max()) if change.size else None,
        "spearman": spearman(x[both], y[both]),
        "kendall": kendall(x[both], y[both]),
        "tie_rate_original": tie_rate(x[both]),
        "tie_rate_variant": tie_rate(y[both]),
    }
    if human is not None:
        h = to_floats(human)
        rated = both & np.isfinite(h)
        out.update(
            human_items=int(rated.sum()),
            human_spearman_original=spearman(x[rated], h[rated]),
            human_spearman_variant=spearman(y[rated], h[rated]),
        )
    return out


def top_changes(original: Sequence[float | None], variant: Sequence[float | None]) -> dict[str, Any]:
    """How many items' most likely rating differs between the two scorings, and the share of those with both."""
    pairs = [(a, b) for a, b in zip(original, variant, strict=True) if a is not None and b is not None]
    changed = sum(1 for a, b in pairs if round(a, 6) != round(b, 6))
    return {
        "top_items": len(pairs),
        "top_changed": changed,
        "top_changed_share": changed / len(pairs) if pairs else None,
    }


def top_rating(distribution: dict[int, float] | None, stored: float | None = None) -> float | None:
    """The most likely rating: the stored one (log-probabilities), else the distribution's mode (sampled replies;
    a tie goes to the lower rating), else None."""
    if stored is not None:
        return float(stored)
    if not distribution:
        return None
    return float(max(sorted(distribution), key=lambda r: distribution[r]))
