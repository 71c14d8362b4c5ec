"""The cascade guarantee by simulation: how often the agreement on the items the chosen threshold keeps is at least
the target, over repeated draws of the calibration items (it must be at least 1 - delta).

The population is SummEval's 1600 summaries with the experts' coherence as the people and a judge that carries
signal and says, imperfectly, how sure it is (tests/judge_population.py: Spearman ~0.80 with people; within half a
point of them on ~66% of the items, ~88% of the surest tenth). Each repeat draws calibration items with
replacement, chooses the threshold (stats.guarantee.fixed_sequence, as `geval cascade guarantee` does), and checks
the population's agreement on every item that threshold keeps. A repeat where no threshold passes keeps nothing
and breaks nothing. Beside it, the naive choice (the loosest threshold whose calibration agreement reaches the
target, as one reads it off a curve) shows what the testing buys.

    python bench/bench_guarantee.py [--reps 1000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from judge_population import load  # noqa: E402

from geval_core.stats.guarantee import MIN_KEPT, fixed_sequence, threshold_grid  # noqa: E402

UPPER = {"entropy": math.log2(5), "sd": 2.0, "flip": 1.0}
CASES = [  # (signal, target, delta, calibration items)
    ("entropy", 0.70, 0.10, 200),
    ("entropy", 0.75, 0.10, 200),
    ("entropy", 0.75, 0.10, 500),
    ("entropy", 0.80, 0.10, 500),
    ("entropy", 0.80, 0.05, 500),
    ("entropy", 0.75, 0.20, 300),
    ("entropy", 0.85, 0.10, 1000),
    ("sd", 0.75, 0.10, 300),
    ("flip", 0.75, 0.10, 300),
]


def naive(u: np.ndarray, ok: np.ndarray, target: float, upper: float) -> float | None:
    """The loosest grid threshold whose kept calibration items agree at the target rate (no test)."""
    best = None
    for t in threshold_grid(upper):
        keep = u <= t
        if keep.sum() >= MIN_KEPT and ok[keep].mean() >= target:
            best = t
    return best


def repeat(pop, signal: str, target: float, delta: float, n: int, reps: int, rng) -> dict[str, float]:
    """Shares of repeats where the guarantee held, where a threshold was found, and the mean kept shares."""
    ok, u = pop.agree(0.5), pop.signals[signal]
    held = found = naive_held = 0
    kept = []
    for _ in range(reps):
        idx = rng.integers(0, len(u), n)
        g = fixed_sequence(u[idx], ok[idx], target, delta, UPPER[signal])
        if g.threshold is None:
            held += 1
            kept.append(0.0)
        else:
            found += 1
            keep = u <= g.threshold
            held += ok[keep].mean() >= target
            kept.append(float(keep.mean()))
        t = naive(u[idx], ok[idx], target, UPPER[signal])
        naive_held += t is None or ok[u <= t].mean() >= target
    return {
        "held": held / reps,
        "found": found / reps,
        "kept": float(np.mean(kept)),
        "naive": naive_held / reps,
    }


def best_possible(pop, signal: str, target: float) -> float:
    """The largest share of the population a threshold can keep at the target agreement (the oracle's)."""
    ok, u = pop.agree(0.5), pop.signals[signal]
    shares = [
        (u <= t).mean()
        for t in threshold_grid(UPPER[signal])
        if (u <= t).sum() and ok[u <= t].mean() >= target
    ]
    return max(shares, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    reps = parser.parse_args().reps
    pop = load()
    rng = np.random.default_rng(2025)
    print(
        f"{reps} repeats per row; population {len(pop.human)} SummEval summaries, agreement = within 0.5 point"
    )
    print(
        f"{'signal':8} {'target':>6} {'delta':>5} {'n cal':>5} | {'held':>6} {'>= 1-d':>6} {'found':>6} "
        f"{'kept':>6} {'oracle':>6} | {'naive held':>10}"
    )
    for signal, target, delta, n in CASES:
        r = repeat(pop, signal, target, delta, n, reps, rng)
        se = math.sqrt(delta * (1 - delta) / reps)
        verdict = "yes" if r["held"] >= 1 - delta - 2 * se else "NO"
        print(
            f"{signal:8} {target:6.2f} {delta:5.2f} {n:5d} | {r['held']:6.1%} {verdict:>6} {r['found']:6.1%} "
            f"{r['kept']:6.1%} {best_possible(pop, signal, target):6.1%} | {r['naive']:10.1%}"
        )
    print(
        "held: repeats where the population agreed at the target on the kept items (or nothing was kept); found: "
        "repeats with a threshold; kept: mean share of the population kept; oracle: the most a threshold can keep "
        "at the target; naive: the loosest threshold whose calibration agreement reaches the target, untested"
    )


if __name__ == "__main__":
    main()
