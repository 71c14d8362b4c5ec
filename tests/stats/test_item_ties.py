"""Per-item ties (issue 16): item_ties against a brute-force pair count, tie_rate identities, tie_clusters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geval_core.stats import item_ties, tie_clusters, tie_rate


def random_run(seed: int, n: int) -> tuple[list[float | None], list[str]]:
    """Scores on a coarse grid (many ties), some missing, some off by float noise; a few groups."""
    rng = np.random.default_rng(seed)
    scores: list[float | None] = []
    for v in rng.integers(1, 6, size=n) / rng.choice([1.0, 2.0, 4.0]):
        r = rng.random()
        scores.append(
            None if r < 0.12 else float("nan") if r < 0.18 else float(v) + (1e-9 if r > 0.9 else 0.0)
        )
    groups = [f"g{g}" for g in rng.integers(0, max(1, n // 5), size=n)]
    return scores, groups


def brute_force(scores: list[float | None], groups: list[str]) -> dict[str, list]:
    """O(n^2): for every scored item, the other scored items with an equal score (run, own group)."""
    ok = [s is not None and math.isfinite(s) for s in scores]
    r = [round(s, 6) if k else None for s, k in zip(scores, ok, strict=True)]
    n_valid = sum(ok)
    out: dict[str, list] = {"tied_others": [], "tied_share": [], "tied_in_group": [], "group_share": []}
    for i in range(len(scores)):
        if not ok[i]:
            out["tied_others"].append(-1)
            out["tied_in_group"].append(-1)
            out["tied_share"].append(math.nan)
            out["group_share"].append(math.nan)
            continue
        others = [j for j in range(len(scores)) if j != i and ok[j]]
        same_group = [j for j in others if groups[j] == groups[i]]
        tied = sum(r[j] == r[i] for j in others)
        tied_group = sum(r[j] == r[i] for j in same_group)
        out["tied_others"].append(tied)
        out["tied_in_group"].append(tied_group)
        out["tied_share"].append(tied / (n_valid - 1) if n_valid > 1 else math.nan)
        out["group_share"].append(tied_group / len(same_group) if same_group else math.nan)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_item_ties_match_a_brute_force_pair_count(seed):
    scores, groups = random_run(seed, n=int(np.random.default_rng(1000 + seed).integers(0, 40)))
    got = item_ties(scores, groups)
    want = brute_force(scores, groups)
    assert set(got) == set(want)
    for key in ("tied_others", "tied_in_group"):
        assert got[key].tolist() == want[key], key
    for key in ("tied_share", "group_share"):
        np.testing.assert_allclose(got[key], np.array(want[key], dtype=float), equal_nan=True, err_msg=key)
    ungrouped = item_ties(scores)
    assert set(ungrouped) == {"tied_others", "tied_share"}
    assert ungrouped["tied_others"].tolist() == want["tied_others"]


@pytest.mark.parametrize("seed", range(25))
def test_item_ties_sum_to_the_tie_rate(seed):
    scores, groups = random_run(seed, n=60)
    ties = item_ties(scores, groups)
    valid = ties["tied_others"] >= 0
    n = int(valid.sum())
    assert ties["tied_others"][valid].sum() / (n * (n - 1)) == pytest.approx(tie_rate(scores), abs=1e-12)
    sizes = np.unique([g for g, v in zip(groups, valid, strict=True) if v], return_counts=True)[1]
    within = ties["tied_in_group"][valid].sum() / (sizes * (sizes - 1)).sum()
    assert within == pytest.approx(tie_rate(scores, groups), abs=1e-12)


def test_missing_scores_and_small_runs():
    ties = item_ties([3.0, None, float("nan"), 3.0000000001, 2.0], ["a", "a", "b", "a", "b"])
    assert ties["tied_others"].tolist() == [1, -1, -1, 1, 0]
    np.testing.assert_allclose(ties["tied_share"], [0.5, np.nan, np.nan, 0.5, 0.0], equal_nan=True)
    assert ties["tied_in_group"].tolist() == [1, -1, -1, 1, 0]
    np.testing.assert_allclose(ties["group_share"], [1.0, np.nan, np.nan, 1.0, np.nan], equal_nan=True)
    single = item_ties([4.0])
    assert single["tied_others"].tolist() == [0] and math.isnan(single["tied_share"][0])
    assert item_ties([])["tied_others"].tolist() == []
    with pytest.raises(ValueError):
        item_ties([1.0, 2.0], ["a"])


def test_tie_clusters_largest_first_with_distinct_human_ratings():
    scores = [3, 3, 3, 4, 4, 4, 2, 2, 5, None, 3.0000001]
    human = [1, 2, 2, 5, 5, 5, 1, None, 4, 3, 3]
    clusters = tie_clusters(scores, human)
    assert clusters == [
        {"score": 3.0, "size": 4, "human_distinct": 3},
        {"score": 4.0, "size": 3, "human_distinct": 1},
        {"score": 2.0, "size": 2, "human_distinct": 1},
    ]
    assert tie_clusters(scores, top=2) == [
        {"score": 3.0, "size": 4, "human_distinct": None},
        {"score": 4.0, "size": 3, "human_distinct": None},
    ]
    assert tie_clusters([1.0, 2.0, None]) == []
    assert tie_clusters([2.0, 1.0, 2.0, 1.0], top=5) == [
        {"score": 1.0, "size": 2, "human_distinct": None},
        {"score": 2.0, "size": 2, "human_distinct": None},
    ]


def test_tie_clusters_against_a_brute_force_count():
    scores, _ = random_run(7, n=200)
    human = list(np.random.default_rng(8).integers(1, 4, size=200).astype(float))
    clusters = tie_clusters(scores, human, top=100)
    by_score: dict[float, list[float]] = {}
    for s, h in zip(scores, human, strict=True):
        if s is not None and math.isfinite(s):
            by_score.setdefault(round(s, 6), []).append(h)
    want = sorted(((-len(hs), s, len(set(hs))) for s, hs in by_score.items() if len(hs) > 1))
    assert [(-c["size"], c["score"], c["human_distinct"]) for c in clusters] == want
