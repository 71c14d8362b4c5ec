"""Cohen's kappa (unweighted, linear, quadratic): scale points, weights, confusion tables, the scale."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..types import Scale
from .paired import pair

KAPPA_WEIGHTS = (None, "linear", "quadratic")
# A 0-100 scale at most: wider spans (unbounded scores) get no kappa rather than a huge table.
MAX_KAPPA_POINTS = 101


def kappa_key(weights: str | None) -> str:
    """The figure name of a kappa: "kappa", "kappa_linear" or "kappa_quadratic"."""
    return "kappa" if weights is None else f"kappa_{weights}"


def to_points(values: np.ndarray, scale: Scale) -> np.ndarray:
    """Round to the nearest scale point (halves up) and clip into the scale; 0-based category index."""
    return (np.clip(np.floor(values + 0.5), scale.min, scale.max) - scale.min).astype(np.int64)


def nearest_point(value: float, scale: Scale) -> int:
    """One value's scale point by the same rule: halves up (4.5 -> 5, -1.5 -> -1), clipped into the scale."""
    return int(min(max(math.floor(value + 0.5), scale.min), scale.max))


def kappa_weights(k: int, weights: str | None) -> np.ndarray:
    """The k x k disagreement weights: 0/1 (None), |i-j|/(k-1) ("linear") or its square ("quadratic")."""
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j) / (k - 1)
    if weights == "quadratic":
        return ((i - j) / (k - 1)) ** 2
    raise ValueError(f"kappa weights must be None, 'linear' or 'quadratic', got {weights!r}")


def kappa_from_confusion(confusion: np.ndarray, weights: str | None = None) -> float | None:
    """Cohen's kappa from a k x k table (rows judge, columns human); None when undefined (or one item)."""
    k, n = confusion.shape[0], confusion.sum()
    if k < 2 or n < 2:  # one item: its expected table is itself, so kappa is 0 by construction, not data
        return None
    w = kappa_weights(k, weights)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / n
    denominator = float((w * expected).sum())
    return None if denominator == 0 else 1.0 - float((w * confusion).sum()) / denominator


def confusions(x: np.ndarray, y: np.ndarray, scale: Scale, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """One k x k table per group (groups x k x k); 1 x 1 tables, where kappa is undefined, on too wide a scale."""
    k = scale.max - scale.min + 1
    if k > MAX_KAPPA_POINTS:
        return np.zeros((n_groups, 1, 1), dtype=np.int64)
    cells = (codes * k + to_points(x, scale)) * k + to_points(y, scale)
    return np.bincount(cells, minlength=n_groups * k * k).reshape(n_groups, k, k)


def confusion(x: np.ndarray, y: np.ndarray, scale: Scale) -> np.ndarray:
    """The pooled k x k table of judge x against human y (rows judge, columns human)."""
    return confusions(x, y, scale, np.zeros(len(x), dtype=np.int64), 1)[0]


def cohen_kappa(
    judge: Iterable[float | None], human: Iterable[float | None], scale: Scale, weights: str | None = None
) -> float | None:
    """Cohen's kappa (unweighted, linear or quadratic) after rounding both sides to scale points."""
    p = pair(judge, human)
    return kappa_from_confusion(confusion(p.x, p.y, scale), weights)


def infer_scale(*arrays: np.ndarray) -> Scale:
    """The integer scale spanning the data (floor of the lowest value to ceil of the highest)."""
    values = np.concatenate([a for a in arrays if len(a)]) if any(len(a) for a in arrays) else np.zeros(1)
    return Scale(int(math.floor(values.min())), int(math.ceil(values.max())))
