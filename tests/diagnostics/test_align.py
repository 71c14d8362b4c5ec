"""Aligning a prompt with people on a split dataset: the sealed test side never enters a dev figure, every test
use is recorded, example items are left out of every evaluation, the report's interval is widened for the
candidates evaluated (Bonferroni), Holm's p-values by hand."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.diagnostics.align import align_report, disputed_items, holm
from geval_core.prompts import content_hash, render
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.splits import evaluation_ids, get_split, make_split, record_test_use, sealed_uses
from geval_core.types import Example, Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
MARK = re.compile(r"\[h=(\d)\]\[n=(-?\d+)\]")


def sharp(noise_scale: float):
    """A judge that puts its mass on people's rating moved by the item's own noise times `noise_scale`."""

    def script(request):
        text = "".join(m["content"] for m in request.messages)
        human, noise = (int(v) for v in MARK.search(text).groups())
        point = int(np.clip(round(human + noise_scale * noise / 10), 1, 5))
        return {str(point): 0.9, str(point + 1 if point < 5 else point - 1): 0.05, "The": 0.05}

    return script


@pytest.fixture
def lib(tmp_path):
    """30 documents of 4 summaries each, rated by people; a dev / test split by document; two frozen prompts."""
    rng = np.random.default_rng(7)
    items = []
    for doc in range(30):
        effect = rng.normal(0, 1)
        for k in range(4):
            human = int(np.clip(round(3 + effect + rng.normal(0, 0.7)), 1, 5))
            noise = int(rng.normal(0, 10))
            items.append(
                Item(
                    f"d{doc:02d}-{k}",
                    {"document": f"Document {doc}.", "summary": f"Summary {k} [h={human}][n={noise}]."},
                    {"coherence": float(human), "coherence.0": float(human)},
                    f"d{doc:02d}",
                )
            )
    library = Library(tmp_path / "lib.db", seed_examples=False)
    library.import_items("golden", items)
    base = library.freeze(dimension(SCRIPTED), name="coherence").prompt
    better = library.freeze(
        dimension(SCRIPTED, definition="How well the sentences build a whole."), name="coherence"
    ).prompt
    split, _ = make_split(library, library.get_dataset("golden").id, dev=0.6, seed=1)
    yield library, base, better, split
    library.close()


def scored(library, prompt, ids, noise_scale):
    data = library.get_dataset("golden")
    items = [i for i in library.dataset_items(data.id) if i.id in ids]
    run_id = library.create_run(prompt.id, data.id, SCRIPTED, item_ids=[i.id for i in items])
    run_scoring(
        prompt, items, ScriptedJudge(sharp(noise_scale)), library, run_id, RunOptions(settings=SCRIPTED)
    )
    return run_id


def test_the_dev_scope_holds_no_test_item_and_only_a_test_use_is_recorded(lib):
    library, base, _, split = lib
    data = library.get_dataset("golden")
    dev, scope = evaluation_ids(library, data.id, "dev")
    assert dev == set(split["dev"]) and not dev & set(split["test"]) and scope["side"] == "dev"
    assert {i.group for i in library.dataset_items(data.id) if i.id in dev}.isdisjoint(
        {i.group for i in library.dataset_items(data.id) if i.id in split["test"]}
    )  # no document on both
    assert sealed_uses(library, split) == []
    with pytest.raises(Exception, match="recorded: name the prompt"):
        evaluation_ids(library, data.id, "test")
    test, scope = evaluation_ids(library, data.id, "test", prompt_id=base.id)
    assert test == set(split["test"]) and scope["candidates_on_test"] == 1
    assert [u["prompt_id"] for u in sealed_uses(library, split)] == [base.id]


def test_geval_agree_on_a_split_dataset_reads_dev_unless_asked_and_records_the_test_use(lib):
    library, base, _, split = lib
    run_id = scored(library, base, set(split["dev"]) | set(split["test"]), 1.0)
    runner = CliRunner()
    dev = json.loads(
        runner.invoke(
            cli,
            [
                "agree",
                run_id,
                "--human",
                "coherence",
                "--db",
                str(library.path),
                "--json",
                "--bootstrap",
                "0",
            ],
        ).output
    )
    assert dev["items"] == len(split["dev"]) and dev["scope"]["side"] == "dev"
    assert sealed_uses(library, split) == []  # dev figures use nothing sealed
    test = json.loads(
        runner.invoke(
            cli,
            [
                "agree",
                run_id,
                "--human",
                "coherence",
                "--db",
                str(library.path),
                "--json",
                "--bootstrap",
                "0",
                "--side",
                "test",
            ],
        ).output
    )
    assert test["items"] == len(split["test"]) and len(sealed_uses(library, split)) == 1


def test_example_items_are_in_the_hash_and_the_prompt_and_out_of_every_evaluation(lib):
    library, base, _, split = lib
    data = library.get_dataset("golden")
    chosen = [i for i in library.dataset_items(data.id) if i.id in split["dev"]][:2]
    examples = tuple(
        Example(int(i.human["coherence"]), i.id, {f: i.fields[f] for f in ("document", "summary")}, data.id)
        for i in chosen
    )
    anchored = replace(base.dimension, examples=examples)
    assert content_hash(anchored) != content_hash(base.dimension)
    assert content_hash(replace(anchored, examples=())) == base.id  # no examples: the hash as before
    text = render(anchored, chosen[0])
    assert f"Example rated {examples[0].point}:" in text and chosen[1].fields["summary"] in text
    frozen = library.freeze(anchored, name="coherence").prompt
    assert frozen.dimension.examples == examples  # stored and read back
    ids, scope = evaluation_ids(library, data.id, "dev", frozen.dimension.example_ids)
    assert scope["examples_left_out"] == 2 and not ids & {i.id for i in chosen}
    run_id = scored(library, frozen, set(split["dev"]), 1.0)
    out = json.loads(
        CliRunner()
        .invoke(
            cli,
            [
                "agree",
                run_id,
                "--human",
                "coherence",
                "--db",
                str(library.path),
                "--json",
                "--bootstrap",
                "0",
            ],
        )
        .output
    )
    assert out["items"] == len(split["dev"]) - 2 and out["scope"]["examples_left_out"] == 2


def test_disputed_items_come_largest_gap_first_with_every_raters_rating(lib):
    library, base, _, split = lib
    run_id = scored(library, base, set(split["dev"]), 3.0)
    only, _ = evaluation_ids(library, library.get_dataset("golden").id, "dev")
    rows = disputed_items(library, run_id, "coherence", only, limit=10)
    gaps = [abs(r["gap"]) for r in rows]
    assert gaps == sorted(gaps, reverse=True) and len(rows) == 10
    assert all(r["item_id"] in only and r["raters"] == {"coherence.0": r["human"]} for r in rows)
    assert all(r["point"] == round(r["human"]) for r in rows)


def test_holm_by_hand():
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adjusted == pytest.approx(
        {"a": 0.03, "c": 0.06, "b": 0.06}
    )  # 3*0.01, max(2*0.03, .03), max(0.04, .06)


def test_the_report_widens_the_test_interval_for_every_candidate_evaluated(lib):
    library, base, better, split = lib
    data = library.get_dataset("golden")
    test = set(split["test"])
    base_run = scored(library, base, test, 3.0)
    better_run = scored(library, better, test, 0.2)
    record_test_use(library, split, base.id, base_run)
    record_test_use(library, split, better.id, better_run)
    one = align_report(library, base.id, better.id, data.id, "coherence", resamples=400)
    fig = one["figures"]["spearman"]
    assert one["candidates_evaluated"] == 1 and fig["corrected_interval"] == pytest.approx(fig["interval"])
    assert fig["difference"] > 0 and fig["interval"][0] > 0  # the sharper judge agrees better with people
    assert one["items"] == len(test) and one["side"] == "test"
    third = library.freeze(
        dimension(SCRIPTED, definition="Whether the summary reads as one text."), name="coherence"
    ).prompt
    record_test_use(library, split, third.id, scored(library, third, test, 2.0))
    two = align_report(library, base.id, better.id, data.id, "coherence", resamples=400)
    wide, plain = two["figures"]["spearman"]["corrected_interval"], two["figures"]["spearman"]["interval"]
    assert two["candidates_evaluated"] == 2 and two["corrected_level"] == pytest.approx(0.975)
    assert wide[0] < plain[0] < plain[1] < wide[1]  # the Bonferroni interval for two candidates is wider
    assert 0 <= two["holm_p"] <= 1


def test_geval_align_test_records_each_use_reuses_the_run_and_report_reads_it(lib, monkeypatch):
    import scripted_app_judge

    scripted_app_judge.offer(monkeypatch)
    library, base, better, split = lib
    runner, db = CliRunner(), str(library.path)
    for prompt in (base, better):
        out = runner.invoke(
            cli,
            ["align", "test", prompt.label, "--data", "golden", "--db", db, "--json", "--judge", "scripted"],
        )
        assert out.exit_code == 0, out.output
    first = json.loads(out.output[out.output.index("{") :])
    assert (
        first["candidates_on_test"] == 2 and first["test_items"] == len(split["test"]) and not first["reused"]
    )
    again = runner.invoke(
        cli, ["align", "test", better.label, "--data", "golden", "--db", db, "--json", "--judge", "scripted"]
    )
    reused = json.loads(again.output[again.output.index("{") :])
    assert reused["reused"] and reused["judge_calls"] == 0 and reused["candidates_on_test"] == 2
    assert len(sealed_uses(library, get_split(library, library.get_dataset("golden").id))) == 3  # every look
    report = runner.invoke(cli, ["align", "report", better.label, "--data", "golden", "--db", db, "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["base"] == base.label and data["candidates_evaluated"] == 1 and data["test_looks"] == 3
    assert set(data["figures"]) == {"spearman", "kendall", "pearson", "kappa_quadratic"}
    text = runner.invoke(cli, ["align", "report", better.label, "--data", "golden", "--db", db]).output
    assert "1 candidate evaluated on this test side (3 looks)" in text


def test_a_report_refuses_a_prompt_never_evaluated_on_the_test_side(lib):
    library, base, better, split = lib
    out = CliRunner().invoke(
        cli, ["align", "report", better.label, "--data", "golden", "--db", str(library.path)]
    )
    assert out.exit_code == 1 and "has not been evaluated on the test side" in out.output
    assert "Traceback" not in out.output


def test_diagnostics_read_through_a_scoped_store_see_only_that_side(lib):
    from geval_core.run.splits import ScopedStore
    from geval_core.stats.stored import run_calibration, run_estimate

    library, base, _, split = lib
    run_id = scored(library, base, set(split["dev"]) | set(split["test"]), 1.0)
    dev = ScopedStore(library, set(split["dev"]))
    assert run_calibration(dev, run_id, "coherence")["items"] == len(split["dev"])
    assert run_calibration(library, run_id, "coherence")["items"] == len(split["dev"]) + len(split["test"])
    assert run_estimate(dev, run_id, "coherence", "classic")["n_rated"] == len(split["dev"])
