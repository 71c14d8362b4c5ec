"""A confidence threshold with a guarantee: fixed-sequence testing on human-rated items (Trust or Escalate;
Jung, Brahman & Choi, ICLR 2025).

Each calibration item has the judge's uncertainty u (lower: surer) and whether the judge agreed with people.
A threshold t keeps the items with u <= t. Thresholds are tested in a fixed order, surest first, on a grid fixed
before the data is seen: at each, the null hypothesis "the disagreement rate on the items it keeps is above
1 - target" is rejected when the exact binomial p-value P(Bin(kept, 1 - target) <= disagreements) is at most
delta. The walk stops at the first threshold not rejected and keeps the last one rejected. Because the order is
fixed, the first true null met is the only one that can be wrongly rejected, so with probability at least
1 - delta over the draw of the calibration items, the agreement rate on the items the chosen threshold keeps
is at least the target (for items drawn like the calibration items).

Grid points that keep fewer than `min_kept` calibration items are passed over rather than tested: a handful of
items cannot reject anything (every item right gives p = target^kept), and stopping there would keep nothing.
The reference code does the same (thresholds with fewer than 30 items are not candidates); the simulation
(bench/bench_guarantee.py) measures the coverage with it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = [
    "GRID_POINTS",
    "MIN_KEPT",
    "Guarantee",
    "agreement_lower_bound",
    "fixed_sequence",
    "p_values",
    "threshold_grid",
]

GRID_POINTS = 400
MIN_KEPT = 30
METHOD = (
    "fixed-sequence testing of thresholds, surest first, exact binomial p-values (Trust or Escalate, "
    "Jung, Brahman & Choi, ICLR 2025)"
)


@dataclass(frozen=True)
class Guarantee:
    """The threshold chosen on calibration items, what it keeps there, and the tests that chose it."""

    target: float
    delta: float
    threshold: float | None  # None: no threshold met the target; keep nothing
    items: int
    kept: int
    disagree: int
    lower_bound: float | None  # agreement on the kept items, one-sided 1 - delta (Clopper-Pearson)
    tested: int  # thresholds tested (passed-over ones with too few items not counted)
    stopped_at: float | None  # the first threshold not rejected (None: every tested one was)
    min_kept: int
    grid: dict[str, Any]
    method: str = METHOD
    steps: list[dict[str, Any]] = field(default_factory=list)  # one row per distinct kept set tested

    @property
    def kept_share(self) -> float:
        """The share of the calibration items the threshold keeps."""
        return self.kept / self.items if self.items else 0.0

    @property
    def agreement(self) -> float | None:
        """The agreement rate on the kept calibration items (None when none is kept)."""
        return 1 - self.disagree / self.kept if self.kept else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (kept share and agreement included)."""
        return {**asdict(self), "kept_share": self.kept_share, "agreement": self.agreement}


def threshold_grid(upper: float, points: int = GRID_POINTS) -> np.ndarray:
    """Thresholds from 0 to `upper`, fixed before the data: denser near 0, where sure judges put most items."""
    if not upper > 0:
        raise InputError(f"the uncertainty's upper bound must be positive, got {upper}", field="signal")
    return upper * (np.arange(points + 1) / points) ** 2


def p_values(kept: np.ndarray, disagree: np.ndarray, risk: float) -> np.ndarray:
    """P(Bin(kept, risk) <= disagree): small when the disagreement rate is below `risk`."""
    from scipy.special import bdtr  # imported late: scipy costs ~0.5 s at every CLI start

    kept, disagree = np.asarray(kept), np.asarray(disagree)
    out = np.ones(len(kept))
    some = kept > 0
    out[some] = bdtr(disagree[some], kept[some], risk)
    return out


def agreement_lower_bound(kept: int, disagree: int, delta: float) -> float | None:
    """One minus the one-sided 1 - delta Clopper-Pearson upper bound of the disagreement rate."""
    if kept == 0:
        return None
    if disagree >= kept:
        return 0.0
    from scipy.stats import beta

    return float(1 - beta.ppf(1 - delta, disagree + 1, kept - disagree))


def _check(target: float, delta: float) -> None:
    if not 0 < target < 1:
        raise InputError(f"the target agreement is a share between 0 and 1, got {target}", field="target")
    if not 0 < delta < 1:
        raise InputError(f"delta is a probability between 0 and 1, got {delta}", field="delta")


def _counts(uncertainty: np.ndarray, agree: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(kept, disagreements among the kept) at each grid threshold: u <= t keeps."""
    order = np.argsort(uncertainty, kind="stable")
    u, wrong = uncertainty[order], ~agree[order]
    kept = np.searchsorted(u, grid, side="right")
    cum = np.concatenate([[0], np.cumsum(wrong)])
    return kept, cum[kept]


def fixed_sequence(
    uncertainty: Any,
    agree: Any,
    target: float,
    delta: float,
    upper: float,
    points: int = GRID_POINTS,
    min_kept: int = MIN_KEPT,
) -> Guarantee:
    """The threshold that keeps the most items while the tests, surest first, all reject (see the module);
    the grid is `threshold_grid(upper, points)`, upper the largest uncertainty the signal can take."""
    _check(target, delta)
    u = np.asarray(uncertainty, dtype=float)
    ok = np.asarray(agree, dtype=bool)
    if u.shape != ok.shape:
        raise InputError(f"uncertainty ({u.size}) and agreement ({ok.size}) must have the same length")
    u = np.where(np.isnan(u), np.inf, u)  # an item without a measure of sureness is never kept
    grid = threshold_grid(upper, points)
    kept, wrong = _counts(u, ok, grid)
    p = p_values(kept, wrong, 1 - target)
    chosen: int | None = None
    stopped: float | None = None
    tested, steps = 0, list[dict[str, Any]]()  # one row per distinct kept set tested
    for k in range(len(grid)):
        if kept[k] < min_kept:
            continue
        passed = bool(p[k] <= delta)
        if not steps or steps[-1]["kept"] != int(kept[k]):
            steps.append(
                {
                    "threshold": float(grid[k]),
                    "kept": int(kept[k]),
                    "disagree": int(wrong[k]),
                    "p_value": float(p[k]),
                    "passed": passed,
                }
            )
        tested += 1
        if not passed:
            stopped = float(grid[k])
            break
        chosen = k
    n_kept = int(kept[chosen]) if chosen is not None else 0
    n_wrong = int(wrong[chosen]) if chosen is not None else 0
    return Guarantee(
        target,
        delta,
        None if chosen is None else float(grid[chosen]),
        int(u.size),
        n_kept,
        n_wrong,
        agreement_lower_bound(n_kept, n_wrong, delta),
        tested,
        stopped,
        min_kept,
        {"upper": float(upper), "points": points, "spacing": "quadratic"},
        METHOD,
        steps,
    )
