"""The workbench's 95% bootstrap interval, computed by hand from resampled values (for the tests)."""

from __future__ import annotations

import numpy as np
import scipy.stats as st


def studentized(values, estimate: float, units: int, bounded: bool = True) -> list[float]:
    """estimate +- t(units-1) * sqrt(units/(units-1)) * SD(values), on Fisher's z (arcsin sqrt for a share)."""
    half = st.t.ppf(0.975, units - 1) * np.sqrt(units / (units - 1))
    values = np.asarray(values, dtype=float)
    if not bounded:
        z, centre = np.arcsin(np.sqrt(values)), np.arcsin(np.sqrt(estimate))
        sd = z.std(ddof=1)
        return [np.sin(max(0.0, centre - half * sd)) ** 2, np.sin(min(np.pi / 2, centre + half * sd)) ** 2]
    edge = 1 - 1e-6
    z, centre = np.arctanh(np.clip(values, -edge, edge)), np.arctanh(np.clip(estimate, -edge, edge))
    sd = z.std(ddof=1)
    return [float(np.tanh(centre - half * sd)), float(np.tanh(centre + half * sd))]
