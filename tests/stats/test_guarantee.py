"""Fixed-sequence testing of confidence thresholds (stats.guarantee): its p-values and bound against scipy's
binomial test, its choice against a plain loop written from the paper's rule, and its guarantee by simulation on
SummEval's expert ratings with a judge whose scores and stated sureness carry signal (tests/judge_population.py):
the agreement on the kept items of the population is at least the target in at least 1 - delta of the repeats
(a short version of bench/bench_guarantee.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from needs import require_file
from scipy import stats

from geval_core.errors import InputError
from geval_core.stats.guarantee import (
    agreement_lower_bound,
    fixed_sequence,
    p_values,
    threshold_grid,
)


def test_p_values_are_scipys_one_sided_binomial_test():
    rng = np.random.default_rng(0)
    kept = rng.integers(1, 200, 50)
    wrong = (kept * rng.random(50)).astype(int)
    ours = p_values(kept, wrong, 0.2)
    theirs = [
        stats.binomtest(int(w), int(n), 0.2, alternative="less").pvalue
        for n, w in zip(kept, wrong, strict=True)
    ]
    assert ours == pytest.approx(theirs, rel=1e-9)
    assert p_values(np.array([0]), np.array([0]), 0.2)[0] == 1.0  # nothing kept: nothing rejected


@pytest.mark.parametrize(
    ("kept", "wrong", "delta"), [(40, 3, 0.1), (200, 30, 0.05), (31, 0, 0.2), (10, 10, 0.1)]
)
def test_the_lower_bound_is_scipys_exact_interval(kept, wrong, delta):
    # A one-sided 1 - delta bound is the end of the two-sided 1 - 2 delta exact (Clopper-Pearson) interval.
    upper = stats.binomtest(wrong, kept, 0.5).proportion_ci(1 - 2 * delta, method="exact").high
    assert agreement_lower_bound(kept, wrong, delta) == pytest.approx(1 - upper, abs=1e-9)
    assert agreement_lower_bound(0, 0, delta) is None


def naive(u, ok, target, delta, grid, min_kept):
    """The rule as the paper states it, one threshold at a time with scipy's test."""
    chosen = None
    for t in grid:
        keep = u <= t
        if keep.sum() < min_kept:
            continue
        p = stats.binomtest(int((~ok[keep]).sum()), int(keep.sum()), 1 - target, alternative="less").pvalue
        if p > delta:
            break
        chosen = t
    return chosen


@pytest.mark.parametrize("seed", range(6))
def test_the_choice_is_the_plain_loops(seed):
    rng = np.random.default_rng(seed)
    u = rng.random(300) * 2
    ok = rng.random(300) < 0.95 - 0.3 * u  # surer items agree more often
    u[:5] = np.inf  # no score: never kept
    grid = threshold_grid(2.0, 100)
    g = fixed_sequence(u, ok, 0.8, 0.1, 2.0, points=100, min_kept=20)
    assert g.threshold == naive(u, ok, 0.8, 0.1, grid, 20)
    if g.threshold is not None:
        keep = u <= g.threshold
        assert (g.kept, g.disagree) == (int(keep.sum()), int((~ok[keep]).sum()))
        assert (
            g.agreement >= g.lower_bound >= 0.8 - 1e-9
        )  # a passing test puts the bound at or above the target
        assert g.steps[-1]["passed"] is (g.stopped_at is None)


def test_nothing_passes_keeps_nothing():
    u = np.linspace(0, 1, 100)
    g = fixed_sequence(u, np.zeros(100, dtype=bool), 0.8, 0.1, 1.0)
    assert g.threshold is None and g.kept == 0 and g.agreement is None and g.tested == 1
    assert g.to_dict()["kept_share"] == 0.0


def test_refusals():
    with pytest.raises(InputError, match="target"):
        fixed_sequence([0.1], [True], 1.2, 0.1, 1.0)
    with pytest.raises(InputError, match="delta"):
        fixed_sequence([0.1], [True], 0.8, 0.0, 1.0)
    with pytest.raises(InputError, match="same length"):
        fixed_sequence([0.1, 0.2], [True], 0.8, 0.1, 1.0)
    with pytest.raises(InputError, match="upper bound"):
        threshold_grid(0.0)


@pytest.fixture(scope="module")
def population():
    from judge_population import SUMMEVAL, load

    require_file(SUMMEVAL, "SummEval")
    return load()


def test_the_population_judge_carries_signal(population):
    assert stats.spearmanr(population.score, population.human).statistic > 0.7
    ok, u = population.agree(0.5), population.signals["entropy"]
    assert ok[u <= np.quantile(u, 0.1)].mean() > ok.mean() + 0.15  # its sureness says something


@pytest.mark.parametrize(("target", "delta", "n"), [(0.75, 0.1, 300), (0.7, 0.2, 200)])
def test_the_guarantee_holds_in_at_least_1_minus_delta_of_repeats(population, target, delta, n):
    ok, u = population.agree(0.5), population.signals["entropy"]
    rng = np.random.default_rng(7)
    reps, held, found = 300, 0, 0
    for _ in range(reps):
        idx = rng.integers(0, len(u), n)  # calibration items drawn like the population's
        g = fixed_sequence(u[idx], ok[idx], target, delta, math.log2(5))
        if g.threshold is None:
            held += 1  # keeps nothing: nothing to break
            continue
        found += 1
        held += ok[u <= g.threshold].mean() >= target
    se = math.sqrt(delta * (1 - delta) / reps)
    assert held / reps >= 1 - delta - 2 * se
    assert found / reps > 0.5  # and it is not kept by keeping nothing
