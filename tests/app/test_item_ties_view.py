"""Tie rate per item where people see it: the run table, the item view, downloads and `geval runs export`.

Every figure is checked against a brute-force count over item pairs.
"""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
from app_support import open_page, use_temp_library
from click.testing import CliRunner
from runner_helpers import dimension, make_items

from geval_core.cli import cli
from geval_core.judgment import Judgment, single_rating
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats import judgment_ties, reply_agreement, tie_rate
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def brute_others(values, groups=None):
    """For every item: other items (of its group) with the same value, by looking at every pair."""
    out = [None if v is None else 0 for v in values]
    for i, j in combinations(range(len(values)), 2):
        same_group = groups is None or groups[i] == groups[j]
        if (
            values[i] is not None
            and values[j] is not None
            and same_group
            and round(values[i], 6) == round(values[j], 6)
        ):
            out[i] += 1
            out[j] += 1
    return out


def random_rows(rng, n):
    rows = []
    for k in range(n):
        mode = "logprobs" if k % 3 else "sampling"
        score = None if rng.random() < 0.1 else float(rng.choice([2.0, 3.0, 3.25, 4.0]))
        rating = None if score is None else float(rng.integers(1, 4))
        parsed = int(rng.integers(0, 5)) if mode == "sampling" else 1
        counts = rng.multinomial(parsed, [0.5, 0.3, 0.2]) if parsed else np.zeros(3, int)
        rows.append(
            {
                "item_id": f"i{k}",
                "score": score,
                "mode": mode,
                "parsed": parsed,
                "top_rating": rating if mode == "logprobs" else None,
                "first_rating": rating if mode == "sampling" else None,
                "distribution": {r + 1: c / parsed for r, c in enumerate(counts)} if parsed else {},
            }
        )
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_judgment_ties_match_a_brute_force_pair_count(seed):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, int(rng.integers(2, 30)))
    groups = [f"g{rng.integers(0, 4)}" for _ in rows]
    ties = judgment_ties(rows, groups)
    weighted, top = [r["score"] for r in rows], [single_rating(r) for r in rows]
    assert ties["ties_weighted"] == brute_others(weighted)
    assert ties["ties_top"] == brute_others(top)
    assert ties["ties_weighted_in_group"] == brute_others(weighted, groups)
    assert ties["ties_top_in_group"] == brute_others(top, groups)
    scored = sum(v is not None for v in weighted)
    if scored > 1:  # the run's tie rate is the mean over items of each item's share
        shares = [s for s in ties["ties_weighted_share"] if s is not None]
        assert np.mean(shares) == pytest.approx(tie_rate(weighted))


def test_reply_agreement_is_the_share_of_agreeing_reply_pairs():
    replies = [3, 3, 4, 3, 5]  # pairs: C(5,2)=10; agreeing: C(3,2)=3
    row = {"mode": "sampling", "parsed": 5, "distribution": {3: 0.6, 4: 0.2, 5: 0.2}}
    assert reply_agreement(row) == pytest.approx(sum(a == b for a, b in combinations(replies, 2)) / 10)
    assert reply_agreement({"mode": "logprobs", "parsed": 1, "distribution": {3: 1.0}}) is None
    assert reply_agreement({"mode": "sampling", "parsed": 1, "distribution": {3: 1.0}}) is None


def _scored_library(path, count=12):
    lib = Library(path)
    items = [
        Item(i.id, i.fields, {"coherence": float(n % 3 + 1)}, f"doc{n // 4}")
        for n, i in enumerate(make_items(count))
    ]
    lib.import_items("tied", items)
    prompt = lib.freeze(dimension(SCRIPTED)).prompt
    run_id = lib.create_run(prompt.id, "tied", SCRIPTED)
    # Two answers only, so the top-token ratings tie a lot and the weighted scores less.
    judge = ScriptedJudge(
        lambda r: {"3": 0.7, "4": 0.3} if len(str(r.messages)) % 2 else {"3": 0.4, "4": 0.6}
    )
    run_scoring(prompt, lib.dataset_items("tied"), judge, lib, run_id, RunOptions(settings=SCRIPTED))
    return lib, run_id


def test_runs_export_carries_each_items_ties(tmp_path):
    lib, run_id = _scored_library(tmp_path / "lib.db")
    out = CliRunner().invoke(cli, ["runs", "export", run_id, "--db", str(tmp_path / "lib.db")])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    weighted, top = [r["score"] for r in rows], [r["top_rating"] for r in rows]
    groups = [r["group"] for r in rows]
    assert [r["ties_weighted"] for r in rows] == brute_others(weighted)
    assert [r["ties_top"] for r in rows] == brute_others(top)
    assert [r["ties_top_in_group"] for r in rows] == brute_others(top, groups)
    assert [r["ties_top_share"] for r in rows] == pytest.approx(
        [c / (len(rows) - 1) for c in brute_others(top)]
    )
    assert {"id", *Judgment.columns()[1:]} <= set(
        rows[0]
    )  # one id column name: "id", as `geval score` writes


def test_table_and_item_view_show_ties(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    lib, run_id = _scored_library(path)
    rows = lib.judgments(run_id)
    at = open_page("score")
    at.selectbox(key="score_dataset").set_value("tied@1").run()
    table = at.dataframe[-1].value
    top = {r["item_id"]: r["top_rating"] for r in rows}
    want = dict(zip(top, brute_others(list(top.values())), strict=True))
    assert {i: int(t) for i, t in zip(table["item"], table["ties top-token"], strict=True)} == want
    assert "ties in group, weighted" in table.columns
    first = rows[0]["item_id"]
    weighted = brute_others([r["score"] for r in rows])[0]
    caption = " ".join(c.value for c in at.caption)
    assert (
        f"Top-token rating tied with {want[first]} of {len(rows) - 1} other items at "
        f"{top[first]:.3f}; {weighted} after weighting"
    ) in caption
