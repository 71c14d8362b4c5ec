"""PPI rows of bench_coverage: few rated items (i.i.d.) and items that come as whole documents."""

from __future__ import annotations

import contextlib

import numpy as np
from coverage_population import Population, draw

from geval_core.stats import ppi

RATED = (5, 10, 15, 20, 30, 40)  # rated items of 400 i.i.d. ones
GROUPED_RATED = 40  # rated at random among the items of the drawn documents


@contextlib.contextmanager
def before():
    """PPI as it was before issue 25: normal z quantile, no minimum of rated items."""
    saved = ppi.t975, ppi.MIN_RATED
    ppi.t975, ppi.MIN_RATED = (lambda df: ppi.Z95), dict.fromkeys(ppi.METHODS, 2)
    try:
        yield
    finally:
        ppi.t975, ppi.MIN_RATED = saved


def _rated(rng: np.random.Generator, human: np.ndarray, n: int) -> list[float | None]:
    keep = set(rng.choice(len(human), size=n, replace=False).tolist())
    return [float(h) if i in keep else None for i, h in enumerate(human)]


def ppi_rows(pop: Population, tally, sizes: list[int], reps: int) -> None:
    """Coverage of PPI classic / PPI++ (and the human-only mean) against the population's mean rating."""
    truth = float(pop.human.mean())
    rng = np.random.default_rng(3)
    for n in RATED:
        for _ in range(reps):
            idx = rng.integers(0, len(pop.human), size=400)
            judge, human = pop.judge[idx], _rated(rng, pop.human[idx], n)
            for method in ppi.METHODS:
                e = ppi.ppi_mean(judge, human, method)
                tally.add((f"PPI {method}, 400 i.i.d. items, n rated", n, "after"), e.ci, truth)
                with before():
                    tally.add(
                        (f"PPI {method}, 400 i.i.d. items, n rated", n, "before"),
                        ppi.ppi_mean(judge, human, method).ci,
                        truth,
                    )
    for g in sizes:
        for _ in range(reps):
            idx, labels = draw(pop, g, rng)
            judge, human = pop.judge[idx], _rated(rng, pop.human[idx], GROUPED_RATED)
            for method in ppi.METHODS:
                e = ppi.ppi_mean(judge, human, method, labels.tolist())
                tally.add((f"PPI {method}, whole documents, {GROUPED_RATED} rated", g, "after"), e.ci, truth)
                with before():
                    tally.add(
                        (f"PPI {method}, whole documents, {GROUPED_RATED} rated", g, "before"),
                        ppi.ppi_mean(judge, human, method).ci,
                        truth,
                    )
            tally.add(
                (f"human-only mean, whole documents, {GROUPED_RATED} rated", g, "after"), e.human_ci, truth
            )
            with before():
                tally.add(
                    (f"human-only mean, whole documents, {GROUPED_RATED} rated", g, "before"),
                    ppi.ppi_mean(judge, human).human_ci,
                    truth,
                )
