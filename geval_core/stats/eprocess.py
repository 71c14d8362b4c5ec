"""An anytime-valid test that a judge changed: a conformal test martingale over each anchor item's re-scores.

Null: for every anchor item, the judge's scores of it (the reference run's, then every check's) are exchangeable,
as repeated draws of one unchanged judge are; items are independent. Each new score gets a smoothed conformal
p-value against its own item's earlier scores (ties broken by a uniform draw), which under the null are independent
and uniform (Vovk, Gammerman & Shafer, Algorithmic Learning in a Random World, 2005, ch. 7-8), however many checks
came before. Betting on them gives a nonnegative martingale with mean 1, the e-value; by Ville's inequality it ever
reaches 1/alpha with probability at most alpha, so checking as often as one likes keeps the false-alarm rate.

Why not the plain paired difference (new score minus the reference's) with a betting test: every check reuses the
same reference scores, so their own noise is a fixed offset that later checks keep betting on, and the false alarms
grow with the number of checks (bench/bench_drift.py shows it). A p-value against the item's whole history does not.

Two test martingales, each half a mixture over fixed bet sizes and half an adaptive bet: location (is the new score unusually high, or low, among
its item's scores: a judge that drifted up or down) and spread (is it unusually far from its item's median: a judge
that became noisier; only once an item has two earlier scores). Both read the same scores, so they are split
Bonferroni's way: the e-value is half the larger, and reaching 1/alpha means one of them reached 2/alpha (by Ville,
each with probability at most alpha / 2 under the null).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ALPHA", "LOCATION_BETS", "SPREAD_BETS", "Bets", "Wealth", "bet", "conformal_p", "ons_bet", "step"]

ALPHA = 0.05
LOCATION_BETS = (-0.8, -0.4, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.4, 0.8)  # < 0: bets the scores went down
SPREAD_BETS = (0.05, 0.1, 0.2, 0.4, 0.8)
DECIMALS = 6  # scores equal to 6 decimals are ties (float noise in weighted scores is no difference)


def conformal_p(history: Sequence[float], new: float, u: float, kind: str) -> float:
    """The smoothed conformal p-value of `new` among its item's earlier scores: small when it is unusually high
    (`location`) or unusually far from the median of all of them (`spread`); `u` in [0, 1) breaks ties."""
    bag = np.round(np.append(np.asarray(history, dtype=float), new), DECIMALS)
    if kind == "spread":
        bag = np.round(np.abs(bag - np.median(bag)), DECIMALS)
    elif kind != "location":
        raise ValueError(f"kind is location or spread, got {kind!r}")
    a = bag[-1]
    return float((np.sum(bag > a) + u * np.sum(bag == a)) / len(bag))


def bet(log_wealth: np.ndarray, bets: np.ndarray, p: float) -> np.ndarray:
    """Each bet's log wealth after one p-value: wealth times 1 + bet * (1 - 2p), whose mean is 1 when p is
    uniform (so each bet alone is a test martingale)."""
    return log_wealth + np.log1p(bets * (1.0 - 2.0 * p))


ONS_STEP = 2 / (2 - math.log(3))


def ons_bet(
    state: tuple[float, float, float], p: float, low: float, high: float
) -> tuple[float, float, float]:
    """(log wealth, bet, curvature) after one p-value, the bet chosen by online Newton steps from the earlier ones
    only (Cutkosky & Orabona 2018; as in Shekhar & Ramdas 2023): it stays near 0 while the p-values look uniform
    (ties of a judge that repeats itself cost it little) and grows once they lean one way."""
    log_wealth, size, curvature = state
    z = 1.0 - 2.0 * p
    log_wealth += math.log1p(size * z)
    gradient = z / (1.0 + size * z)
    curvature += gradient * gradient
    return log_wealth, min(high, max(low, size + ONS_STEP * gradient / curvature)), curvature


@dataclass(frozen=True)
class Bets:
    """One test martingale: half on a mixture of fixed bet sizes, half on the online Newton bet."""

    grid: tuple[float, ...]  # log wealth per fixed size
    ons: tuple[float, float, float] = (0.0, 0.0, 1.0)  # (log wealth, current size, curvature)

    @property
    def e_value(self) -> float:
        """The martingale's value: the mean of its two halves."""
        return 0.5 * _mean_exp(self.grid) + 0.5 * math.exp(min(self.ons[0], 700.0))

    def after(self, sizes: tuple[float, ...], p: float, low: float) -> Bets:
        """The bets after one p-value."""
        grid = bet(np.array(self.grid), np.array(sizes), p)
        return Bets(tuple(float(v) for v in grid), ons_bet(self.ons, p, low, 0.5))


@dataclass(frozen=True)
class Wealth:
    """The location and spread martingales so far; the e-value is half the larger."""

    location: Bets = Bets(tuple(0.0 for _ in LOCATION_BETS))
    spread: Bets = Bets(tuple(0.0 for _ in SPREAD_BETS))

    @property
    def location_e(self) -> float:
        """The location martingale's value."""
        return self.location.e_value

    @property
    def spread_e(self) -> float:
        """The spread martingale's value."""
        return self.spread.e_value

    @property
    def e_value(self) -> float:
        """Half the larger of the two: at least 1/alpha only when one of them is at least 2/alpha."""
        return 0.5 * max(self.location_e, self.spread_e)

    def to_dict(self) -> dict[str, Any]:
        """The state as a frozen record keeps it."""
        return {
            name: {"grid": list(b.grid), "ons": list(b.ons)}
            for name, b in (("location", self.location), ("spread", self.spread))
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Wealth:
        """The state a record kept (a fresh one for None)."""
        if not data:
            return cls()

        def bets(part: dict[str, Any]) -> Bets:
            ons = [float(v) for v in part["ons"]]
            return Bets(tuple(float(v) for v in part["grid"]), (ons[0], ons[1], ons[2]))

        return cls(bets(data["location"]), bets(data["spread"]))


def _mean_exp(logs: Sequence[float]) -> float:
    values = np.asarray(logs, dtype=float)
    top = float(values.max())
    return float(np.exp(min(top, 700.0)) * np.mean(np.exp(values - top)))


def step(
    wealth: Wealth, observations: Sequence[tuple[Sequence[float], float]], rng: np.random.Generator
) -> tuple[Wealth, dict[str, Any]]:
    """The wealth after one check's new scores, each (its item's earlier scores, the new score), taken in the
    given order with one uniform draw each from `rng`; and what the check added (p-values, factor)."""
    location, spread = wealth.location, wealth.spread
    p_loc: list[float] = []
    p_spread: list[float] = []
    for history, new in observations:
        u = float(rng.random())
        if len(history) >= 1:
            p = conformal_p(history, new, u, "location")
            location, p_loc = location.after(LOCATION_BETS, p, -0.5), [*p_loc, p]
        if (
            len(history) >= 2
        ):  # with one earlier score both are equally far from their median: nothing to bet on
            p = conformal_p(history, new, u, "spread")
            spread, p_spread = spread.after(SPREAD_BETS, p, 0.0), [*p_spread, p]
    after = Wealth(location, spread)
    return after, {
        "bets": len(p_loc),
        "spread_bets": len(p_spread),
        "e_before": wealth.e_value,
        "e_after": after.e_value,
        "location_e": after.location_e,
        "spread_e": after.spread_e,
        "mean_p": float(np.mean(p_loc)) if p_loc else None,
    }
