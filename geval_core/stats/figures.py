"""The figures of one reading (correlations, tie rates, kappas) from per-group stats and a confusion table."""

from __future__ import annotations

import numpy as np

from .kappa import KAPPA_WEIGHTS, kappa_from_confusion, kappa_key
from .kernels import GroupStats


def mean_used(values: np.ndarray, use: np.ndarray) -> float | None:
    """The mean of the values where `use` is true; None when it is true nowhere."""
    return float(np.mean(values[use])) if use.any() else None


def figures(gs: GroupStats, confusion: np.ndarray) -> dict[str, float | None]:
    """Spearman, Kendall, Pearson (averaged over used groups), pooled tie rates and the three kappas."""
    pairs = float(gs.pairs.sum())
    return {
        "spearman": mean_used(gs.spearman, gs.use),
        "kendall": mean_used(gs.kendall, gs.use),
        "pearson": mean_used(gs.pearson, gs.use),
        "tie_rate": float(gs.tied_x.sum()) / pairs if pairs else None,
        "human_tie_rate": float(gs.tied_y.sum()) / pairs if pairs else None,
        **{kappa_key(w): kappa_from_confusion(confusion, w) for w in KAPPA_WEIGHTS},
    }
