"""The statistics on real human judgments: SummEval turker means predicting the expert means.

Read from ../shared (never copied into the project); skipped with a reason when the file is absent,
a failure under CI (see needs.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st
from needs import require_file
from paths import SHARED
from reference_stats import grouped_by_scipy

from geval_core import agreement, tie_rate
from geval_core.types import Scale

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")

require_file(SUMMEVAL, "SummEval data")


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with SUMMEVAL.open(encoding="utf-8") as handle:
        return [r for r in map(json.loads, handle) if r.get("turker_annotations")]


def columns(rows: list[dict], dim: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    turker = np.array([sum(r["turker_annotations"][dim]) / len(r["turker_annotations"][dim]) for r in rows])
    expert = np.array([r["scores"][dim] for r in rows])
    return turker, expert, [r["doc_id"] for r in rows]


def test_data_shape(rows):
    assert len(rows) == 1200 and len({r["doc_id"] for r in rows}) == 100


@pytest.mark.parametrize("dim", DIMENSIONS)
def test_group_level_turkers_vs_experts_match_scipy_per_document(rows, dim):
    turker, expert, docs = columns(rows, dim)
    expected = grouped_by_scipy(turker, expert, docs)
    result = agreement(turker, expert, docs, Scale(1, 5))
    assert result.reading == "group" and result.items == 1200
    assert (result.groups, result.groups_skipped) == (expected["groups"], expected["skipped"])
    assert result.groups + result.groups_skipped == 100
    assert result.spearman == pytest.approx(expected["spearman"], abs=1e-12)
    assert result.kendall == pytest.approx(expected["kendall"], abs=1e-12)
    assert result.tie_rate == pytest.approx(expected["tie_rate"], abs=1e-15)


def test_consistency_skips_the_four_documents_with_a_constant_side(rows):
    turker, expert, docs = columns(rows, "consistency")
    result = agreement(turker, expert, docs)
    constant = [
        doc
        for doc in set(docs)
        if np.ptp(expert[[i for i, d in enumerate(docs) if d == doc]]) == 0
        or np.ptp(turker[[i for i, d in enumerate(docs) if d == doc]]) == 0
    ]
    assert (result.groups, result.groups_skipped, len(constant)) == (96, 4, 4)


@pytest.mark.parametrize("dim", DIMENSIONS)
def test_one_expert_predicting_the_other_two(rows, dim):
    """A predictor that does agree: expert 1 against the mean of experts 2 and 3, per document."""
    first = np.array([r["expert_annotations"][dim][0] for r in rows], dtype=float)
    others = np.array([sum(r["expert_annotations"][dim][1:]) / 2 for r in rows])
    docs = [r["doc_id"] for r in rows]
    expected = grouped_by_scipy(first, others, docs)
    result = agreement(first, others, docs, Scale(1, 5))
    assert result.spearman == pytest.approx(expected["spearman"], abs=1e-12) and result.spearman > 0.3
    assert result.kendall == pytest.approx(expected["kendall"], abs=1e-12)
    assert (result.groups, result.groups_skipped) == (expected["groups"], expected["skipped"])
    assert result.tie_rate == pytest.approx(expected["tie_rate"], abs=1e-15)


@pytest.mark.parametrize("dim", DIMENSIONS)
def test_dataset_level_and_kappa_on_real_data(rows, dim):
    turker, expert, _ = columns(rows, dim)
    result = agreement(turker, expert, scale=Scale(1, 5))
    assert result.spearman == pytest.approx(st.spearmanr(turker, expert).statistic, abs=1e-12)
    assert result.kendall == pytest.approx(st.kendalltau(turker, expert).statistic, abs=1e-12)
    assert result.pearson == pytest.approx(st.pearsonr(turker, expert).statistic, abs=1e-12)
    _, counts = np.unique(np.round(turker, 6), return_counts=True)  # tied pairs counted by hand
    assert result.tie_rate == pytest.approx((counts * (counts - 1) / 2).sum() / (1200 * 1199 / 2), abs=1e-15)
    assert tie_rate(turker) == result.tie_rate
    # Quadratic kappa by hand: round halves up to 1..5, build the 5x5 table, 1 - sum(w*O) / sum(w*E).
    a = np.clip(np.floor(turker + 0.5), 1, 5).astype(int) - 1
    b = np.clip(np.floor(expert + 0.5), 1, 5).astype(int) - 1
    table = np.zeros((5, 5))
    for i, j in zip(a, b, strict=True):
        table[i, j] += 1
    expected_table = np.outer(table.sum(1), table.sum(0)) / table.sum()
    w = np.array([[(i - j) ** 2 / 16 for j in range(5)] for i in range(5)])
    assert result.kappa_quadratic == pytest.approx(
        1 - (w * table).sum() / (w * expected_table).sum(), abs=1e-12
    )
