"""Prediction-powered inference (Angelopoulos et al., Science 2023) for the mean human score.

The judge scores all N items; people rate n of them. Classic PPI corrects the judge's mean on the
unrated items by the judge's average error on the rated ones:

    estimate = mean(judge on unrated) + mean(human - judge on rated)
    variance = var(judge on unrated) / N_u + var(human - judge on rated) / n

PPI++ (Angelopoulos, Duchi and Zrnic, 2023) weighs the judge by lambda = Cov(human, judge) /
((1 + n / N_u) Var(judge)) on the rated items, clipped to [0, 1], which minimises the variance: lambda=0
is the human-only mean, lambda=1 classic PPI, so PPI++ is never much wider than either.
Intervals are normal (z = 1.96), as in the paper.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .paired import to_floats

METHODS = ("classic", "ppi++")
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """A corrected estimate of the mean human score with its 95% interval, beside the naive means."""

    method: str
    estimate: float
    ci: list[float]
    se: float
    judge_mean: float | None  # judge on every scored item
    human_mean: float | None  # people on the rated items
    human_ci: list[float] | None  # the human-only mean's own 95% interval (the width PPI must beat)
    n_rated: int
    n_total: int
    lam: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _split(judge: Iterable[float | None], human: Iterable[float | None]) -> tuple[np.ndarray, ...]:
    """(judge on rated, human on rated, judge on unrated); items without a judge score are dropped."""
    x, y = to_floats(judge), to_floats(human)
    if len(x) != len(y):
        raise ValueError(f"judge ({len(x)}) and human ({len(y)}) must have the same length")
    scored = np.isfinite(x)
    rated = scored & np.isfinite(y)
    return x[rated], y[rated], x[scored & ~rated]


def _var(values: np.ndarray) -> float:
    return float(np.var(values, ddof=1)) if len(values) > 1 else 0.0


def power_lambda(judge_rated: np.ndarray, human_rated: np.ndarray, n_unrated: int) -> float:
    """PPI++'s variance-minimising weight of the judge for a mean, clipped to [0, 1]."""
    var = _var(judge_rated)
    if var == 0 or n_unrated == 0 or len(judge_rated) < 2:
        return 0.0
    cov = float(np.cov(human_rated, judge_rated, ddof=1)[0, 1])
    return float(np.clip(cov / ((1 + len(judge_rated) / n_unrated) * var), 0.0, 1.0))


def ppi_parts(judge_rated: np.ndarray, human_rated: np.ndarray, judge_unrated: np.ndarray,
              lam: float) -> tuple[float, float]:
    """(estimate, variance) of the mean for a given judge weight lam (1 = classic PPI)."""
    n, m = len(human_rated), len(judge_unrated)
    rectifier = human_rated - lam * judge_rated
    unrated_mean = float(judge_unrated.mean()) if m else 0.0
    estimate = lam * unrated_mean + float(rectifier.mean())
    variance = _var(rectifier) / n + (lam**2 * _var(judge_unrated) / m if m else 0.0)
    return estimate, variance


def ppi_mean(judge: Iterable[float | None], human: Iterable[float | None], method: str = "ppi++") -> Estimate:
    """The PPI estimate of the mean human score: judge on all items, human where rated (None elsewhere)."""
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    xr, yr, xu = _split(judge, human)
    if len(yr) < 2:
        raise InputError(f"PPI needs at least 2 items with both a judge score and a human rating (got {len(yr)})")
    lam = 1.0 if method == "classic" else power_lambda(xr, yr, len(xu))
    if not len(xu):  # nothing unrated: the judge adds nothing, the estimate is the human mean
        lam = 0.0
    estimate, variance = ppi_parts(xr, yr, xu, lam)
    se = float(np.sqrt(variance))
    human_se = float(np.sqrt(_var(yr) / len(yr)))
    all_judge = np.concatenate([xr, xu])
    return Estimate(method, estimate, [estimate - Z95 * se, estimate + Z95 * se], se,
                    float(all_judge.mean()), float(yr.mean()),
                    [float(yr.mean()) - Z95 * human_se, float(yr.mean()) + Z95 * human_se],
                    len(yr), len(all_judge), lam)


def ppi_difference(a: Estimate, b: Estimate) -> dict[str, Any]:
    """A minus B for two estimates made on disjoint items (independent: their variances add)."""
    diff = a.estimate - b.estimate
    se = float(np.hypot(a.se, b.se))
    naive = None if a.judge_mean is None or b.judge_mean is None else a.judge_mean - b.judge_mean
    human = None if a.human_mean is None or b.human_mean is None else a.human_mean - b.human_mean
    return {"estimate": diff, "ci": [diff - Z95 * se, diff + Z95 * se], "se": se, "judge_mean": naive,
            "human_mean": human, "n_rated": a.n_rated + b.n_rated, "n_total": a.n_total + b.n_total,
            "method": a.method}


def hold_out(human: list[float | None], keep: int | None, seed: int = 0) -> list[float | None]:
    """Keep `keep` randomly chosen human ratings and blank the rest (how many ratings would PPI need?)."""
    rated = [i for i, v in enumerate(human) if v is not None]
    if keep is None or keep >= len(rated):
        return list(human)
    chosen = set(np.random.default_rng(seed).choice(rated, size=keep, replace=False).tolist())
    return [v if i in chosen else None for i, v in enumerate(human)]
