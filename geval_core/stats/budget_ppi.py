"""How many more human ratings for the PPI estimate of the mean human rating (stats.ppi) to reach a target
interval width, planned from a pilot: the judge's scores on N items, people's ratings on n0 of them.

The estimate's standard error at n rated of the N judged items is the pilot's scaled by
var(h - l j) / n + l^2 var(j) / (N - n) against the same at n0, with PPI++'s weight l re-set for n (so what the
pilot's error holds beyond independent items, its groups, is carried along). The rectifier's variance on n rated
items is not known yet: its log is about normal around the pilot's, with variance k (n - n0) / (n n0), k the
pilot rectifier's kurtosis less one (at least 2, a normal's). The plan is the least n whose interval is at most
the target wide with the asked chance (the assurance), never below the rated items PPI needs for an interval at
all (stats.ppi.MIN_RATED); none when even rating every judged item would not do, with the ratings that would do
were there more judged items.

Checked against the workbench's own intervals by simulation (bench/bench_budget.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .bootstrap import t975
from .budget import check_target, least_size, normal_cdf, spread_tau
from .paired import to_floats
from .ppi import MIN_RATED, ppi_mean

__all__ = ["ppi_plan"]


def _moments(judge_rated: np.ndarray, human_rated: np.ndarray, judge_all: np.ndarray) -> dict[str, float]:
    return {
        "var_h": float(np.var(human_rated, ddof=1)),
        "var_j": float(np.var(judge_rated, ddof=1)),
        "cov": float(np.cov(human_rated, judge_rated, ddof=1)[0, 1]),
        "var_j_all": float(np.var(judge_all, ddof=1)),
    }


def _weight(method: str, m: dict[str, float], n: int, n_unrated: int | None) -> float:
    """The judge's weight at n rated: 1 (classic), PPI++'s variance-minimising one, 0 with nothing unrated
    (n_unrated None: unlimited)."""
    if n_unrated is not None and n_unrated <= 0:
        return 0.0
    if method == "classic":
        return 1.0
    if m["var_j"] == 0:
        return 0.0
    shrink = 1 + (n / n_unrated if n_unrated else 0.0)
    return float(np.clip(m["cov"] / (shrink * m["var_j"]), 0.0, 1.0))


def _rect_var(m: dict[str, float], lam: float) -> float:
    return max(m["var_h"] - 2 * lam * m["cov"] + lam**2 * m["var_j"], 1e-12)


def _judge_part(m: dict[str, float], lam: float, n_unrated: int | None) -> float:
    """The unrated items' part of the estimate's variance (none when they are unlimited or none are left)."""
    return lam**2 * m["var_j_all"] / n_unrated if n_unrated else 0.0


class _Model:
    """The estimate's variance as a function of the rated items, carried from the pilot's error."""

    def __init__(self, judge: np.ndarray, human: np.ndarray, method: str, clusters: list[Any] | None) -> None:
        scored = np.isfinite(judge)
        rated = scored & np.isfinite(human)
        self.method, self.n0, self.total = method, int(rated.sum()), int(scored.sum())
        self.pilot = ppi_mean(judge, human, method, clusters)
        self.m = _moments(judge[rated], human[rated], judge[scored])
        lam = _weight(method, self.m, self.n0, self.total - self.n0)
        model0 = _rect_var(self.m, lam) / self.n0 + _judge_part(self.m, lam, self.total - self.n0)
        self.carry = self.pilot.se**2 / model0 if model0 > 0 else 1.0  # groups, which the pilot's error holds
        dev = human[rated] - lam * judge[rated]
        dev = dev - dev.mean()
        self.kurtosis_less_one = float(np.mean(dev**4) / np.mean(dev**2) ** 2) - 1 if np.any(dev) else 2.0
        rated_groups = getattr(self.pilot, "rated_groups", 0) or self.pilot.groups
        self.groups_per_rating = rated_groups / self.n0 if self.pilot.groups else 0.0

    def df(self, n: int) -> int:
        """The interval's degrees of freedom at n rated: rated items, or the groups holding a rating."""
        if not self.pilot.groups:
            return n - 1
        return max(min(self.pilot.groups, int(self.groups_per_rating * n)), 2) - 1

    def room(self, n: int, width: float, unlimited: bool = False) -> tuple[float, float]:
        """(the largest rectifier variance at n rated whose interval is at most `width` wide, the pilot's
        rectifier variance), both for the weight PPI++ takes at n."""
        unrated = None if unlimited else self.total - n
        lam = _weight(self.method, self.m, n, unrated)
        allowed = (width / (2 * t975(self.df(n)))) ** 2 / self.carry - _judge_part(self.m, lam, unrated)
        return allowed * n, _rect_var(self.m, lam)

    def width(self, n: int, unlimited: bool = False) -> float:
        """The interval's width at n rated, at the pilot's moments."""
        unrated = None if unlimited else self.total - n
        lam = _weight(self.method, self.m, n, unrated)
        var = self.carry * (_rect_var(self.m, lam) / n + _judge_part(self.m, lam, unrated))
        return 2 * t975(self.df(n)) * math.sqrt(var)

    def chance(self, width: float, unlimited: bool = False) -> Callable[[int], float]:
        """chance(n): that the interval on n rated items is at most `width` wide."""

        def chance(n: int) -> float:
            if not unlimited and n > self.total:
                return 0.0
            room, rect = self.room(n, width, unlimited)
            if room <= 0:
                return 0.0
            tau = spread_tau(self.kurtosis_less_one, self.n0, n)
            if tau == 0:
                return 1.0 if rect <= room else 0.0
            return normal_cdf((math.log(room) - math.log(rect)) / tau)

        return chance


def ppi_plan(
    judge: Iterable[float | None],
    human: Iterable[float | None],
    width: float,
    method: str = "ppi++",
    assurance: float = 0.8,
    clusters: list[Any] | None = None,
) -> dict[str, Any]:
    """The rated items the PPI estimate's interval needs for `width`, among the judged ones (`human` None where
    not rated yet); with `clusters` (each item's group) the pilot's cluster-robust error is carried along."""
    check_target(width, assurance)
    model = _Model(to_floats(judge), to_floats(human), method, clusters)
    n0, total, pilot = model.n0, model.total, model.pilot
    start = max(n0, MIN_RATED[method])
    planned = least_size(model.chance(width), start, assurance, cap=total)
    median = least_size(lambda n: 1.0 if model.width(n) <= width else 0.0, start, 0.5, cap=total)
    beyond = None if planned is not None else least_size(model.chance(width, True), start, assurance)
    return {
        "figure": f"PPI ({method}) estimate of the mean human rating",
        "method": method,
        "target_width": width,
        "assurance": assurance,
        "estimate": pilot.estimate,
        "pilot_interval": pilot.ci,
        "pilot_width": None if pilot.ci is None else pilot.ci[1] - pilot.ci[0],
        "pilot_rated": n0,
        "judged": total,
        "planned_rated": planned,
        "further_rated": None if planned is None else planned - n0,
        "median_rated": median,
        "width_at_planned": None if planned is None else model.width(planned),
        "width_all_rated": model.width(total) if total >= start else None,
        "rated_with_more_judged": beyond,
        "lambda": pilot.lam,
        "groups": pilot.groups,
        "warning": pilot.warning,
    }
