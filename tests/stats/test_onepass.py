"""The one-pass pooled figures (issue 15) against scipy on every path: count table, sorted cells with
the radix inversion count (either side outer), and the sort-coded wide-range values."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from geval_core.stats import item_ties, kendall, onepass, spearman, tie_rate


def scipy_figures(x, y):
    return st.spearmanr(x, y).statistic, st.kendalltau(x, y).statistic


def naive_tie_rate(x) -> float:
    _, counts = np.unique(np.round(x, 6), return_counts=True)
    n = len(x)
    return float((counts * (counts - 1) / 2).sum() / (n * (n - 1) / 2))


CASES = {
    # few distinct values on both sides: the joint count table
    "table": lambda rng, n: (rng.integers(1, 6, n) + rng.integers(0, 3, n) / 3, rng.integers(1, 6, n) * 1.0),
    # weighted judge scores (many values) against 13 human levels: sorted cells, the judge outer
    "cells, judge outer": lambda rng, n: (np.round(rng.uniform(1, 5, n), 4), rng.integers(1, 14, n) / 3),
    # the human side has more values: sorted cells with the sides swapped
    "cells, human outer": lambda rng, n: (rng.integers(1, 6, n) * 1.0, np.round(rng.normal(3, 1, n), 5)),
    # values far apart (beyond the counting range): coded by np.unique
    "wide range": lambda rng, n: (rng.normal(0, 1e4, n).round(3), rng.integers(-3, 4, n) * 1e5),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("n", [2, 3, 17, 5_000, 60_000])
def test_pooled_matches_scipy(case, n):
    rng = np.random.default_rng(n)
    x, y = CASES[case](rng, n)
    y = y + 0.0 * x  # same length, float
    if n > 100 and case != "wide range":
        y = np.where(rng.random(n) < 0.3, np.round(x), y)  # make the sides related, with joint ties
    rho, tau = scipy_figures(x, y)
    got = onepass.pooled(x, y)
    assert got.defined
    assert got.spearman == pytest.approx(rho, abs=1e-12)
    assert got.kendall == pytest.approx(tau, abs=1e-12)
    assert spearman(x, y) == pytest.approx(rho, abs=1e-12)
    assert kendall(x, y) == pytest.approx(tau, abs=1e-12)
    assert tie_rate(x) == pytest.approx(naive_tie_rate(x), abs=1e-15)


def test_radix_inversions_match_a_direct_count():
    rng = np.random.default_rng(3)
    for limit in (1, 2, 7, 300):
        values = rng.integers(0, limit + 1, 400)
        direct = sum(int((values[i] > values[i + 1 :]).sum()) for i in range(len(values)))
        assert onepass.inversions(values) == direct


def test_undefined_when_a_side_is_constant_or_too_short():
    assert not onepass.pooled(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])).defined
    assert not onepass.pooled(np.array([1.0]), np.array([2.0])).defined
    assert spearman([1, 2, 3], [4, 4, 4]) is None and kendall([1], [2]) is None


def test_float_noise_neither_breaks_nor_makes_ties():
    x = np.array([0.1 + 0.2, 0.3, 0.30000049, 0.3000006, 1.0])  # 0.1 + 0.2 is 0.30000000000000004
    codes = onepass.dense(x).codes
    assert codes[0] == codes[1] == codes[2]  # 0.30000049 rounds to 0.3
    assert codes[3] == codes[2] + 1 and codes[4] == codes[3] + 1


def test_item_ties_over_the_run_match_counting():
    rng = np.random.default_rng(5)
    x = np.round(rng.uniform(1, 5, 3_000), 1)
    x[::7] = np.nan
    out = item_ties(list(x))
    valid = x[np.isfinite(x)]
    expected = np.array([(valid == v).sum() - 1 for v in valid])
    assert np.array_equal(out["tied_others"][np.isfinite(x)], expected)
    assert np.all(out["tied_others"][~np.isfinite(x)] == -1)
    assert np.allclose(out["tied_share"][np.isfinite(x)], expected / (len(valid) - 1))


def test_a_million_scores_are_coded_by_counting_and_match_scipy():
    rng = np.random.default_rng(11)
    n = 1_200_000  # a 1-5 score spans 4,000,000 steps of 1e-6: counted once n reaches a quarter of that
    human = rng.integers(1, 6, n) + rng.integers(0, 3, n) / 3.0
    judge = np.round(np.clip(human + rng.normal(0, 0.8, n), 1, 5), 3)
    rho, tau = scipy_figures(judge, human)
    got = onepass.pooled(judge, human)
    assert got.spearman == pytest.approx(rho, abs=1e-12) and got.kendall == pytest.approx(tau, abs=1e-12)
    _, counts = np.unique(judge, return_counts=True)
    assert np.array_equal(onepass.dense(judge).counts, counts)


def test_average_ranks_match_scipy_rankdata():
    rng = np.random.default_rng(8)
    for values in (np.round(rng.uniform(1, 5, 500), 1), rng.integers(1, 6, 50) * 1.0, np.array([2.0, 2.0])):
        assert np.array_equal(onepass.average_ranks(values), st.rankdata(values))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("decimals", [0, 1, 6])
@pytest.mark.parametrize("n", [2, 7, 60, 900])
def test_a_resample_counted_from_the_layout_equals_its_items_figures(decimals, n, swap):
    from scipy import stats as sps

    from geval_core.stats.counted import layout, pooled_counted

    rng = np.random.default_rng(n + decimals)
    y = rng.integers(1, 6, n).astype(float)
    x = np.round(np.clip(y + rng.normal(0, 1.2, n), 1, 5), decimals)
    if swap:  # the human side with more values: it is the outer side
        x, y = y, x
    lay = layout(x, y)
    for _ in range(20):
        drawn = np.bincount(rng.integers(0, n, n), minlength=n)
        items = np.repeat(np.arange(n), drawn)
        counted, direct = pooled_counted(lay, drawn), onepass.pooled(x[items], y[items])
        assert (counted.n, counted.tied_x, counted.tied_y) == (direct.n, direct.tied_x, direct.tied_y)
        if not direct.defined:
            assert not counted.defined
            continue
        assert counted.kendall == direct.kendall  # the same counts, the same arithmetic
        assert counted.spearman == pytest.approx(direct.spearman, abs=1e-12)
        assert counted.kendall == pytest.approx(sps.kendalltau(x[items], y[items]).statistic, abs=1e-12)
