"""How many more human ratings: the size at which an agreement figure's interval reaches a target width, planned
from a pilot (the PPI estimate's plan is in budget_ppi).

A figure's sampling spread is s / sqrt(u) at u units (items, or groups when the data has them: the units the
workbench's bootstrap resamples), s one unit's spread, which the pilot gives by the jackknife (leaving out one
unit at a time). A pooled correlation (or kappa) spreads evenly on Fisher's z scale, so s is taken there; the
group-level reading is a mean of per-group correlations, which spreads evenly on its own scale. The width W(u)
of the workbench's own interval at u units is what its interval maker (bootstrap.interval) draws from resamples
spread that way, so the plan follows the interval the workbench draws, its small-sample and skew corrections
included. (A pilot's own interval is a poor ruler: at a few dozen units those corrections widen it more than they
will at the planned size.)

What the final interval will look like is not known yet, and the plan asks for a chance (the assurance) that it
is narrow enough. Two things move it. The figure it is drawn around: from the pilot's u0 units, its Fisher z on
all u units is about normal around the pilot's, with variance s^2 (u - u0) / (u u0) (the pilot's units are part
of the final ones), and a pooled figure's width at r is about W(u) (1 - r^2) / (1 - r0^2). And the spread s
itself: its log square about normal around the pilot's with variance k (u - u0) / (u u0), k the kurtosis of the
jackknife's pseudo-values less one (at least 2, a normal's). At 50% the plan is about the size whose width at
the pilot's figure and spread is the target.

Checked against the workbench's own intervals by simulation (bench/bench_budget.py): the share of repeats whose
interval reaches the target width is about the planned assurance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..types import Scale
from .agreement import agreement
from .bootstrap import MIN_UNITS, interval
from .paired import to_floats

__all__ = ["FIGURES", "Pilot", "Spread", "agreement_plan", "interval_widths", "least_size", "unit_spread"]

FIGURES = ("spearman", "kendall", "pearson", "kappa_quadratic")
MAX_UNITS = 1_000_000
POINTS = 2000  # quantiles standing for a final sample's resamples
_EDGE = 1 - 1e-9
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(24)  # E f(X), X standard normal
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def normal_cdf(x: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * math.erfc(-x / math.sqrt(2))


def least_size(
    chance: Callable[[int], float], start: int, assurance: float, cap: int = MAX_UNITS
) -> int | None:
    """The least size from `start` whose chance reaches the assurance (chance taken as rising with size): None
    when not even `cap` does."""
    if start > cap:
        return None
    if chance(start) >= assurance:
        return start
    high = start
    while chance(high) < assurance:
        if high >= cap:
            return None
        high = min(cap, max(high * 2, high + 1))
    low = max(start, high // 2)
    while low < high:  # the least size in (low, high] that reaches it
        mid = (low + high) // 2
        if chance(mid) >= assurance:
            high = mid
        else:
            low = mid + 1
    return high


def check_target(width: float, assurance: float) -> None:
    """InputError for a width that is not positive or an assurance that is not a chance."""
    if not width > 0:
        raise InputError(f"the target width must be positive, got {width}", field="width")
    if not 0 < assurance < 1:
        raise InputError(f"the assurance is a chance between 0 and 1, got {assurance}", field="assurance")


def spread_tau(kurtosis_less_one: float, n0: int, n: int) -> float:
    """The SD of the log of a variance estimated on n units, from the pilot's on n0 of them."""
    return math.sqrt(max(kurtosis_less_one, 2.0) * (n - n0) / (n * n0)) if n > n0 else 0.0


@dataclass(frozen=True)
class Pilot:
    """The pilot's rated pairs and the units the workbench's bootstrap resamples (groups, clusters or items)."""

    x: np.ndarray
    y: np.ndarray
    codes: np.ndarray  # each pair's unit
    grouped: bool  # the group-level reading: correlations within each unit, averaged
    scale: Scale | None

    @classmethod
    def of(
        cls,
        judge: Iterable[float | None],
        human: Iterable[float | None],
        groups: list[Any] | None,
        clusters: list[Any] | None,
        scale: Scale | None,
    ) -> Pilot:
        """The pairs with both scores, each with its unit."""
        x, y = to_floats(judge), to_floats(human)
        keep = np.isfinite(x) & np.isfinite(y)
        labels = groups if groups is not None else clusters
        codes = (
            np.unique(np.asarray([str(v) for v in labels]), return_inverse=True)[1][keep]
            if labels is not None
            else np.arange(int(keep.sum()))
        )
        return cls(x[keep], y[keep], codes, groups is not None, scale)

    def figure(self, keep: np.ndarray, figure: str) -> float | None:
        """The figure on the pairs `keep` selects."""
        groups = self.codes[keep].tolist() if self.grouped else None
        return getattr(agreement(self.x[keep], self.y[keep], groups, self.scale), figure)


@dataclass(frozen=True)
class Spread:
    """One unit's spread of a figure (on Fisher's z, or on its own scale) and the kurtosis of its pseudo-values."""

    unit: float
    kurtosis_less_one: float
    units: int
    fisher: bool


def unit_spread(pilot: Pilot, figure: str) -> Spread:
    """The jackknife's spread of the figure, leaving out one unit at a time (Fisher z unless group-level)."""
    units = np.unique(pilot.codes)
    fisher = not pilot.grouped
    whole = pilot.figure(np.ones(len(pilot.x), dtype=bool), figure)
    leave = [pilot.figure(pilot.codes != c, figure) for c in units]
    values = [v for v in leave if v is not None]
    u = len(units)
    if whole is None or len(values) < max(3, u // 2):
        raise InputError(
            f"{figure} is undefined on most of the pilot's {u} units: rate more items", field="figure"
        )

    def on(v: float) -> float:
        return math.atanh(max(-_EDGE, min(_EDGE, v))) if fisher else v

    pseudo = u * on(whole) - (u - 1) * np.array([on(v) for v in values])
    var = float(np.var(pseudo, ddof=1))
    kurt = float(np.mean((pseudo - pseudo.mean()) ** 4) / np.var(pseudo) ** 2) if var > 0 else 3.0
    return Spread(math.sqrt(var), kurt - 1, u, fisher)


def interval_widths(estimate: float, spread: Spread, points: int = POINTS) -> Callable[[int], float]:
    """W(u): the width of the workbench's own interval (bootstrap.interval) at u units for a figure `estimate` whose
    resamples spread normally, SD unit / sqrt(u), on Fisher's z (mapped back, so skewed as a correlation's are)
    or on the figure's own scale: their quantiles, not random draws, so W falls smoothly with u."""
    from scipy.stats import norm  # imported late: scipy costs ~0.5 s at every CLI start

    steps = norm.ppf((np.arange(points) + 0.5) / points)
    z0 = math.atanh(max(-_EDGE, min(_EDGE, estimate)))

    def width(u: int) -> float:
        move = steps * spread.unit / math.sqrt(u)
        values = np.tanh(z0 + move) if spread.fisher else np.clip(estimate + move, -1, 1)
        low, high = interval(values, estimate, u)
        return math.inf if low is None or high is None else high - low

    return width


def chance_narrow(
    w: Callable[[int], float], r0: float, spread: Spread, width: float
) -> Callable[[int], float]:
    """chance(u): that the interval on u units is at most `width` wide (the module's two sources of doubt)."""
    u0 = spread.units
    z0 = math.atanh(max(-_EDGE, min(_EDGE, r0)))

    def chance(u: int) -> float:
        base = width / w(u)
        tau = spread_tau(spread.kurtosis_less_one, u0, u)
        sd = spread.unit * math.sqrt((u - u0) / (u * u0)) if spread.fisher else 0.0
        return float(
            sum(
                wt * _given_spread(base * math.exp(-tau * x / 2), r0, z0, sd, spread.fisher)
                for x, wt in zip(_NODES, _WEIGHTS, strict=True)
            )
        )

    return chance


def _given_spread(ratio: float, r0: float, z0: float, sd: float, fisher: bool) -> float:
    """The chance the width is within target, its allowance `ratio` (target over width at the pilot's figure)."""
    if not fisher:  # a mean of correlations: its width barely depends on where it lies
        return 1.0 if ratio >= 1 else 0.0
    room = ratio * (1 - r0**2)  # within target where 1 - r^2 <= room
    if room >= 1:
        return 1.0
    need = math.atanh(math.sqrt(1 - room))  # |z| at least this
    if sd == 0:
        return 1.0 if abs(z0) >= need else 0.0
    return normal_cdf((-need - z0) / sd) + 1 - normal_cdf((need - z0) / sd)


def agreement_plan(
    judge: Iterable[float | None],
    human: Iterable[float | None],
    width: float,
    figure: str = "spearman",
    assurance: float = 0.8,
    groups: list[Any] | None = None,
    clusters: list[Any] | None = None,
    scale: Scale | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The units (items, or groups) the agreement figure's interval needs for `width`, from the pilot's rated
    items; `groups` for the group-level reading, `clusters` for the dataset-level reading of grouped items."""
    if figure not in FIGURES:
        raise InputError(f"the figure is one of {', '.join(FIGURES)}, got {figure!r}", field="figure")
    check_target(width, assurance)
    shown = agreement(judge, human, groups, scale, bootstrap, seed, clusters)  # the pilot's own interval
    r0 = getattr(shown, figure)
    if r0 is None:
        raise InputError(
            f"{figure} is undefined on the pilot (a side is constant): rate more items", field="figure"
        )
    pilot = Pilot.of(judge, human, groups, clusters, scale)
    u0 = len(np.unique(pilot.codes))
    if u0 < MIN_UNITS:
        raise InputError(
            f"the pilot has {u0} units; plan from at least {MIN_UNITS} (items, or groups)", field="figure"
        )
    spread = unit_spread(pilot, figure)
    w = interval_widths(r0, spread)
    planned = least_size(chance_narrow(w, r0, spread, width), u0, assurance)
    median = least_size(lambda u: 1.0 if w(u) <= width else 0.0, u0, 0.5)
    per_unit = len(pilot.x) / u0
    ci = shown.ci.get(figure) or [None, None]
    return {
        "figure": figure,
        "reading": shown.reading,
        "target_width": width,
        "assurance": assurance,
        "estimate": r0,
        "pilot_interval": ci,
        "pilot_width": None if ci[0] is None or ci[1] is None else ci[1] - ci[0],
        "unit": "groups" if (groups or clusters) is not None else "items",
        "pilot_units": u0,
        "pilot_items": len(pilot.x),
        "items_per_unit": per_unit,
        "unit_spread": spread.unit,
        "spread_scale": "Fisher z" if spread.fisher else "the figure's own",
        "planned_units": planned,
        "further_units": None if planned is None else planned - u0,
        "further_items": None if planned is None else math.ceil((planned - u0) * per_unit),
        "median_units": median,
        "width_at_planned": None if planned is None else w(planned),
    }
