"""The rating budget (stats.budget, stats.budget_ppi): its parts against independent computations (the jackknife
with scipy's correlations, the interval's width with scipy's t, PPI++'s weight and width by hand), and its plans by
simulation on SummEval's experts with a judge that carries signal (tests/judge_population.py): once the planned
ratings are in, the workbench's own interval reaches the target width in about the planned share of repeats
(a short version of bench/bench_budget.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from needs import require_file
from scipy import stats

from geval_core.errors import InputError
from geval_core.stats import agreement
from geval_core.stats.budget import FIGURES, Pilot, agreement_plan, interval_widths, least_size, unit_spread
from geval_core.stats.budget_ppi import ppi_plan
from geval_core.stats.ppi import METHODS, ppi_mean
from geval_core.types import Scale

FIVE = Scale(1, 5)


def test_least_size_finds_the_first_size_that_reaches():
    assert least_size(lambda n: 1.0 if n >= 137 else 0.0, 10, 0.8) == 137
    assert least_size(lambda n: 1.0, 10, 0.8) == 10
    assert least_size(lambda n: 0.0, 10, 0.8, cap=500) is None
    assert least_size(lambda n: 1.0, 600, 0.8, cap=500) is None


def test_the_cli_states_the_figures_and_methods_as_the_statistics_do():
    from geval_core.cli import budget as cli_budget

    assert cli_budget.FIGURES == FIGURES and cli_budget.METHODS == METHODS


def pairs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n).astype(float)
    return np.clip(human + rng.normal(0, 1, n), 1, 5).round(2), human


def test_the_jackknife_is_scipys_leave_one_out():
    judge, human = pairs(60)
    spread = unit_spread(Pilot.of(judge, human, None, None, FIVE), "spearman")
    whole = math.atanh(stats.spearmanr(judge, human).statistic)
    out = [math.atanh(stats.spearmanr(np.delete(judge, k), np.delete(human, k)).statistic) for k in range(60)]
    pseudo = 60 * whole - 59 * np.array(out)
    assert (
        spread.unit == pytest.approx(np.std(pseudo, ddof=1), rel=1e-9)
        and spread.units == 60
        and spread.fisher
    )
    assert spread.kurtosis_less_one == pytest.approx(stats.kurtosis(pseudo, fisher=False) - 1, rel=1e-9)


def test_group_level_spread_is_the_per_group_correlations_own():
    judge, human = pairs(120, 1)
    groups = [k // 10 for k in range(120)]
    spread = unit_spread(Pilot.of(judge, human, groups, None, FIVE), "spearman")
    per = [
        stats.spearmanr(judge[k * 10 : (k + 1) * 10], human[k * 10 : (k + 1) * 10]).statistic
        for k in range(12)
    ]
    assert not spread.fisher and spread.unit == pytest.approx(
        np.std(per, ddof=1), rel=1e-9
    )  # a mean's jackknife


def test_the_width_of_a_symmetric_spread_is_t_times_its_sd():
    spread = unit_spread(Pilot.of(*pairs(120, 1), [k // 10 for k in range(120)], None, FIVE), "spearman")
    width = interval_widths(0.3, spread)
    for u in (20, 80, 400):
        sd = spread.unit / math.sqrt(u)  # the quantiles' own SD is this up to their discreteness
        assert width(u) == pytest.approx(
            2 * stats.t.ppf(0.975, u - 1) * math.sqrt(u / (u - 1)) * sd, rel=0.01
        )
    assert width(400) < width(80) < width(20)


def test_ppi_plan_starts_from_the_pilots_own_interval():
    rng = np.random.default_rng(4)
    judge, human = pairs(800, 4)
    rated = rng.permutation(800)[:80]
    some = [float(human[i]) if i in set(rated.tolist()) else None for i in range(800)]
    plan = ppi_plan(judge, some, 0.3, "ppi++", 0.8)
    pilot = ppi_mean(judge, some, "ppi++")
    assert plan["pilot_width"] == pytest.approx(pilot.ci[1] - pilot.ci[0])
    # PPI++'s weight and width by hand at the planned size, the pilot's moments and error carried
    n, total = plan["planned_rated"], 800
    x, y = judge[rated], human[rated]
    cov, var_j, var_h, var_all = (
        np.cov(y, x)[0, 1],
        np.var(x, ddof=1),
        np.var(y, ddof=1),
        np.var(judge, ddof=1),
    )

    def variance(k: int) -> float:
        lam = min(max(cov / ((1 + k / (total - k)) * var_j), 0), 1)
        return (var_h - 2 * lam * cov + lam**2 * var_j) / k + lam**2 * var_all / (total - k)

    carry = pilot.se**2 / variance(80)
    by_hand = 2 * stats.t.ppf(0.975, n - 1) * math.sqrt(carry * variance(n))
    assert plan["width_at_planned"] == pytest.approx(by_hand, rel=1e-9) and by_hand <= 0.3
    assert plan["median_rated"] <= n and plan["further_rated"] == n - 80


def test_refusals():
    judge, human = pairs(60)
    with pytest.raises(InputError, match="figure is one of"):
        agreement_plan(judge, human, 0.1, "alpha")
    with pytest.raises(InputError, match="width must be positive"):
        agreement_plan(judge, human, 0.0)
    with pytest.raises(InputError, match="at least 10"):
        agreement_plan(judge[:8], human[:8], 0.1, bootstrap=0)
    out = ppi_plan(judge, [*human[:40], *[None] * 20], 0.01, "ppi++", 0.8)
    assert out["planned_rated"] is None and out["rated_with_more_judged"] > 60  # more items must be judged


@pytest.fixture(scope="module")
def population():
    from judge_population import SUMMEVAL, load

    require_file(SUMMEVAL, "SummEval")
    return load()


@pytest.mark.parametrize(("assurance", "low", "high"), [(0.8, 0.6, 1.0), (0.5, 0.25, 0.85)])
def test_the_agreement_plan_reaches_the_width_about_as_often_as_planned(population, assurance, low, high):
    rng, hits, reps = np.random.default_rng(8), 0, 40
    for rep in range(reps):
        idx = rng.integers(0, len(population.human), 60)
        plan = agreement_plan(
            population.score[idx], population.human[idx], 0.15, "spearman", assurance, scale=FIVE, bootstrap=0
        )
        full = np.concatenate([idx, rng.integers(0, len(population.human), plan["planned_units"] - 60)])
        ci = agreement(population.score[full], population.human[full], scale=FIVE, bootstrap=200, seed=rep).ci
        hits += ci["spearman"][1] - ci["spearman"][0] <= 0.15
    assert low <= hits / reps <= high


@pytest.mark.parametrize(("assurance", "low", "high"), [(0.8, 0.65, 0.95), (0.5, 0.3, 0.7)])
def test_the_ppi_plan_reaches_the_width_about_as_often_as_planned(population, assurance, low, high):
    rng, hits, reps = np.random.default_rng(9), 0, 200
    for _ in range(reps):
        idx = rng.integers(0, len(population.human), 1500)
        order = rng.permutation(1500)
        human = np.full(1500, np.nan)
        human[order[:60]] = population.human[idx[order[:60]]]
        n = ppi_plan(population.score[idx], human, 0.15, "ppi++", assurance)["planned_rated"]
        human[order[:n]] = population.human[idx[order[:n]]]
        ci = ppi_mean(population.score[idx], human, "ppi++").ci
        hits += ci[1] - ci[0] <= 0.15
    assert low <= hits / reps <= high
