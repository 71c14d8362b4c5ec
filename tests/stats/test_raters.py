"""Inter-rater agreement: Krippendorff's alpha against the `krippendorff` package and Krippendorff's own
worked example, pairwise quadratic kappa against the moment identity, on SummEval's per-annotator scores."""

from __future__ import annotations

import json

import numpy as np
import pytest
from needs import require_file, require_module
from paths import SHARED

from geval_core.stats.ceiling import all_mean, human_ceiling, others_mean
from geval_core.stats.raters import (
    alpha_intervals,
    item_spread,
    krippendorff_alpha,
    pairwise_kappa,
    rater_agreement,
    rater_matrix,
)
from geval_core.types import Item, Scale

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers, 12 units.
WORKED = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T  # units x raters


@pytest.fixture(scope="module")
def summeval() -> list[dict]:
    require_file(SUMMEVAL, "SummEval data")
    rows = [json.loads(line) for line in SUMMEVAL.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["expert_annotations"]]


def annotations(rows: list[dict], who: str, dimension: str) -> np.ndarray:
    return np.array([r[who][dimension] for r in rows], dtype=float)


def test_alpha_matches_krippendorffs_worked_example():
    # The published values, to the three decimals the paper gives.
    assert krippendorff_alpha(WORKED, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(WORKED, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(WORKED, "interval") == pytest.approx(0.849, abs=5e-4)


@pytest.mark.parametrize("who", ["expert_annotations", "turker_annotations"])
@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_alpha_matches_the_krippendorff_package_on_summeval(summeval, who, dimension):
    krippendorff = require_module("krippendorff", "pip install krippendorff (the test extra)")
    values = annotations(summeval, who, dimension)
    for level in ("nominal", "ordinal", "interval"):
        ours = krippendorff_alpha(values, level)
        theirs = krippendorff.alpha(reliability_data=values.T, level_of_measurement=level)
        assert ours == pytest.approx(theirs, abs=1e-9), level


def test_alpha_matches_the_package_with_missing_ratings():
    krippendorff = require_module("krippendorff", "pip install krippendorff (the test extra)")
    rng = np.random.default_rng(3)
    for _ in range(5):
        values = rng.integers(1, 6, size=(30, 4)).astype(float)
        values[rng.random(values.shape) < 0.35] = np.nan
        for level in ("nominal", "ordinal", "interval"):
            theirs = krippendorff.alpha(reliability_data=values.T, level_of_measurement=level)
            assert krippendorff_alpha(values, level) == pytest.approx(theirs, abs=1e-9)


def test_interval_alpha_of_weighted_scores_every_one_distinct():
    """A panel's members give weighted scores, nearly all distinct: with thousands of them a table of every pair
    of distinct values needs terabytes (the krippendorff package's too). Against the package on 150 units, and
    on 3,000 against the definition: 1 - D_o / D_e summed pair by pair."""
    krippendorff = require_module("krippendorff", "pip install krippendorff (the test extra)")
    rng = np.random.default_rng(5)
    truth = rng.normal(3, 1, 3000)
    values = np.column_stack([truth + rng.normal(0, s, 3000) for s in (0.4, 0.6, 0.9)])
    values[rng.random(values.shape) < 0.1] = np.nan
    small = values[:150]
    theirs = krippendorff.alpha(reliability_data=small.T, level_of_measurement="interval")
    assert krippendorff_alpha(small, "interval") == pytest.approx(theirs, abs=1e-9)
    units = [row[np.isfinite(row)] for row in values]
    units = [u for u in units if len(u) >= 2]
    pooled = np.concatenate(units)
    n = len(pooled)
    observed = sum(((u[:, None] - u[None, :]) ** 2).sum() / (len(u) - 1) for u in units) / n
    expected = sum(((pooled[i : i + 500, None] - pooled[None, :]) ** 2).sum() for i in range(0, n, 500)) / (
        n * (n - 1)
    )
    by_definition = 1 - observed / expected
    assert krippendorff_alpha(values, "interval") == pytest.approx(by_definition, abs=1e-9)
    low, high = alpha_intervals(values, 200, metrics=("interval",), clusters=[i // 10 for i in range(3000)])[
        "interval"
    ]
    assert low < by_definition < high and high - low < 0.05


def test_interval_bootstrap_equals_the_coincidence_tables_resample_by_resample():
    """The interval alpha of each resample, from moments, equals the coincidence tables' alpha of the same
    resample (the same seed draws the same units), so the interval is the one the tables give."""
    from geval_core.stats.bootstrap import interval
    from geval_core.stats.raters import alpha_of_tables, unit_coincidences, unit_counts

    rng = np.random.default_rng(9)
    values = rng.integers(1, 6, size=(40, 3)).astype(float)
    values[rng.random(values.shape) < 0.25] = np.nan
    levels, counts = unit_counts(values)
    tables = unit_coincidences(counts)
    draws = np.random.default_rng(0).integers(0, 40, size=(300, 40))  # alpha_intervals' draws for seed 0
    by_tables = [float(alpha_of_tables(tables[d].sum(axis=0), levels, "interval")) for d in draws]
    estimate = float(alpha_of_tables(tables.sum(axis=0), levels, "interval"))
    expected = interval(by_tables, estimate, 40)
    assert alpha_intervals(values, 300, metrics=("interval",))["interval"] == pytest.approx(
        expected, abs=1e-12
    )
    assert alpha_intervals(values, 300, metrics=("interval", "ordinal"))["interval"] == pytest.approx(
        expected, abs=1e-12
    )


def test_alpha_is_undefined_without_pairs_or_variation():
    assert krippendorff_alpha(np.array([[1.0, NAN], [2.0, NAN]])) is None  # no unit with two ratings
    assert krippendorff_alpha(np.array([[3.0, 3.0], [3.0, 3.0]])) is None  # no expected disagreement
    assert krippendorff_alpha(np.array([[1.0, 1.0], [2.0, 2.0]]), "ordinal") == 1.0


def quadratic_kappa(x: np.ndarray, y: np.ndarray) -> float:
    """Quadratic-weighted kappa by its moment identity: 2 cov / (var x + var y + (mean x - mean y)^2)."""
    return 2 * np.cov(x, y, bias=True)[0, 1] / (x.var() + y.var() + (x.mean() - y.mean()) ** 2)


def test_pairwise_quadratic_kappa_matches_the_moment_identity(summeval):
    items = [
        Item(
            r["id"],
            {},
            {f"coherence.{k}": v for k, v in enumerate(r["expert_annotations"]["coherence"])},
            r["doc_id"],
        )
        for r in summeval
    ]
    matrix = rater_matrix(items, "coherence")
    found = pairwise_kappa(matrix, Scale(1, 5))
    assert [(p["a"], p["b"]) for p in found] == [
        ("coherence.0", "coherence.1"),
        ("coherence.0", "coherence.2"),
        ("coherence.1", "coherence.2"),
    ]
    for p, (a, b) in zip(found, [(0, 1), (0, 2), (1, 2)], strict=True):
        assert p["items"] == 1200
        assert p["kappa"] == pytest.approx(
            quadratic_kappa(matrix.values[:, a], matrix.values[:, b]), abs=1e-9
        )


def test_report_counts_and_a_bootstrap_interval_around_alpha(summeval):
    values = annotations(summeval, "expert_annotations", "consistency")
    values[:10, 1:] = np.nan  # ten items with one rating: not pairable
    items = [
        Item(str(n), {}, {f"c.{k}": v for k, v in enumerate(row) if not np.isnan(v)})
        for n, row in enumerate(values)
    ]
    result = rater_agreement(rater_matrix(items, "c"), Scale(1, 5), bootstrap=300, seed=1)
    assert (result["items"], result["items_rated"], result["raters"]) == (1190, 1200, 3)
    assert result["pairable_values"] == 3 * 1190
    assert result["raters_per_item"] == {"1": 10, "3": 1190}
    for level in ("nominal", "ordinal", "interval"):
        lo, hi = result["ci"][f"alpha_{level}"]
        assert lo < result[f"alpha_{level}"] < hi
    assert alpha_intervals(values, 300, seed=1) == alpha_intervals(values, 300, seed=1)


def test_item_spread_and_leave_one_out_means():
    values = np.array([[1.0, 5.0, 3.0], [2.0, 2.0, NAN], [4.0, NAN, NAN]])
    items = [
        Item(str(n), {}, {f"r.{k}": v for k, v in enumerate(row) if not np.isnan(v)})
        for n, row in enumerate(values)
    ]
    spread = item_spread(rater_matrix(items, "r"))
    assert [s["item"] for s in spread] == ["0", "1"] and spread[0]["range"] == 4.0
    assert spread[0]["sd"] == pytest.approx(np.std([1, 5, 3]))
    np.testing.assert_allclose(others_mean(values, 0), [4.0, 2.0, NAN])
    np.testing.assert_allclose(all_mean(values), [3.0, 2.0, 4.0])


def test_human_ceiling_on_summeval_puts_each_expert_against_the_others(summeval):
    items = [
        Item(
            r["id"],
            {},
            {f"coherence.{k}": v for k, v in enumerate(r["expert_annotations"]["coherence"])},
            r["doc_id"],
        )
        for r in summeval
    ]
    matrix = rater_matrix(items, "coherence")
    judge = {i.id: float(np.mean(list(i.human.values()))) for i in items}  # a "judge" equal to the mean
    rows = human_ceiling(matrix, Scale(1, 5), judge, grouped=False)
    assert [r["who"] for r in rows][-1] == "judge" and len(rows) == 4
    assert rows[-1]["spearman"] == pytest.approx(1.0)
    from scipy import stats as sp

    expected = sp.spearmanr(matrix.values[:, 0], others_mean(matrix.values, 0))[0]
    assert rows[0]["spearman"] == pytest.approx(expected, abs=1e-9)
    assert rows[0]["reading"] == "dataset" and rows[0]["items"] == 1200
