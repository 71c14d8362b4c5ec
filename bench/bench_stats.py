"""Tie rate + Kendall tau-b + Spearman at 10^7 scores in one pass against scipy's kendalltau + spearmanr
(issue 15: ≤ 1.0 × scipy's time, ≤ 0.8 GB), then the agreement figures on 1,000,000 scores.

Time: 3 interleaved pairs, medians. Memory: the peak of what each side allocates on top of the data
(tracemalloc, which numpy reports its arrays to).

Run: .venv/bin/python bench/bench_stats.py [--n 10000000]   (prints figures; not a timed test)
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
import scipy.stats

from geval_core.stats import agreement, kendall, spearman, tie_rate
from geval_core.stats.onepass import pooled
from geval_core.types import Scale

N = 1_000_000
TARGET_S = 3.0


def data(n: int, seed: int = 0, decimals: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Weighted-looking judge scores (1-5, two decimals: many ties) and noisy human means."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n) + rng.integers(0, 3, n) / 3.0
    judge = np.round(np.clip(human + rng.normal(0, 0.8, n), 1, 5), decimals)
    return judge, human


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - start
    print(f"{label:<44} {elapsed:7.3f} s   ({value})")
    return elapsed


def ours(judge: np.ndarray, human: np.ndarray) -> tuple[float, float, float]:
    """Tie rate of the judge, Kendall and Spearman from one pass."""
    p = pooled(judge, human)
    return p.tied_x / (p.n * (p.n - 1) / 2), p.kendall, p.spearman


def theirs(judge: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """scipy's Kendall tau-b and Spearman rho (no tie rate: scipy has none)."""
    return scipy.stats.kendalltau(judge, human).statistic, scipy.stats.spearmanr(judge, human).statistic


def measured(fn, judge: np.ndarray, human: np.ndarray) -> tuple[float, float, tuple]:
    """(seconds, peak bytes allocated above the data, result) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    value = fn(judge, human)
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak, value


def versus_scipy(n: int, decimals: int) -> None:
    """Interleaved pairs: the one pass against scipy at n scores."""
    judge, human = data(n, seed=1, decimals=decimals)
    times: dict[str, list[float]] = {"ours": [], "scipy": []}
    peaks: dict[str, int] = {"ours": 0, "scipy": 0}
    results = {}
    for _ in range(3):
        for name, fn in (("ours", ours), ("scipy", theirs)):
            elapsed, peak, results[name] = measured(fn, judge, human)
            times[name].append(elapsed)
            peaks[name] = max(peaks[name], peak)
    (rate, tau, rho), (tau_s, rho_s) = results["ours"], results["scipy"]
    assert abs(tau - tau_s) < 1e-9 and abs(rho - rho_s) < 1e-9, (tau, tau_s, rho, rho_s)
    ours_s, scipy_s = statistics.median(times["ours"]), statistics.median(times["scipy"])
    print(
        f"{n:,} scores, judge with {decimals} decimals: tie rate {rate:.4f}, Kendall {tau:.6f}, Spearman {rho:.6f} (scipy agrees to 1e-9)"
    )
    print(
        f"one pass {ours_s:.2f} s vs scipy kendalltau + spearmanr {scipy_s:.2f} s: ratio {ours_s / scipy_s:.2f} "
        f"(target ≤ 1.0)"
    )
    print(
        f"memory above the data: one pass {peaks['ours'] / 1e9:.2f} GB, scipy {peaks['scipy'] / 1e9:.2f} GB "
        f"(target ≤ 0.8 GB: {'met' if peaks['ours'] <= 0.8e9 else 'NOT met'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="scores in the scipy comparison")
    n = parser.parse_args().n
    for decimals in (2, 6):  # a count table of the cells; sorted cells and the inversion count
        versus_scipy(n, decimals)
    judge, human = data(N)
    groups = np.arange(N) // 16  # SummEval-shaped: 62,500 documents of 16 summaries
    print(f"{N:,} scores")
    total = sum(
        timed(label, fn)
        for label, fn in (
            ("tie rate", lambda: f"{tie_rate(judge):.4f}"),
            ("Kendall tau-b", lambda: f"{kendall(judge, human):.4f}"),
            ("Spearman rho", lambda: f"{spearman(judge, human):.4f}"),
        )
    )
    print(
        f"{'tie rate + Kendall + Spearman':<44} {total:7.3f} s   target < {TARGET_S:.0f} s: "
        f"{'OK' if total < TARGET_S else 'TOO SLOW'}"
    )
    scale = Scale(1, 5)
    timed("agreement, dataset-level (all figures)", lambda: agreement(judge, human, scale=scale).items)
    timed(
        "agreement, group-level (62,500 groups)", lambda: agreement(judge, human, groups, scale=scale).groups
    )
    timed(
        "agreement, group-level + bootstrap 1000",
        lambda: len(agreement(judge, human, groups, scale=scale, bootstrap=1000).ci),
    )


if __name__ == "__main__":
    main()
