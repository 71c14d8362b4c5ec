"""How many independent judges a panel's members are worth, from the correlation of their errors against people.

A member's error on an item is its score minus people's rating. When K members' errors have about equal spread
and correlate rho on average (pairwise, Pearson), the mean of their scores errs as much as the mean of
K_eff = K / (1 + (K - 1) rho) independent judges would (Kish's design effect for an average): nine members at
rho = 0.4 are worth about two. Errors that do not correlate give K, errors that move together give 1. The
participation ratio of the error correlations' eigenvalues, (sum l)^2 / sum l^2, is given beside it: the number
of independent directions the errors take, which does not assume the correlations are alike.

The interval resamples groups (documents) when the items have them, items otherwise, and is made on Fisher's z of
rho (t over the resampled units, their small-sample factor put back), then mapped to K_eff; fewer than
MIN_UNITS units give none. Its coverage is checked by simulation (bench/bench_panel_errors.py).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from .bootstrap import MIN_UNITS, t975

__all__ = ["effective_judges", "error_correlations"]

_EDGE = 1 - 1e-9


def error_correlations(errors: np.ndarray) -> np.ndarray:
    """The members' pairwise error correlations (members x members, Pearson)."""
    return np.corrcoef(errors, rowvar=False)


def _mean_rho(errors: np.ndarray) -> float:
    """The average of the correlations between distinct members' errors (NaN when one is constant)."""
    corr = error_correlations(errors)
    k = corr.shape[0]
    return float((corr.sum() - np.trace(corr)) / (k * (k - 1)))


def _k_eff(rho: float, k: int) -> float | None:
    """K / (1 + (K - 1) rho); None (unbounded) when the errors cancel out entirely."""
    denominator = 1 + (k - 1) * rho
    return k / denominator if denominator > 0 else None


def _participation(errors: np.ndarray) -> float:
    values = np.clip(np.linalg.eigvalsh(error_correlations(errors)), 0, None)
    return float(values.sum() ** 2 / (values**2).sum())


def _interval(
    errors: np.ndarray, codes: np.ndarray, rho: float, resamples: int, seed: int
) -> list[float] | None:
    """The 95% interval of rho: Fisher z of the resampled units' rho, t over them, the small-sample factor back."""
    units = int(codes.max()) + 1
    if units < MIN_UNITS or resamples < 2:
        return None
    members = [np.flatnonzero(codes == u) for u in range(units)]
    rng = np.random.default_rng(seed)
    z = []
    for _ in range(resamples):
        pick = np.concatenate([members[u] for u in rng.integers(0, units, units)])
        value = _mean_rho(errors[pick])
        if np.isfinite(value):
            z.append(math.atanh(max(-_EDGE, min(_EDGE, value))))
    if len(z) < 0.95 * resamples:
        return None
    half = t975(units - 1) * math.sqrt(units / (units - 1)) * float(np.std(z, ddof=1))
    centre = math.atanh(max(-_EDGE, min(_EDGE, rho)))
    return [math.tanh(centre - half), math.tanh(centre + half)]


def effective_judges(
    members: Mapping[str, Sequence[float]],
    human: Sequence[float],
    groups: Sequence[Hashable] | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The members' error correlations against people, their mean, the effective number of independent judges
    (with a 95% interval) and the participation ratio, on the items every member and people scored."""
    names = list(members)
    if len(names) < 2:
        raise InputError("an effective number of judges needs at least two members", field="members")
    scores = np.column_stack([np.asarray(members[n], dtype=float) for n in names])
    h = np.asarray(human, dtype=float)
    keep = np.isfinite(scores).all(axis=1) & np.isfinite(h)
    errors = scores[keep] - h[keep, None]
    if len(errors) < 3 or np.any(errors.std(axis=0) == 0):
        raise InputError("the members' errors need at least 3 items and some spread each", field="members")
    labels = [str(g) for g, k in zip(groups, keep, strict=True) if k] if groups is not None else None
    codes = (
        np.unique(np.asarray(labels), return_inverse=True)[1]
        if labels is not None
        else np.arange(len(errors))
    )
    k, rho = len(names), _mean_rho(errors)
    ci = _interval(errors, codes, rho, resamples, seed)
    corr = error_correlations(errors)
    return {
        "members": names,
        "items": int(len(errors)),
        "units": int(codes.max()) + 1,
        "resampled": "groups" if labels is not None else "items",
        "error_correlations": {
            a: {b: float(corr[i, j]) for j, b in enumerate(names)} for i, a in enumerate(names)
        },
        "mean_error_correlation": rho,
        "mean_error_correlation_interval": ci,
        "effective_judges": _k_eff(rho, k),
        # rho's upper end gives K_eff's lower end
        "effective_judges_interval": None if ci is None else [_k_eff(ci[1], k), _k_eff(ci[0], k)],
        "participation_ratio": _participation(errors),
    }
