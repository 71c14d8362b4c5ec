"""Intervals near +-1: a near-perfect judge on SummEval gets a sane interval inside [-1, 1] (Fisher's z with
resamples at exactly 1 clipped to 1 - 1e-6 gave it [0.774, 1.0]), flagged as near the bound."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st
from hand_intervals import studentized
from needs import require_file
from paths import SHARED

from geval_core.stats import agreement
from geval_core.stats.raters import alpha_intervals, krippendorff_alpha
from geval_core.types import Scale

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
FIVE = Scale(1, 5)


@pytest.fixture(scope="module")
def near_perfect():
    """(judge, people, document) on SummEval's first 20 documents: the experts' mean coherence, and a judge
    equal to it but on 0.5% of the items, moved by N(0, 0.5)."""
    rows = [json.loads(line) for line in require_file(SUMMEVAL, "SummEval").open(encoding="utf-8")]
    codes = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    doc = np.array([codes[r["doc_id"]] for r in rows])
    human = np.array([r["scores"]["coherence"] for r in rows], dtype=float)
    rng = np.random.default_rng(2)
    moved = rng.random(len(human)) < 0.005
    judge = human.copy()
    judge[moved] += rng.normal(0, 0.5, moved.sum())
    keep = doc < 20
    return judge[keep], human[keep], doc[keep]


def test_from_50_documents_a_figure_near_1_carries_no_caution():
    rows = [json.loads(line) for line in require_file(SUMMEVAL, "SummEval").open(encoding="utf-8")]
    doc = np.unique([r["doc_id"] for r in rows], return_inverse=True)[1]
    human = np.array([r["scores"]["coherence"] for r in rows], dtype=float)
    judge = human + np.random.default_rng(1).normal(0, 0.05, len(human))
    keep = doc < 50
    r = agreement(judge[keep], human[keep], doc[keep].tolist(), FIVE, bootstrap=200, seed=0)
    assert r.spearman > 0.95 and r.ci_flags == {} and r.ci_flag == ""
    few = agreement(judge[doc < 49], human[doc < 49], doc[doc < 49].tolist(), FIVE, bootstrap=200, seed=0)
    assert "near 1 with 49 groups" in few.ci_flags["spearman"]


def fisher_z(values, estimate: float, units: int) -> list[float]:
    """The interval before: studentized on Fisher's z, values clipped to 1 - 1e-6."""
    edge = 1 - 1e-6
    z = np.arctanh(np.clip(values, -edge, edge))
    half = st.t.ppf(0.975, units - 1) * np.sqrt(units / (units - 1)) * z.std(ddof=1)
    centre = np.arctanh(min(estimate, edge))
    return [float(np.tanh(centre - half)), float(np.tanh(centre + half))]


def test_a_near_perfect_judge_gets_a_sane_interval(near_perfect):
    judge, human, doc = near_perfect
    r = agreement(judge, human, doc.tolist(), FIVE, bootstrap=400, seed=0)
    per_group = np.array([st.spearmanr(judge[doc == g], human[doc == g]).statistic for g in range(20)])
    assert r.spearman == pytest.approx(per_group.mean()) and 0.999 < r.spearman < 1
    picks = np.random.default_rng(0).integers(0, 20, size=(400, 20))
    means = per_group[picks].mean(axis=1)
    assert (means == 1).mean() > 0.3  # resamples reach the bound: what made Fisher's z explode
    assert fisher_z(means, r.spearman, 20)[0] < 0.8
    low, high = r.ci["spearman"]
    assert [low, high] == pytest.approx(studentized(means, r.spearman, 20), abs=1e-12)
    assert 0.98 < low <= r.spearman <= high <= 1.0
    assert "near 1" in r.ci_flags["spearman"] and "spearman" in r.ci_flag


def test_pooled_and_item_readings_stay_inside_the_bound(near_perfect):
    judge, human, doc = near_perfect
    for kwargs in ({"clusters": doc.tolist()}, {}):
        r = agreement(judge, human, None, FIVE, bootstrap=300, seed=1, **kwargs)
        for name in ("spearman", "kendall", "pearson", "kappa_quadratic"):
            low, high = r.ci[name]
            assert -1 <= low <= getattr(r, name) <= high <= 1, (kwargs, name)
        assert r.ci["spearman"][0] > 0.98
        assert "near 1" in r.ci_flags["spearman"]  # 20 documents, or their 320 items resampled one by one
    flipped = agreement(-judge, human, doc.tolist(), FIVE, bootstrap=300, seed=2)
    low, high = flipped.ci["spearman"]
    assert -1.0 <= low <= flipped.spearman <= high < -0.98


def test_alpha_of_near_identical_raters_stays_inside_the_bound(near_perfect):
    judge, human, doc = near_perfect
    values = np.column_stack([judge, human])
    value = krippendorff_alpha(values, "interval")
    low, high = alpha_intervals(values, 300, 0, ("interval",), clusters=doc.tolist())["interval"]
    assert 0.98 < low <= value <= high <= 1.0
