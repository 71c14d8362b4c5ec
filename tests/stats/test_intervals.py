"""Intervals that hold: cluster bootstrap, undefined resamples, and `geval agree`'s honest edges."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats as st
from click.testing import CliRunner
from hand_intervals import studentized
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.stats import agreement, run_agreement
from geval_core.types import Item, Scale
from prompt_library import Library


def test_two_items_give_no_interval_and_count_the_undefined_draws():
    r = agreement([1.0, 2.0], [1.0, 2.0], bootstrap=400, seed=1)
    assert r.spearman == 1.0 and r.ci["spearman"] == [None, None]
    # A resample of 2 items is constant (both copies of one item) half the time.
    assert 150 < r.ci_undefined["spearman"] < 250


def test_a_few_undefined_draws_keep_the_interval():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    r = agreement(x, x + rng.normal(size=40), bootstrap=300)
    assert r.ci_undefined["spearman"] == 0 and r.ci["spearman"][0] is not None


def test_cluster_bootstrap_matches_a_hand_percentile_bootstrap():
    rng = np.random.default_rng(5)
    groups = [f"d{k // 6}" for k in range(72)]
    x = rng.normal(size=72) + np.repeat(rng.normal(size=12), 6)
    y = x + rng.normal(size=72)
    r = agreement(x, y, scale=Scale(-10, 10), bootstrap=300, seed=3, clusters=groups)
    assert r.reading == "dataset" and r.ci_resampled == "groups" and r.ci_units == 12
    draw = np.random.default_rng(3)
    members = [np.arange(k * 6, k * 6 + 6) for k in range(12)]
    values = []
    for _ in range(300):
        idx = np.concatenate([members[c] for c in draw.integers(0, 12, size=12)])
        values.append(st.pearsonr(x[idx], y[idx]).statistic)
    assert r.ci["pearson"] == pytest.approx(studentized(values, st.pearsonr(x, y).statistic, 12))
    assert r.pearson == pytest.approx(st.pearsonr(x, y).statistic)


def test_a_group_without_judge_scores_is_skipped_not_lost():
    r = agreement([1, 2, 3, None, None], [1, 3, 2, 4, 5], ["a", "a", "a", "b", "b"])
    assert (r.groups, r.groups_skipped, r.missing) == (1, 1, 2)


def test_out_of_scale_scores_are_counted():
    r = agreement([0.2, 3, 6.4], [1, 3, 5], scale=Scale(1, 5))
    assert r.out_of_scale == 2


def library(tmp_path, missing=0):
    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension()).prompt
    items = [
        Item(
            f"i{k}",
            {"document": "d", "summary": f"s{k}", "system": f"m{k % 3}"},
            {"coherence": float(1 + k % 5)},
            f"doc{k // 4}",
        )
        for k in range(24)
    ]
    lib.import_items("gold", items)
    run_id = lib.create_run(prompt.id, "gold", prompt.dimension.judge)
    for k, item in enumerate(items[: len(items) - missing]):
        lib.save_judgment(run_id, Judgment(item.id, score=1 + (k * 7 % 5) * 0.9, mode="logprobs"))
    return lib, run_id


def agree(*args):
    return CliRunner().invoke(cli, ["agree", *args])


def test_agree_group_by_a_library_field_and_pooled_conflict(tmp_path):
    lib, run_id = library(tmp_path)
    lib.close()
    db = str(tmp_path / "lib.db")
    out = json.loads(
        agree(run_id, "--human", "coherence", "--db", db, "--group-by", "system", "--json").output
    )
    judge = [1 + (k * 7 % 5) * 0.9 for k in range(24)]
    human = [float(1 + k % 5) for k in range(24)]
    per = [
        st.spearmanr(
            [judge[k] for k in range(24) if k % 3 == s], [human[k] for k in range(24) if k % 3 == s]
        ).statistic
        for s in range(3)
    ]
    assert out["reading"] == "group" and out["groups"] == 3 and out["spearman"] == pytest.approx(np.mean(per))
    both = json.loads(
        agree(
            run_id,
            "--human",
            "coherence",
            "--db",
            db,
            "--group-by",
            "system",
            "--pooled",
            "--bootstrap",
            "50",
            "--json",
        ).output
    )
    assert both["reading"] == "dataset" and both["ci_resampled"] == "groups" and both["ci_units"] == 3
    assert both["ci_warning"].startswith("no intervals: 3 groups") and both["ci"]["spearman"] == [None, None]
    nofield = agree(run_id, "--human", "coherence", "--db", db, "--group-by", "nope")
    assert (
        nofield.exit_code == 1 and "no field 'nope'" in nofield.output and "Traceback" not in nofield.output
    )
    pooled = json.loads(
        agree(run_id, "--human", "coherence", "--db", db, "--pooled", "--bootstrap", "50", "--json").output
    )
    assert pooled["reading"] == "dataset" and pooled["ci_resampled"] == "groups"


def test_empty_judge_file_negative_scale_and_the_kappa_rule(tmp_path):
    empty = tmp_path / "judge.jsonl"
    empty.write_text("")
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "h": -1}\n{"id": "b", "h": 2}\n{"id": "c", "h": 0}\n')
    bad = agree(str(empty), "--data", str(data), "--human", "h")
    assert bad.exit_code == 1 and "no rows" in bad.output
    judge = tmp_path / "j.jsonl"
    judge.write_text('{"id": "a", "score": -1.5}\n{"id": "b", "score": 2.6}\n{"id": "c", "score": 0.5}\n')
    out = json.loads(
        agree(str(judge), "--data", str(data), "--human", "h", "--scale", "-2-2", "--json").output
    )
    assert out["scale"] == "-2-2" and out["out_of_scale"] == 1
    text = agree(str(judge), "--data", str(data), "--human", "h", "--scale", "-2-2").output
    assert "1 judge scores outside it" in text
    assert "halves up" in " ".join(agree("--help").output.split())


def test_export_agreement_counts_missing_items(tmp_path):
    lib, run_id = library(tmp_path, missing=5)
    out = run_agreement(lib, run_id, "coherence")
    assert out["missing"] == 5 and out["items"] == 19
