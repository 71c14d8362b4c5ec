"""Coverage of the workbench's 95% intervals by simulation: a short version of bench/bench_coverage.py.

The population is SummEval's 100 documents x 16 summaries, the experts' coherence as the people and a
judge with real signal and strong document effects (group Spearman ~0.61; checked first, so the
test cannot pass on a judge without signal, where item and group resampling look alike). Each repeat
draws 20 documents WITH replacement, calls the workbench and checks its interval covers the
population's value. With 200 repeats a true 95% coverage falls below 0.90 with odds under 0.1%, and a
true 88% (what item resampling and percentile intervals gave) passes 0.90 with odds under 15%.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st
from needs import require_file
from paths import SHARED

from geval_core.stats import agreement
from geval_core.stats.ppi import ppi_mean
from geval_core.stats.raters import alpha_intervals, krippendorff_alpha
from geval_core.types import Scale

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
REPS, GROUPS, FLOOR = 200, 20, 0.90
FIVE = Scale(1, 5)


@pytest.fixture(scope="module")
def population():
    """(judge, human, document code, experts) as bench/coverage_population.py builds them (seed 0)."""
    rows = [json.loads(line) for line in require_file(SUMMEVAL, "SummEval").open(encoding="utf-8")]
    codes = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    doc = np.array([codes[r["doc_id"]] for r in rows])
    human = np.array([r["scores"]["coherence"] for r in rows], dtype=float)
    experts = np.array(
        [(r.get("expert_annotations") or {}).get("coherence") or [np.nan] * 3 for r in rows], dtype=float
    )
    rng = np.random.default_rng(0)
    sd = 1.1 * np.exp(rng.normal(0, 0.5, 100))[doc]
    judge = human + rng.normal(0, 0.5, 100)[doc] + rng.normal(0, 1, len(rows)) * sd
    return np.round(np.clip(judge, 1, 5), 2), human, doc, experts


def draws(doc: np.ndarray, seed: int):
    """REPS draws of GROUPS documents with replacement: (item indices, group labels), a repeat a new group."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(doc == d) for d in range(doc.max() + 1)]
    for _ in range(REPS):
        picks = [members[d] for d in rng.integers(0, len(members), size=GROUPS)]
        yield np.concatenate(picks), np.repeat(np.arange(GROUPS), [len(m) for m in picks]).tolist()


def test_the_simulated_judge_carries_signal(population):
    judge, human, doc, _ = population
    per_doc = [st.spearmanr(judge[doc == d], human[doc == d]).statistic for d in range(100)]
    assert 0.55 <= np.nanmean(per_doc) <= 0.67
    assert agreement(judge, human, doc.tolist(), FIVE).spearman == pytest.approx(np.nanmean(per_doc))


@pytest.mark.parametrize("reading", ["group", "pooled"])
def test_spearman_intervals_cover_at_20_groups(population, reading):
    judge, human, doc, _ = population
    grouped = reading == "group"
    truth = agreement(judge, human, doc.tolist() if grouped else None, FIVE).spearman
    hits, widths = 0, []
    for rep, (idx, labels) in enumerate(draws(doc, 11)):
        r = agreement(
            judge[idx],
            human[idx],
            labels if grouped else None,
            FIVE,
            300 if grouped else 120,
            rep,
            clusters=None if grouped else labels,
        )
        lo, hi = r.ci["spearman"]
        assert r.ci_resampled == "groups" and r.ci_units == GROUPS and lo <= r.spearman <= hi
        hits += lo <= truth <= hi
        widths.append(hi - lo)
    assert hits / REPS >= FLOOR, (reading, hits / REPS)
    assert np.median(widths) < 0.35  # covering by being uselessly wide would not count


def test_item_resampling_of_grouped_data_fails_the_same_bound(population):
    """The bound can fail: resampling items of whole documents (what a file got before) covers far less."""
    judge, human, doc, _ = population
    truth = agreement(judge, human, None, FIVE).spearman
    hits = 0
    for rep, (idx, _labels) in enumerate(draws(doc, 12)):
        if rep == 60:
            break
        lo, hi = agreement(judge[idx], human[idx], None, FIVE, 80, rep).ci["spearman"]
        hits += lo <= truth <= hi
    assert hits / 60 < 0.85


def test_alpha_interval_resamples_documents_and_covers(population):
    _, _, doc, experts = population
    rated = np.isfinite(experts).all(axis=1)
    values, rated_doc = experts[rated], np.unique(doc[rated], return_inverse=True)[1]
    truth = krippendorff_alpha(values, "interval")
    hits = 0
    for rep, (idx, labels) in enumerate(draws(rated_doc, 13)):
        lo, hi = alpha_intervals(values[idx], 300, rep, ("interval",), clusters=labels)["interval"]
        hits += lo <= truth <= hi
    assert hits / REPS >= FLOOR, hits / REPS


def test_clustered_ppi_covers_the_mean_rating(population):
    judge, human, doc, _ = population
    truth, rng, hits = human.mean(), np.random.default_rng(14), 0
    for idx, labels in draws(doc, 14):
        keep = set(rng.choice(len(idx), size=40, replace=False).tolist())
        e = ppi_mean(
            judge[idx], [h if i in keep else None for i, h in enumerate(human[idx])], "ppi++", labels
        )
        assert e.groups == GROUPS and e.ci is not None
        hits += e.ci[0] <= truth <= e.ci[1]
    assert hits / REPS >= FLOOR, hits / REPS


@pytest.mark.parametrize(("method", "least"), [("classic", 10), ("ppi++", 30)])
def test_ppi_is_withheld_below_its_minimum_and_covers_at_it(population, method, least):
    judge, human, _, _ = population
    truth, rng, hits = human.mean(), np.random.default_rng(15), 0
    for _ in range(400):
        idx = rng.integers(0, len(human), size=400)
        rated = [h if i < least else None for i, h in enumerate(human[idx])]
        e = ppi_mean(judge[idx], rated, method)
        hits += e.ci[0] <= truth <= e.ci[1]
    assert hits / 400 >= FLOOR, hits / 400
    few = ppi_mean(judge[:400], [h if i < least - 1 else None for i, h in enumerate(human[:400])], method)
    assert few.ci is None and f"fewer than {least}" in few.warning
