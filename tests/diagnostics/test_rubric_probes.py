"""Rubric-form probes: the variants show the rubric as they claim, ratings map back exactly, the figures match
scipy, and `geval probe rubric` runs end to end through the one plan (scripted judge, loopback server, local)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats as st
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.diagnostics.rubric_probes import (
    MARK,
    is_probe_name,
    plan_rubric_probe,
    rubric_probe,
    rubric_result,
)
from geval_core.errors import InputError
from geval_core.prompts import messages
from geval_core.prompts.rubric_forms import VARIANTS, derive, rewrite_mentions
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run.plan import JudgeChoice, plan_run, record_run, start_run
from geval_core.run.splits import get_split, make_split
from geval_core.stats.rubric_moves import score_moves, top_changes, top_rating
from geval_core.types import Example, Item, JudgeSettings, Scale
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
ANCHOR_LINE = re.compile(r"^- (-?\d+): (.*)$", re.MULTILINE)
ITEM = Item("x", {"document": "A document.", "summary": "A summary."})


def listed(dim) -> list[tuple[int, str]]:
    """(label, description) of every anchor line of the rendered message, in the order on the page."""
    text = messages(dim, ITEM)[0]["content"]
    return [(int(n), d) for n, d in ANCHOR_LINE.findall(text)]


# ---- the variants ------------------------------------------------------------------------------------


def test_reverse_anchors_lists_the_same_labels_lowest_first_in_the_message():
    dim = dimension()
    original, variant = listed(dim), listed(derive(dim, "reverse-anchors").dimension)
    assert [n for n, _ in original] == [5, 4, 3, 2, 1]
    assert variant == original[::-1]
    assert derive(dim, "reverse-anchors").mapping == "r -> r"


def test_shifted_labels_keep_the_descriptions_and_their_order():
    dim = dimension()
    form = derive(dim, "shift-labels")
    assert form.dimension.scale == Scale(0, 4) and form.mapping == "r -> r + 1"
    assert listed(form.dimension) == [(n - 1, d) for n, d in listed(dim)]
    assert "Coherence (0-4)" in messages(form.dimension, ITEM)[0]["content"]
    zero_based = derive(
        dimension(scale=Scale(0, 4), anchors={k - 1: v for k, v in dim.anchors.items()}), "shift-labels"
    )
    assert zero_based.dimension.scale == Scale(1, 5) and zero_based.mapping == "r -> r - 1"


def test_a_reversed_scale_relabels_the_descriptions_in_their_order_on_the_page():
    dim = dimension(
        steps=(
            "Read the summary.",
            "Rate it on a scale of 1 to 5, where 1 is the lowest and 5 is the highest.",
        )
    )
    form = derive(dim, "reverse-scale")
    assert form.mapping == "r -> 6 - r" and form.dimension.scale == Scale(1, 5)
    assert [d for _, d in listed(form.dimension)] == [d for _, d in listed(dim)]
    assert listed(form.dimension)[0] == (1, dim.anchors[5])
    assert (
        form.dimension.steps[1] == "Rate it on a scale of 1 to 5, where 5 is the lowest and 1 is the highest."
    )
    assert form.rewritten == 2
    shifted = derive(dim, "shift-labels")
    assert (
        shifted.dimension.steps[1]
        == "Rate it on a scale of 0 to 4, where 0 is the lowest and 4 is the highest."
    )


def test_mentions_of_other_numbers_are_left_alone():
    text = "Step 1: read the 2 texts from 2024-2025; 2.5 is not a point. A score of 5 means best, out of 5."
    out, count = rewrite_mentions(text, Scale(1, 5), Scale(0, 4), lambda p: p - 1)
    assert (
        out
        == "Step 1: read the 2 texts from 2024-2025; 2.5 is not a point. A score of 4 means best, out of 4."
    )
    assert count == 2


def test_examples_move_with_their_point():
    example = Example(5, "e1", {"document": "D", "summary": "An example summary."})
    dim = dimension(examples=(example,))
    for variant in VARIANTS:
        form = derive(dim, variant)
        (moved,) = form.dimension.examples
        assert form.to_original(moved.point) == 5
        text = messages(form.dimension, ITEM)[0]["content"]
        assert f"Example rated {moved.point}:" in text
        block = text[text.index(f"- {moved.point}: ") :]
        assert block.splitlines()[1] == f"  Example rated {moved.point}:"


def test_every_variant_is_a_checkable_prompt_with_its_own_hash(tmp_path):
    with Library(tmp_path / "lib.db", seed_examples=False) as lib:
        original = lib.freeze(dimension(SCRIPTED)).prompt
        ids = {
            lib.freeze(derive(original.dimension, v).dimension, name=f"x{k}").prompt.id
            for k, v in enumerate(VARIANTS)
        }
        assert len(ids) == 3 and original.id not in ids


def test_a_template_without_anchors_and_an_unknown_variant_are_refused():
    dim = dimension()
    bare = replace(dim, template="Rate {{name}} ({{scale}}).\n\n{{document}}\n{{summary}}\n\n- Coherence:")
    with pytest.raises(InputError, match="anchors"):
        derive(bare, "reverse-anchors")
    with pytest.raises(InputError, match="unknown rubric variant"):
        derive(dim, "sideways")


# ---- figures -----------------------------------------------------------------------------------------


def test_figures_against_scipy_and_numpy():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, 40).astype(float)
    original = np.clip(human + rng.normal(0, 0.8, 40), 1, 5)
    variant = np.clip(original + rng.normal(0.3, 0.6, 40), 1, 5)
    variant[[3, 7]] = np.nan
    human[5] = np.nan
    out = score_moves(original, [None if np.isnan(v) else v for v in variant], list(human))
    keep = ~np.isnan(variant)
    diff = variant[keep] - original[keep]
    assert out["items"] == 38
    assert out["mean_abs_change"] == pytest.approx(np.abs(diff).mean())
    assert out["mean_signed_change"] == pytest.approx(diff.mean())
    assert out["spearman"] == pytest.approx(st.spearmanr(original[keep], variant[keep]).statistic)
    assert out["kendall"] == pytest.approx(st.kendalltau(original[keep], variant[keep]).statistic)
    rated = keep & ~np.isnan(human)
    assert out["human_items"] == 37
    assert out["human_spearman_original"] == pytest.approx(
        st.spearmanr(original[rated], human[rated]).statistic
    )
    assert out["human_spearman_variant"] == pytest.approx(
        st.spearmanr(variant[rated], human[rated]).statistic
    )
    assert top_changes([3, 4, None, 2], [3, 5, 1, 2]) == {
        "top_items": 3,
        "top_changed": 1,
        "top_changed_share": pytest.approx(1 / 3),
    }
    assert top_rating({1: 0.2, 2: 0.4, 4: 0.4}) == 2.0 and top_rating({}, None) is None
    assert top_rating({1: 0.9}, 3.0) == 3.0


# ---- through the runner ------------------------------------------------------------------------------


def description_judge(first: str, second: str) -> ScriptedJudge:
    """Puts 0.7 on the label shown next to description `first`, 0.3 on the one next to `second`."""

    def script(request):
        labels = {d: n for n, d in ANCHOR_LINE.findall(request.messages[-1]["content"])}
        return {labels[first]: 0.7, labels[second]: 0.3}

    return ScriptedJudge(script)


def number_judge() -> ScriptedJudge:
    """Always answers 3 with 0.6 and 4 with 0.4, whatever the rubric says."""
    return ScriptedJudge(lambda request: {"3": 0.6, "4": 0.4})


def scored_library(tmp_path, judge, count=8, groups=False):
    """(library, run id): a 1-5 coherence prompt's run over `count` rated items scored by `judge`."""
    lib = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = lib.freeze(dimension(SCRIPTED)).prompt
    items = [
        Item(
            f"i{k}",
            {"document": "d", "summary": f"Summary {k}."},
            {"coherence": float(1 + k % 5)},
            f"g{k // 2}" if groups else None,
        )
        for k in range(count)
    ]
    lib.import_items("gold", items)
    plan = record_run(lib, plan_run(lib, prompt, "gold"))
    start_run(lib, plan, judge)
    return lib, plan.recorded_id


def test_a_judge_of_descriptions_gives_the_same_mapped_back_score_under_every_form(tmp_path):
    dim = dimension()
    judge = description_judge(dim.anchors[4], dim.anchors[3])
    lib, run_id = scored_library(tmp_path, judge)
    out = rubric_probe(lib, run_id, judge, sample=5)
    assert out["sample"] == 5 and [v["variant"] for v in out["variants"]] == list(VARIANTS)
    for row in out["per_item"]:
        assert row["original"] == pytest.approx(3.7)
        assert [row[v] for v in VARIANTS] == pytest.approx([3.7, 3.7, 3.7])
    for v in out["variants"]:
        assert v["mean_abs_change"] == pytest.approx(0) and v["top_changed"] == 0
    lib.close()


def test_a_judge_of_numbers_moves_by_the_hand_computed_amount(tmp_path):
    lib, run_id = scored_library(tmp_path, number_judge())
    out = rubric_probe(lib, run_id, number_judge(), sample=6, seed=1)
    by = {v["variant"]: v for v in out["variants"]}
    # Original 0.6*3 + 0.4*4 = 3.4. Shifted: the same digits read on 0-4, +1 back: 4.4. Reversed: 6 - 3.4 = 2.6.
    assert by["reverse-anchors"]["mean_signed_change"] == pytest.approx(0.0)
    assert by["shift-labels"]["mean_signed_change"] == pytest.approx(1.0)
    assert by["reverse-scale"]["mean_signed_change"] == pytest.approx(-0.8)
    assert by["reverse-scale"]["mean_abs_change"] == pytest.approx(0.8)
    # The top rating 3 maps back to 4 when shifted, and to 6 - 3 = 3 when reversed.
    assert (by["shift-labels"]["top_changed"], by["reverse-scale"]["top_changed"]) == (6, 0)
    assert all(row["shift-labels"] == pytest.approx(4.4) for row in out["per_item"])
    lib.close()


def test_probe_prompts_and_runs_are_marked_and_never_versions_of_the_users_prompt(tmp_path):
    lib, run_id = scored_library(tmp_path, number_judge())
    plans = plan_rubric_probe(lib, run_id, sample=3)
    assert len(lib.prompt_versions("coherence")) == 1
    assert [p.prompt.name for p in plans] == [f"coherence.probe-{v}" for v in VARIANTS]
    assert all(is_probe_name(p.prompt.name) for p in plans) and not is_probe_name("coherence")
    own = [p["name"] for p in lib.list_prompts()]
    assert "coherence" in own and not any(map(is_probe_name, own))  # the user's prompts only, by default
    assert len(lib.list_prompts(probes=True)) == len(own) + len(VARIANTS)
    from click.testing import CliRunner

    from geval_core.cli import cli

    shown = CliRunner().invoke(cli, ["prompts", "list", "--json", "--db", str(lib.path)])
    with_probes = CliRunner().invoke(cli, ["prompts", "list", "--json", "--probes", "--db", str(lib.path)])
    listed = [
        r["name"] for r in json.loads(shown.output)
    ]  # the command's library is seeded with the examples
    assert "coherence" in listed and not any(map(is_probe_name, listed))
    assert len(json.loads(with_probes.output)) == len(listed) + len(VARIANTS)
    run = lib.get_run(plans[1].recorded_id)
    assert run.extra[MARK] == {
        "of": run_id,
        "variant": "shift-labels",
        "sign": 1,
        "offset": 1,
        "mapping": "r -> r + 1",
        "rewritten": 0,
        "seed": 0,
    }
    assert run.judge.provider == "scripted" and len(run.item_ids) == 3
    with pytest.raises(InputError, match="itself a rubric-form probe"):
        plan_rubric_probe(lib, run.id)
    with pytest.raises(InputError, match="no finished rubric-form probe"):
        rubric_result(lib, run_id)
    lib.close()


def test_on_a_split_dataset_the_sample_stays_on_the_dev_side(tmp_path):
    lib, run_id = scored_library(tmp_path, number_judge(), count=20, groups=True)
    dataset_id = lib.get_run(run_id).dataset_id
    make_split(lib, dataset_id, dev=0.5)
    dev = set(get_split(lib, dataset_id)["dev"])
    plans = plan_rubric_probe(lib, run_id, sample=50)
    assert all(p.side == "dev" and set(p.item_ids) == dev for p in plans)
    lib.close()


def test_probe_rubric_cli(tmp_path):
    lib, run_id = scored_library(tmp_path, number_judge())
    lib.close()
    args = ["probe", "rubric", run_id, "--db", str(tmp_path / "lib.db"), "--sample", "4"]
    res = CliRunner().invoke(cli, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [v["variant"] for v in out["variants"]] == list(VARIANTS)
    assert res.stderr.count("judge: scripted:scripted-1 in process; prompt coherence.probe-") == 3
    text = CliRunner().invoke(cli, [*args, "--variants", "reverse-scale", "--seed", "2"])
    assert text.exit_code == 0, text.output
    assert "reverse-scale (r -> 6 - r;" in text.output and "Spearman with people over" in text.output
    bad = CliRunner().invoke(cli, [*args, "--variants", "sideways"])
    assert bad.exit_code == 2 and "reverse-anchors" in bad.output


def test_probe_rubric_through_a_loopback_openai_compatible_server(tmp_path, monkeypatch):
    from judge_fakes import FakeJudges

    fake = FakeJudges()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        lib = Library(tmp_path / "lib.db", seed_examples=False)
        prompt = lib.freeze(dimension(JudgeSettings(provider="openai", model="gpt-4o-mini"))).prompt
        lib.import_items(
            "gold",
            [
                Item(f"i{k}", {"document": "d", "summary": f"Summary {k}."}, {"coherence": 3.0})
                for k in range(5)
            ],
        )
        plan = record_run(lib, plan_run(lib, prompt, "gold", JudgeChoice(base_url=f"{fake.url}/v1")))
        start_run(lib, plan)
        lib.close()
        res = CliRunner().invoke(
            cli,
            [
                "probe",
                "rubric",
                plan.recorded_id,
                "--db",
                str(tmp_path / "lib.db"),
                "--sample",
                "5",
                "--json",
            ],
        )
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        assert f"at {fake.url}/v1" in res.stderr
        asked = [body for method, path, _, body in fake.requests if path.endswith("/chat/completions")]
        assert len(asked) == 5 + 15
        with Library(tmp_path / "lib.db", seed_examples=False) as lib:
            for v in out["variants"]:
                probe = lib.get_run(v["probe_run"])
                assert probe.status == "done" and probe.judge.base_url == f"{fake.url}/v1"
    finally:
        fake.close()


@pytest.mark.slow
def test_probe_rubric_with_the_local_judge_on_the_sample_set(tmp_path, local_judge, monkeypatch):
    monkeypatch.setattr("geval_core.providers.get_judge", lambda settings, **_: local_judge)
    db = tmp_path / "lib.db"
    with Library(db) as lib:
        items = lib.dataset_items("sample")[:4]
        lib.import_items("sample-few", items)
        plan = record_run(lib, plan_run(lib, lib.get_prompt("coherence"), "sample-few"))
        start_run(lib, plan, local_judge)
    res = CliRunner().invoke(
        cli, ["probe", "rubric", plan.recorded_id, "--db", str(db), "--sample", "3", "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["human"] == "coherence" and out["sample"] == 3
    for v in out["variants"]:
        assert v["items"] + v["unscored"] == 3
        assert v["mean_abs_change"] is None or v["mean_abs_change"] >= abs(v["mean_signed_change"])
