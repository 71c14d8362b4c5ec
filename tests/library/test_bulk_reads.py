"""Bulk reads (issue 15): a run's judgments and a dataset's items read in one pass must equal the plain reads.

The fast paths: JSON columns read by json's C scanner, judgments sorted in Python instead of by a join, garbage
collection paused while rows are built, calibration's predicted shares as one array, group codes in C.
Each is checked here against the straightforward computation it replaces.
"""

from __future__ import annotations

import gc
import json
import random
import sqlite3

import numpy as np
import pytest
from runner_helpers import setup_library

from geval_core.judgment import Judgment
from geval_core.stats.calibration import calibration, observed_shares, predicted_shares
from geval_core.stats.paired import group_codes
from geval_core.types import Scale
from prompt_library.base import collections_paused, loads, loads_column

TEXTS = ['{"3":0.6,"4":0.4}', None, '["2","x"]', '"plain"', "4.5", '{"nested":{"a":[1,{"b":null}]}}', "null"]


def test_loads_column_equals_a_loads_per_text():
    assert loads_column(TEXTS, "dflt") == [loads(t, "dflt") for t in TEXTS]
    assert loads_column([], {}) == []
    assert loads_column([None, None], {}) == [{}, {}]


@pytest.mark.parametrize("bad", ["1,2", '"open', '{"a":1', "", "  ", "[1]]"])
def test_a_text_that_is_not_one_value_is_parsed_alone_and_fails_as_it_would(bad):
    with pytest.raises(json.JSONDecodeError) as alone:
        json.loads(bad)
    with pytest.raises(json.JSONDecodeError) as together:
        loads_column(['{"a":1}', bad, "2"])
    assert str(together.value) == str(alone.value)


def test_each_text_is_read_alone_so_no_text_can_shift_another():
    # Parsed as one joined array, '"x' and 'y"' would merge into one string and '1,2' split in two: the
    # count equal, every value shifted. Read alone, the first text fails.
    with pytest.raises(json.JSONDecodeError, match="Unterminated string"):
        loads_column(['"x', 'y"', "1,2"])
    assert loads_column([' {"a": 1} ', "[1, 2]\n"]) == [{"a": 1}, [1, 2]]  # whitespace, as loads allows


def test_judgments_come_in_dataset_order_with_strangers_first_as_the_join_sorted_them(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=40)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    rng = random.Random(5)
    shuffled = list(items)
    rng.shuffle(shuffled)
    for n, item in enumerate(shuffled):
        dist = {"1": 0.2, "4": 0.8} if n % 3 else {"5": 1.0}
        library.save_judgment(
            run_id,
            Judgment(
                item.id,
                score=1 + n / 10,
                distribution=dist,
                mode="logprobs",
                replies=("4", f"reply {n}"),
                differs=n % 2 == 0,
            ),
        )
    with sqlite3.connect(tmp_path / "lib.db") as conn:  # a judgment of an item the dataset does not hold
        conn.execute(
            "INSERT INTO judgments (run_id, item_id, score, distribution, replies) "
            "VALUES (?, 'zz-stranger', 2.0, NULL, NULL)",
            [run_id],
        )
    rows = library.judgments(run_id)
    joined = [
        r[0]
        for r in library.conn.execute(
            "SELECT j.item_id FROM judgments j LEFT JOIN items i ON i.dataset_id = ? AND i.item_id = j.item_id "
            "WHERE j.run_id = ? ORDER BY i.position, j.item_id",
            [dataset["id"], run_id],
        )
    ]
    assert [r["item_id"] for r in rows] == joined == ["zz-stranger", *[i.id for i in items]]
    by_id = {r["item_id"]: r for r in rows}
    for n, item in enumerate(shuffled):
        row = by_id[item.id]
        assert row["distribution"] == ({1: 0.2, 4: 0.8} if n % 3 else {5: 1.0})
        assert row["replies"] == ["4", f"reply {n}"] and row["differs"] is (n % 2 == 0)
    assert by_id["zz-stranger"]["distribution"] == {} and by_id["zz-stranger"]["replies"] == []
    library.close()


def test_collections_paused_restores_what_it_found():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collections_paused():
        assert not gc.isenabled()
        raise RuntimeError("inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with collections_paused():
            pass
        assert not gc.isenabled()  # someone else had paused it: left paused
    finally:
        gc.enable()


def test_calibration_in_one_array_equals_the_per_item_shares():
    scale, rng = Scale(1, 5), np.random.default_rng(3)
    dists, ratings, scores = [], [], []
    for n in range(300):
        probs = rng.dirichlet(np.ones(5))
        keys = scale.points if n % 2 else [str(r) for r in scale.points]  # stored int keys, imported str keys
        dist = {k: float(p) for k, p in zip(keys, probs, strict=True) if p > 0.05}
        dists.append({} if n % 17 == 0 else {9: 1.0} if n % 23 == 0 else dist)  # none, and all mass off-scale
        ratings.append([] if n % 13 == 0 else list(rng.integers(1, 6, size=1 + n % 3).astype(float)))
        scores.append(None if n % 11 == 0 else float(rng.uniform(1, 5)))
    result = calibration(dists, ratings, scale, scores)
    keep = [i for i in range(300) if dists[i] and ratings[i] and predicted_shares(dists[i], scale).sum() > 0]
    pred = np.array([predicted_shares(dists[i], scale) for i in keep])
    obs = np.array([observed_shares(ratings[i], scale) for i in keep])
    assert result["items"] == len(keep) and 200 < len(keep) < 300
    assert result["expected"] == pytest.approx(pred.sum(axis=0).tolist())
    assert result["observed"] == pytest.approx(obs.sum(axis=0).tolist())
    flat_p, flat_o = pred.ravel(), obs.ravel()
    which = np.minimum((flat_p * 10).astype(int), 9)
    ece = sum(
        abs(flat_p[which == b].mean() - flat_o[which == b].mean()) * (which == b).sum()
        for b in range(10)
        if (which == b).any()
    ) / len(flat_p)
    assert result["ece"] == pytest.approx(ece)
    bins = {b["point"]: b for b in result["score_bins"]}
    judged = [(scores[i], float(np.mean(ratings[i]))) for i in keep if scores[i] is not None]
    assert sum(b["count"] for b in bins.values()) == len(judged)
    assert predicted_shares({}, scale).tolist() == [0.0] * 5


def test_group_codes_number_groups_in_order_of_first_appearance():
    codes, n = group_codes(["b", "a", "b", None, "c", "a"], np.array([True, True, True, True, False, True]))
    assert codes.tolist() == [0, 1, 0, 2, 1] and n == 3
