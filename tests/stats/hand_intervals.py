"""The workbench's 95% bootstrap interval, computed by hand from resampled values (for the tests)."""

from __future__ import annotations

import numpy as np
import scipy.stats as st
from scipy.optimize import brentq


def hall_root(q: float, skew: float) -> float:
    """T with g(T) = q for Hall's g(T) = T + a T^2 + a^2 T^3 / 3 + a / 2, a = skew / 3, found numerically."""
    a = float(np.clip(skew, -3, 3)) / 3
    return brentq(lambda t: t + a * t**2 + a**2 * t**3 / 3 + a / 2 - q, -100, 100, xtol=1e-14)


def studentized(values, estimate: float, units: int, bounded: bool = True) -> list[float]:
    """estimate - g^-1(+-t(units-1)) * sqrt(units/(units-1)) * SD(values), g Hall's transformation with the values'
    skewness, clipped to [-1, 1] (a share: [0, 1]) and holding the estimate."""
    values = np.asarray(values, dtype=float)
    q = st.t.ppf(0.975, units - 1)
    se = values.std(ddof=1) * np.sqrt(units / (units - 1))
    skew = 0.0 if values.std() == 0 else st.skew(values)
    low, high = estimate - se * hall_root(q, skew), estimate - se * hall_root(-q, skew)
    bottom = -1.0 if bounded else 0.0
    return [max(bottom, min(low, estimate)), min(1.0, max(high, estimate))]
