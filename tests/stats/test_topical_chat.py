"""The statistics on Topical-Chat human judgments (USR means): one human aspect predicting another.

Read from ../shared (never copied into the project); skipped with a reason when the file is absent,
a failure under CI (see needs.py).
Every figure is checked against scipy per dialogue context and a hand-built kappa table.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st
from click.testing import CliRunner
from needs import require_file
from paths import SHARED
from reference_stats import grouped_by_scipy

from geval_core import agreement
from geval_core.cli import cli
from geval_core.types import Scale

TOPICAL = SHARED / "data" / "topical_chat" / "topical_chat.jsonl"

require_file(TOPICAL, "Topical-Chat data")


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with TOPICAL.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def column(rows: list[dict], aspect: str) -> np.ndarray:
    return np.array([float(r["scores"][aspect]) for r in rows])


def test_data_shape(rows):
    assert len(rows) == 360 and len({r["doc_id"] for r in rows}) == 60


@pytest.mark.parametrize("aspect", ["coherence", "naturalness", "engagingness"])
def test_group_level_aspect_predicting_overall_matches_scipy(rows, aspect):
    x, y, docs = column(rows, aspect), column(rows, "overall"), [r["doc_id"] for r in rows]
    expected = grouped_by_scipy(x, y, docs)
    result = agreement(x, y, docs, Scale(1, 5))
    assert (result.reading, result.items) == ("group", 360)
    assert (result.groups, result.groups_skipped) == (expected["groups"], expected["skipped"])
    assert result.groups + result.groups_skipped == 60
    assert result.spearman == pytest.approx(expected["spearman"], abs=1e-12)
    assert result.kendall == pytest.approx(expected["kendall"], abs=1e-12)
    assert result.tie_rate == pytest.approx(expected["tie_rate"], abs=1e-15)


def test_quadratic_kappa_on_the_three_point_scale_by_hand(rows):
    x, y = column(rows, "naturalness"), column(rows, "coherence")
    a = np.clip(np.floor(x + 0.5), 1, 3).astype(int) - 1  # nearest point, halves up
    b = np.clip(np.floor(y + 0.5), 1, 3).astype(int) - 1
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)
    expected = np.outer(table.sum(1), table.sum(0)) / table.sum()
    w = np.array([[(i - j) ** 2 / 4 for j in range(3)] for i in range(3)])
    result = agreement(x, y, scale=Scale(1, 3))
    assert result.kappa_quadratic == pytest.approx(1 - (w * table).sum() / (w * expected).sum(), abs=1e-12)
    assert result.pearson == pytest.approx(st.pearsonr(x, y).statistic, abs=1e-12)


def test_geval_agree_on_the_real_file(rows, tmp_path, monkeypatch):
    """The command line end to end: dotted score and rating fields, grouped by dialogue context."""
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "unused.db"))
    out = CliRunner().invoke(
        cli,
        [
            "agree",
            str(TOPICAL),
            "--data",
            str(TOPICAL),
            "--score-field",
            "scores.coherence",
            "--human",
            "scores.overall",
            "--group-by",
            "doc_id",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    expected = grouped_by_scipy(
        column(rows, "coherence"), column(rows, "overall"), [r["doc_id"] for r in rows]
    )
    assert (got["reading"], got["items"], got["groups"], got["groups_skipped"]) == (
        "group",
        360,
        expected["groups"],
        expected["skipped"],
    )
    assert got["spearman"] == pytest.approx(expected["spearman"], abs=1e-12)
    assert got["kendall"] == pytest.approx(expected["kendall"], abs=1e-12)
    assert got["tie_rate"] == pytest.approx(expected["tie_rate"], abs=1e-15)
