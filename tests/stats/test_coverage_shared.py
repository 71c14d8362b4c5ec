"""Coverage when judges share item-level signal: a short version of bench/bench_coverage.py's "shared" family.

SummEval's 1,200 summaries with per-expert ratings (100 documents x 12); the people are the experts' mean
coherence; judge k = 0.7 x expert k + 0.3 x the crowd's mean + its own document shift + noise (as
bench/coverage_families.py builds it). Each repeat draws 20 documents WITH replacement. With 200 repeats a true
95% coverage falls below 0.90 with odds under 0.1%.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from needs import require_file
from paths import SHARED

from geval_core.stats import agreement
from geval_core.stats.raters import alpha_intervals, krippendorff_alpha
from geval_core.types import Scale

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
REPS, GROUPS, FLOOR = 200, 20, 0.90
FIVE = Scale(1, 5)


@pytest.fixture(scope="module")
def family():
    """(three judges, people, document code)."""
    rows = [json.loads(line) for line in require_file(SUMMEVAL, "SummEval").open(encoding="utf-8")]
    rows = [r for r in rows if r.get("expert_annotations")]
    doc = np.unique([r["doc_id"] for r in rows], return_inverse=True)[1]
    experts = np.array([r["expert_annotations"]["coherence"] for r in rows], dtype=float)
    crowd = np.array([r["turker_annotations"]["coherence"] for r in rows], dtype=float).mean(axis=1)
    rng = np.random.default_rng(0)
    judges = []
    for k in range(3):
        sd = 0.5 * np.exp(rng.normal(0, 0.5, 100))[doc]
        raw = (
            0.7 * experts[:, k]
            + 0.3 * crowd
            + rng.normal(0, 0.5, 100)[doc]
            + rng.normal(0, 1, len(rows)) * sd
        )
        judges.append(np.round(np.clip(raw, 1, 5), 2))
    return np.column_stack(judges), experts.mean(axis=1), doc


def draws(doc: np.ndarray, seed: int):
    """REPS draws of GROUPS documents with replacement: (item indices, group labels), a repeat a new group."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(doc == d) for d in range(doc.max() + 1)]
    for _ in range(REPS):
        picks = [members[d] for d in rng.integers(0, len(members), size=GROUPS)]
        yield np.concatenate(picks), np.repeat(np.arange(GROUPS), [len(m) for m in picks]).tolist()


def test_the_judges_carry_signal_and_agree_with_each_other(family):
    judges, human, doc = family
    assert 0.55 < agreement(judges[:, 0], human, doc.tolist(), FIVE).spearman < 0.7
    assert 0.4 < agreement(judges[:, 0], judges[:, 1], doc.tolist(), FIVE).spearman < 0.55


def test_group_spearman_and_pearson_cover_at_20_documents(family):
    judges, human, doc = family
    truth = agreement(judges[:, 0], human, doc.tolist(), FIVE)
    hits = dict.fromkeys(("spearman", "pearson", "kappa_quadratic"), 0)
    for rep, (idx, labels) in enumerate(draws(doc, 21)):
        r = agreement(judges[idx, 0], human[idx], labels, FIVE, 300, rep)
        for name in hits:
            lo, hi = r.ci[name]
            hits[name] += lo <= getattr(truth, name) <= hi
        assert "tie_rate" in r.ci_flags  # a group-level tie rate from 20 documents carries its caution
    assert min(hits.values()) / REPS >= FLOOR, hits


def test_panel_and_raters_alpha_cover_at_20_documents(family):
    judges, _, doc = family
    panel, raters = judges[:, :2], np.round(judges)
    truth = krippendorff_alpha(panel, "interval"), krippendorff_alpha(raters, "ordinal")
    hits = [0, 0]
    for rep, (idx, labels) in enumerate(draws(doc, 22)):
        lo, hi = alpha_intervals(panel[idx], 300, rep, ("interval",), clusters=labels)["interval"]
        hits[0] += lo <= truth[0] <= hi
        lo, hi = alpha_intervals(raters[idx], 300, rep, ("ordinal",), clusters=labels)["ordinal"]
        hits[1] += lo <= truth[1] <= hi
    assert min(hits) / REPS >= FLOOR, hits
