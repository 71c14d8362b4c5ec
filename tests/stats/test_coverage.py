"""Coverage of the bootstrap intervals the Agreement page shows, by simulation (the figures are in bench_coverage).

Held back: on real SummEval ratings (crowd mean as the judge, expert mean as the people) the value on
all 100 documents is the truth; each repeat draws 20 documents with all their summaries, computes a
95% interval and checks it covers the truth. Synthetic: independent items from a bivariate normal
whose correlation is known. With 100 repeats a true 95% coverage falls below 88% with odds under 1%.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from needs import require_file
from paths import SHARED

from geval_core.stats import agreement
from geval_core.types import Scale

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
REPS, RESAMPLES, FLOOR = 100, 150, 0.88
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def held_back_data():
    """(crowd mean, expert mean, document index) of the SummEval rows with crowd coherence ratings."""
    rows = [json.loads(line) for line in require_file(SUMMEVAL, "SummEval").open(encoding="utf-8")]
    rows = [r for r in rows if r.get("turker_annotations")]
    docs = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    crowd = np.array([np.mean(r["turker_annotations"]["coherence"]) for r in rows])
    expert = np.array([r["scores"]["coherence"] for r in rows])
    return crowd, expert, np.array([docs[r["doc_id"]] for r in rows])


@pytest.mark.parametrize("how", ["group", "cluster"])
def test_spearman_interval_covers_the_held_back_value(held_back_data, how):
    x, y, doc = held_back_data
    grouped = how == "group"
    truth = agreement(x, y, doc.tolist() if grouped else None, Scale(1, 5)).spearman
    rng = np.random.default_rng(11)
    hits, widths = 0, []
    for rep in range(REPS):
        keep = np.isin(doc, rng.choice(doc.max() + 1, size=20, replace=False))
        groups = doc[keep].tolist()
        r = agreement(x[keep], y[keep], groups if grouped else None, Scale(1, 5), RESAMPLES, rep,
                      clusters=None if grouped else groups)
        lo, hi = r.ci["spearman"]
        assert lo is not None and lo <= r.spearman <= hi
        hits += lo <= truth <= hi
        widths.append(hi - lo)
    assert hits / REPS >= FLOOR, (how, hits / REPS)
    assert np.median(widths) < 0.6  # covering by being uselessly wide would not count


def test_pearson_interval_of_independent_items_covers_rho():
    rng, rho = np.random.default_rng(12), 0.6
    hits = 0
    for rep in range(REPS):
        d = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=80)
        lo, hi = agreement(d[:, 0], d[:, 1], None, Scale(-10, 10), RESAMPLES, rep).ci["pearson"]
        hits += lo <= rho <= hi
    assert hits / REPS >= FLOOR, hits / REPS
