"""Correlations, tie rate, kappa, group-level reading, bootstrap and the replies curve."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st
from hand_intervals import studentized
from hypothesis import given, settings
from hypothesis import strategies as st_h

from geval_core import agreement, tie_rate
from geval_core.stats import cohen_kappa, kendall, pearson, replies_curve, spearman
from geval_core.types import Scale

FIVE = Scale(1, 5)


def noisy(n: int, seed: int, levels: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Integer judge scores with many ties and a correlated continuous human score."""
    rng = np.random.default_rng(seed)
    x = rng.integers(1, levels + 1, n).astype(float)
    return x, x + rng.normal(0, 1.2, n)


# ---- pairwise correlations -----------------------------------------------------------------------


def test_hand_computed_correlations():
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    assert kendall(x, y) == pytest.approx(0.6)  # 8 concordant, 2 discordant of 10 pairs
    assert spearman(x, y) == pytest.approx(0.8)  # 1 - 6 * 4 / (5 * 24)
    assert pearson(x, y) == pytest.approx(0.8)


@pytest.mark.parametrize("n", [2, 3, 17, 64, 65, 500, 3000])
def test_correlations_match_scipy_with_ties(n):
    x, y = noisy(n, seed=n)
    y = np.round(y)  # ties on both sides exercise tau-b's correction
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        pytest.skip("constant side drawn")
    assert kendall(x, y) == pytest.approx(st.kendalltau(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(st.spearmanr(x, y).statistic, abs=1e-12)
    assert pearson(x, y) == pytest.approx(st.pearsonr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize("fn", [spearman, kendall, pearson])
def test_null_not_nan_on_constant_side_or_too_few_items(fn):
    assert fn([3, 3, 3], [1, 2, 3]) is None
    assert fn([1, 2, 3], [4, 4, 4]) is None
    assert fn([1], [2]) is None
    assert fn([], []) is None


def test_missing_scores_are_dropped_pairwise():
    assert kendall([1, None, 2, 3, float("nan")], [1, 5, 2, 3, 1]) == pytest.approx(1.0)
    result = agreement([1, None, 2, 3], [1, 2, None, 3])
    assert (result.items, result.missing) == (2, 2) and result.spearman == pytest.approx(1.0)


def test_values_equal_to_six_decimals_are_ties():
    assert kendall([1.0, 1.0000000001, 2.0], [1, 2, 3]) == pytest.approx(
        st.kendalltau([1, 1, 2], [1, 2, 3]).statistic
    )


# ---- tie rate ------------------------------------------------------------------------------------


def test_tie_rate_by_hand():
    assert tie_rate([1, 1, 2, 2, 2, 3]) == pytest.approx(4 / 15)
    assert tie_rate([1.0000001, 1.0000002, 1.00001, 1.00002]) == pytest.approx(1 / 6)
    assert tie_rate([3, None, 3]) == 1.0
    assert tie_rate([3]) is None and tie_rate([]) is None


def test_grouped_tie_rate_counts_within_group_pairs_only():
    # group a: 1,1,2 (1 tie of 3 pairs); group b: 3,3 (1 of 1); the 1s in c never pair with a's.
    scores = [1, 1, 2, 3, 3, 1]
    assert tie_rate(scores, ["a", "a", "a", "b", "b", "c"]) == pytest.approx(2 / 4)


def brute_tie_rate(scores, groups):
    pairs = tied = 0
    for (s1, g1), (s2, g2) in itertools.combinations(zip(scores, groups, strict=True), 2):
        if g1 == g2:
            pairs += 1
            tied += round(s1, 6) == round(s2, 6)
    return tied / pairs if pairs else None


@settings(max_examples=200, deadline=None)
@given(
    st_h.lists(
        st_h.tuples(st_h.sampled_from([1.0, 2.0, 2.5, 3.0, 3.0000001, 4.25]), st_h.integers(0, 3)),
        max_size=40,
    )
)
def test_tie_rate_matches_a_brute_force_pair_count(rows):
    scores, groups = [s for s, _ in rows], [g for _, g in rows]
    assert tie_rate(scores) == pytest.approx(brute_tie_rate(scores, [0] * len(scores)))
    assert tie_rate(scores, groups) == pytest.approx(brute_tie_rate(scores, groups))


# ---- Cohen's kappa -------------------------------------------------------------------------------

JUDGE, HUMAN = [1, 1, 2, 2, 3, 3], [1, 2, 2, 2, 3, 1]


def test_kappa_by_hand():
    # Table (judge rows): [1,1,0],[0,2,0],[1,0,1]; p_o = 4/6, p_e = (2*2 + 2*3 + 2*1)/36 = 1/3.
    assert cohen_kappa(JUDGE, HUMAN, Scale(1, 3)) == pytest.approx(0.5)
    # Linear: observed disagreement 1.5, expected 2.5.
    assert cohen_kappa(JUDGE, HUMAN, Scale(1, 3), "linear") == pytest.approx(0.4)
    # Quadratic: observed 1.25, expected 1.75.
    assert cohen_kappa(JUDGE, HUMAN, Scale(1, 3), "quadratic") == pytest.approx(2 / 7)


def test_kappa_rounds_continuous_scores_to_the_nearest_point_halves_up():
    judge = [0.6, 1.49, 1.5, 2.5, 2.4999, 9.0]  # -> 1, 1, 2, 3, 2, 3 on a 1-3 scale (clipped)
    assert cohen_kappa(judge, [1, 1, 2, 3, 2, 3], Scale(1, 3)) == pytest.approx(1.0)
    assert cohen_kappa(judge, [1, 1, 2, 2, 2, 3], Scale(1, 3)) < 1.0


def test_kappa_is_null_when_undefined():
    assert cohen_kappa([2, 2], [2, 2], Scale(1, 3)) is None
    assert cohen_kappa([], [], Scale(1, 3)) is None
    assert cohen_kappa([1, 2], [1, 2], Scale(3, 3)) is None


def test_no_kappa_on_an_unbounded_span():
    result = agreement([0, 500, 1000, 20], [3, 400, 900, 10], bootstrap=20)
    assert result.kappa is None and result.kappa_quadratic is None and result.ci["kappa"] == [None, None]
    assert result.spearman == pytest.approx(1.0) and "No kappa" in result.note
    grouped = agreement([0, 500, 1000, 20], [3, 400, 900, 10], ["a", "a", "b", "b"], bootstrap=20)
    assert grouped.kappa_linear is None and grouped.ci["kappa_linear"] == [None, None]


def test_kappa_bad_weights():
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([1, 2], [1, 2], FIVE, "cubic")


# ---- agreement -----------------------------------------------------------------------------------


def per_group_scipy(x, y, groups):
    """The paper's reading computed independently: scipy per group, skip constant, plain average."""
    rhos, taus, rs, skipped = [], [], [], 0
    for g in sorted(set(groups)):
        idx = [i for i, h in enumerate(groups) if h == g]
        gx, gy = np.asarray(x)[idx], np.asarray(y)[idx]
        if len(idx) < 2 or np.ptp(gx) == 0 or np.ptp(gy) == 0:
            skipped += 1
            continue
        rhos.append(st.spearmanr(gx, gy).statistic)
        taus.append(st.kendalltau(gx, gy).statistic)
        rs.append(st.pearsonr(gx, gy).statistic)
    return sum(rhos) / len(rhos), sum(taus) / len(taus), sum(rs) / len(rs), len(rhos), skipped


@pytest.mark.parametrize(("size", "n_groups"), [(6, 40), (16, 30), (90, 4)])
def test_group_level_matches_scipy_per_group_averaged(size, n_groups):
    x, y = noisy(size * n_groups, seed=size)
    groups = [f"doc{i // size}" for i in range(len(x))]
    x[:size] = 3.0  # doc0: constant judge side -> skipped
    groups[-1] = "lonely"  # one-item group -> skipped
    rho, tau, r, used, skipped = per_group_scipy(x, y, groups)
    result = agreement(x, y, groups, FIVE)
    assert (result.reading, result.items, result.groups, result.groups_skipped) == (
        "group",
        len(x),
        used,
        skipped,
    )
    assert skipped == 2
    assert result.spearman == pytest.approx(rho, abs=1e-12)
    assert result.kendall == pytest.approx(tau, abs=1e-12)
    assert result.pearson == pytest.approx(r, abs=1e-12)
    assert result.tie_rate == pytest.approx(brute_tie_rate(list(x), groups))


def test_small_and_large_groups_in_one_call():
    # Groups up to 64 items take the vectorised pairwise path, larger ones scipy: both in one average.
    sizes = [5, 70, 16, 100, 64, 65]
    x, y = noisy(sum(sizes), seed=21)
    groups = [g for g, size in enumerate(sizes) for _ in range(size)]
    rho, tau, r, used, skipped = per_group_scipy(x, y, groups)
    result = agreement(x, y, groups, FIVE)
    assert (result.groups, result.groups_skipped) == (used, skipped) == (6, 0)
    assert result.kendall == pytest.approx(tau, abs=1e-12) and result.spearman == pytest.approx(
        rho, abs=1e-12
    )


@settings(max_examples=150, deadline=None)
@given(
    st_h.lists(
        st_h.tuples(st_h.sampled_from([1.0, 2.0, 2.5, 3.0, 4.0]), st_h.integers(1, 5), st_h.integers(0, 4)),
        min_size=2,
        max_size=60,
    )
)
def test_group_level_matches_scipy_on_random_tied_data(rows):
    x, y, groups = [r[0] for r in rows], [float(r[1]) for r in rows], [r[2] for r in rows]
    result = agreement(x, y, groups, FIVE)
    if result.groups == 0:
        assert result.spearman is None and result.kendall is None and result.pearson is None
        return
    rho, tau, r, used, skipped = per_group_scipy(x, y, groups)
    assert (result.groups, result.groups_skipped) == (used, skipped)
    assert result.spearman == pytest.approx(rho, abs=1e-12)
    assert result.kendall == pytest.approx(tau, abs=1e-12)
    assert result.pearson == pytest.approx(r, abs=1e-12)


def test_dataset_level_reading():
    x, y = noisy(400, seed=3)
    result = agreement(x, y, scale=FIVE)
    assert (result.reading, result.items, result.groups, result.groups_skipped) == ("dataset", 400, 0, 0)
    assert result.kendall == pytest.approx(st.kendalltau(x, y).statistic, abs=1e-12)
    assert result.tie_rate == pytest.approx(tie_rate(x))
    assert result.human_tie_rate == pytest.approx(tie_rate(y))
    assert result.kappa_quadratic == pytest.approx(cohen_kappa(x, y, FIVE, "quadratic"))


def test_agreement_dict_states_reading_and_rounding():
    d = agreement([1, 2, 3, 4], [1, 3, 2, 4]).to_dict()
    for key in (
        "spearman",
        "kendall",
        "pearson",
        "tie_rate",
        "kappa",
        "kappa_linear",
        "kappa_quadratic",
        "items",
        "groups",
        "groups_skipped",
        "reading",
        "ci",
        "note",
    ):
        assert key in d
    assert d["scale"] == "1-4" and "inferred" in d["note"] and "nearest point" in d["note"]
    assert d["ci"] == {}


def test_all_groups_constant_gives_null_correlations():
    result = agreement([1, 1, 2, 2], [1, 2, 3, 4], ["a", "a", "b", "b"], FIVE)
    assert result.spearman is None and result.kendall is None and result.pearson is None
    assert (result.groups, result.groups_skipped, result.tie_rate) == (0, 2, 1.0)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="same length"):
        agreement([1, 2], [1, 2, 3])


# ---- bootstrap -----------------------------------------------------------------------------------


def test_grouped_bootstrap_resamples_groups_like_a_direct_loop():
    x, y = noisy(16 * 25, seed=7)
    groups = [i // 16 for i in range(len(x))]
    result = agreement(x, y, groups, FIVE, bootstrap=300, seed=5)
    per_group = [
        st.spearmanr(x[g * 16 : (g + 1) * 16], y[g * 16 : (g + 1) * 16]).statistic for g in range(25)
    ]
    picks = np.random.default_rng(5).integers(0, 25, size=(300, 25))
    means = [np.mean([per_group[g] for g in row]) for row in picks]
    assert result.ci["spearman"] == pytest.approx(studentized(means, np.mean(per_group), 25), abs=1e-12)
    assert result.ci_resampled == "groups" and result.ci_units == 25 and not result.ci_warning
    lo, hi = result.ci["kendall"]
    assert lo < result.kendall < hi
    assert set(result.ci) == {
        "spearman",
        "kendall",
        "pearson",
        "tie_rate",
        "kappa",
        "kappa_linear",
        "kappa_quadratic",
    }


def test_item_bootstrap_is_reproducible_and_brackets_the_estimate():
    x, y = noisy(200, seed=9)
    a = agreement(x, y, scale=FIVE, bootstrap=200, seed=1)
    b = agreement(x, y, scale=FIVE, bootstrap=200, seed=1)
    assert a.ci == b.ci and a.bootstrap == 200
    picks = np.random.default_rng(1).integers(0, 200, size=(200, 200))
    taus = [st.kendalltau(x[p], y[p]).statistic for p in picks]
    assert a.ci["kendall"] == pytest.approx(studentized(taus, a.kendall, 200), abs=1e-12)
    assert (a.ci_resampled, a.ci_units) == ("items", 200)
    for metric in ("spearman", "pearson", "kappa_quadratic"):
        lo, hi = a.ci[metric]
        assert lo <= getattr(a, metric) <= hi


def test_item_bootstrap_tie_rate_ignores_an_item_paired_with_its_own_copy():
    # Twelve distinct judge scores never tie; a resample that draws an item twice must not count
    # that copy as a tie, so the interval stays at [0, 0].
    x = [float(v) for v in range(1, 13)]
    y = [1.0, 3.0, 2.0, 5.0, 4.0, 6.0, 8.0, 7.0, 9.0, 11.0, 10.0, 12.0]
    result = agreement(x, y, bootstrap=200, seed=3)
    assert result.tie_rate == 0.0
    assert result.ci["tie_rate"] == [0.0, 0.0]
    # With ties present: each resample's rate over distinct-item pairs, checked by brute force.
    x = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 7.0, 8.0])
    y = np.arange(12.0)
    picks = np.random.default_rng(4).integers(0, 12, size=(100, 12))
    rates = []
    for p in picks:
        pairs = [(i, j) for i in range(12) for j in range(i + 1, 12) if p[i] != p[j]]
        rates.append(sum(x[p[i]] == x[p[j]] for i, j in pairs) / len(pairs) if pairs else np.nan)
    rates = np.array(rates)
    r = agreement(x, y, bootstrap=100, seed=4)
    expected = studentized(rates[np.isfinite(rates)], r.tie_rate, 12, bounded=False)
    assert r.ci["tie_rate"] == pytest.approx(expected, abs=1e-12)


# ---- replies curve -------------------------------------------------------------------------------


def test_replies_curve_scores_items_by_their_first_k_parsed_replies():
    rng = np.random.default_rng(11)
    human = rng.integers(1, 6, 60).astype(float)
    replies = [[str(int(np.clip(h + rng.integers(-1, 2), 1, 5))) for _ in range(6)] for h in human]
    replies[0] = ["junk", "4", "9", "5", "5", "5"]  # unparsed and out-of-scale replies are skipped
    curve = replies_curve(replies, human, FIVE)
    assert [c["k"] for c in curve] == [1, 2, 4, 5]
    first2 = [np.mean([float(v) for v in r if v.isdigit() and 1 <= int(v) <= 5][:2]) for r in replies]
    assert curve[1]["spearman"] == pytest.approx(st.spearmanr(first2, human).statistic, abs=1e-12)
    assert curve[1]["kendall"] == pytest.approx(st.kendalltau(first2, human).statistic, abs=1e-12)
    assert curve[1]["tie_rate"] == pytest.approx(brute_tie_rate(first2, [0] * 60))
    assert curve[0]["tie_rate"] > curve[-1]["tie_rate"]  # averaging more replies breaks ties
    assert curve[0]["reading"] == "dataset" and curve[0]["items"] == 60
