"""How many independent judges a panel's members are worth (stats.panel_errors): the figures against scipy's
pairwise correlations and eigenvalues, the two ends (independent errors: K; one shared error: 1), the interval's
coverage by simulation on SummEval's experts with members whose errors share a part (a short version of
bench/bench_panel_errors.py)."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
from needs import require_file
from paths import SHARED
from scipy import linalg, stats

from geval_core.errors import InputError
from geval_core.stats.panel_errors import effective_judges


def members_with(shared: float, k: int, n: int, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n).astype(float)
    common = rng.normal(0, 1, n)
    return {f"m{j}": human + shared * common + rng.normal(0, 1, n) for j in range(k)}, human


def test_the_figures_are_scipys():
    members, human = members_with(0.8, 4, 200)
    out = effective_judges(members, human, resamples=0)
    errors = {name: values - human for name, values in members.items()}
    rhos = [stats.pearsonr(errors[a], errors[b]).statistic for a, b in combinations(errors, 2)]
    assert out["mean_error_correlation"] == pytest.approx(np.mean(rhos))
    assert out["effective_judges"] == pytest.approx(4 / (1 + 3 * np.mean(rhos)))
    corr = np.array([[out["error_correlations"][a][b] for b in errors] for a in errors])
    eig = linalg.eigh(corr, eigvals_only=True)
    assert out["participation_ratio"] == pytest.approx(eig.sum() ** 2 / (eig**2).sum())
    assert out["effective_judges_interval"] is None and out["resampled"] == "items"  # no resamples asked


def test_the_two_ends():
    alone, human = members_with(0.0, 5, 4000)
    assert effective_judges(alone, human, resamples=0)["effective_judges"] == pytest.approx(5, rel=0.05)
    together, human = members_with(8.0, 5, 4000)
    assert effective_judges(together, human, resamples=0)["effective_judges"] == pytest.approx(1, rel=0.05)
    with pytest.raises(InputError, match="at least two members"):
        effective_judges({"a": [1.0, 2.0, 3.0]}, [1.0, 2.0, 3.0])


def test_the_interval_covers_on_summeval_documents():
    path = require_file(SHARED / "data" / "summeval" / "summeval.jsonl", "SummEval")
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    codes = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    doc = np.array([codes[r["doc_id"]] for r in rows])
    human = np.array([r["scores"]["coherence"] for r in rows])
    rng = np.random.default_rng(0)
    common = (
        rng.normal(0, 0.6, len(human)) + rng.normal(0, 0.3, 100)[doc]
    )  # shared by members, and by documents
    judges = human[:, None] + common[:, None] + rng.normal(0, 0.6, (len(human), 5))
    truth = effective_judges({f"m{j}": judges[:, j] for j in range(5)}, human, resamples=0)
    members = [np.flatnonzero(doc == d) for d in range(100)]
    hits, reps = 0, 100
    for rep in range(reps):
        picks = rng.integers(0, 100, 20)
        idx = np.concatenate([members[d] for d in picks])
        groups = np.repeat(np.arange(20), [len(members[d]) for d in picks]).tolist()
        out = effective_judges({f"m{j}": judges[idx, j] for j in range(5)}, human[idx], groups, 300, rep)
        low, high = out["effective_judges_interval"]
        hits += low <= truth["effective_judges"] <= high
    assert 1.3 < truth["effective_judges"] < 2.0 and hits / reps >= 0.88
