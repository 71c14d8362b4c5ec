"""Time tie rate + Kendall tau-b + Spearman on 1,000,000 scores (target: under 3 s), and a full agreement.

Run: .venv/bin/python bench/bench_stats.py   (prints figures; not a timed test)
"""

from __future__ import annotations

import time

import numpy as np

from geval_core.stats import agreement, kendall, spearman, tie_rate
from geval_core.types import Scale

N = 1_000_000
TARGET_S = 3.0


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Weighted-looking judge scores (1-5, two decimals: many ties) and noisy human means."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n) + rng.integers(0, 3, n) / 3.0
    judge = np.round(np.clip(human + rng.normal(0, 0.8, n), 1, 5), 2)
    return judge, human


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - start
    print(f"{label:<44} {elapsed:7.3f} s   ({value})")
    return elapsed


def main() -> None:
    judge, human = data(N)
    groups = np.arange(N) // 16  # SummEval-shaped: 62,500 documents of 16 summaries
    print(f"{N:,} scores")
    total = sum(timed(label, fn) for label, fn in (
        ("tie rate", lambda: f"{tie_rate(judge):.4f}"),
        ("Kendall tau-b", lambda: f"{kendall(judge, human):.4f}"),
        ("Spearman rho", lambda: f"{spearman(judge, human):.4f}"),
    ))
    print(f"{'tie rate + Kendall + Spearman':<44} {total:7.3f} s   target < {TARGET_S:.0f} s: "
          f"{'OK' if total < TARGET_S else 'TOO SLOW'}")
    scale = Scale(1, 5)
    timed("agreement, dataset-level (all figures)", lambda: agreement(judge, human, scale=scale).items)
    timed("agreement, group-level (62,500 groups)",
          lambda: agreement(judge, human, groups, scale=scale).groups)
    timed("agreement, group-level + bootstrap 1000",
          lambda: len(agreement(judge, human, groups, scale=scale, bootstrap=1000).ci))


if __name__ == "__main__":
    main()
