"""The tests' independent reference for the group-level reading: scipy per group, averaged by hand."""

from __future__ import annotations

import numpy as np
import scipy.stats as st


def grouped_by_scipy(x: np.ndarray, y: np.ndarray, groups: list[str]) -> dict:
    """scipy within every group, groups with a constant side skipped, plain average; pooled ties of x."""
    rhos, taus, skipped, tied, pairs = [], [], 0, 0, 0
    for group in sorted(set(groups)):
        idx = [i for i, g in enumerate(groups) if g == group]
        gx, gy = x[idx], y[idx]
        _, counts = np.unique(np.round(gx, 6), return_counts=True)
        tied += int((counts * (counts - 1) // 2).sum())
        pairs += len(idx) * (len(idx) - 1) // 2
        if np.ptp(gx) == 0 or np.ptp(gy) == 0:
            skipped += 1
            continue
        rhos.append(st.spearmanr(gx, gy).statistic)
        taus.append(st.kendalltau(gx, gy).statistic)
    return {
        "spearman": float(np.mean(rhos)),
        "kendall": float(np.mean(taus)),
        "groups": len(rhos),
        "skipped": skipped,
        "tie_rate": tied / pairs,
    }
