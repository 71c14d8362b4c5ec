"""Inputs first: a prompt never scores data that lacks its inputs, on any path, before any judge call."""

from __future__ import annotations

import pytest
from app_support import open_page, page_text, use_temp_library
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.prompts.inputs import mismatch_message
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.batch import prepare_batch
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
DIALOGUE = [Item(f"t{i}", {"context": "A: hi", "response": "B: hello"}) for i in range(3)]


class Counting(ScriptedJudge):
    calls = 0

    def judge(self, request):
        Counting.calls += 1
        return super().judge(request)


def dialogue_library(path):
    lib = Library(path)
    lib.import_items("dialogues", DIALOGUE)
    return lib, lib.freeze(dimension(SCRIPTED)).prompt


def test_the_message_names_inputs_fields_and_the_closest_match():
    prompt = Library(":memory:").freeze(dimension(SCRIPTED)).prompt
    message = mismatch_message(prompt, ["document", "summry"], "golden.jsonl")
    assert "reads document, summary" in message and "'summary' (closest field: 'summry')" in message
    assert "its fields are document, summry" in message
    assert mismatch_message(prompt, ["document", "summary", "extra"], "x") is None


def test_the_runner_refuses_before_any_call(tmp_path):
    lib, prompt = dialogue_library(tmp_path / "lib.db")
    run_id = lib.create_run(prompt.id, "dialogues", SCRIPTED)
    Counting.calls = 0
    with pytest.raises(InputError, match="has no 'document', 'summary'"):
        run_scoring(
            prompt, lib.dataset_items("dialogues"), Counting(), lib, run_id, RunOptions(settings=SCRIPTED)
        )
    assert Counting.calls == 0 and lib.judgments(run_id) == []


def test_cli_score_and_batch_prepare_refuse_a_dataset_without_the_inputs(tmp_path):
    lib, prompt = dialogue_library(tmp_path / "lib.db")
    before = len(lib.list_runs())
    out = CliRunner().invoke(
        cli,
        [
            "score",
            "--prompt",
            prompt.label,
            "--data",
            "dialogues@1",
            "--judge",
            "scripted",
            "--db",
            str(tmp_path / "lib.db"),
        ],
    )
    assert (
        out.exit_code == 1 and "has no 'document', 'summary'" in out.output and "Traceback" not in out.output
    )
    gpt = JudgeSettings(provider="openai", model="gpt-4o-mini")
    with pytest.raises(InputError, match="its fields are context, response"):
        prepare_batch(lib, prompt, "dialogues", gpt, tmp_path / "batch.jsonl")
    assert len(lib.list_runs()) == before and not (tmp_path / "batch.jsonl").exists()


def test_the_score_page_says_what_a_dataset_lacks_and_offers_no_start(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    Library(path).import_items("dialogues", DIALOGUE)
    at = open_page("score")
    options = at.selectbox(key="score_dataset").options
    assert options[0].startswith("sample@") and any(
        "does not fit: no document, summary" in o for o in options
    )
    at.selectbox(key="score_dataset").set_value("dialogues@1").run()
    assert "has no 'document', 'summary'" in page_text(at)
    assert not [b for b in at.button if b.key == "score_start"]


def test_score_item_refuses_fields_without_the_inputs():
    from geval_core.export import score_item

    prompt = Library(":memory:").freeze(dimension(SCRIPTED)).prompt
    Counting.calls = 0
    with pytest.raises(InputError, match=r"'summary' \(closest field: 'sumary'\)"):
        score_item(prompt, {"document": "d", "sumary": "s"}, judge=Counting())
    with pytest.raises(InputError, match="has no 'document', 'summary'"):
        score_item(prompt, {"context": "x"}, judge=Counting())
    assert Counting.calls == 0
    assert score_item(prompt, {"document": "d", "summary": "s"}, judge=Counting()).score is not None


def test_the_score_page_passes_rate_limits_to_the_run(tmp_path, monkeypatch):
    from app_support import wait_for_jobs

    from prompt_library import Library

    path = use_temp_library(tmp_path, monkeypatch)
    at = open_page("score")
    at.radio(key="score_judge_source").set_value("sidebar").run()
    [count] = [w for w in at.number_input if w.label.startswith("Items to score")]
    count.set_value(3).run()
    at.number_input(key="score_rpm").set_value(600)
    at.number_input(key="score_tpm").set_value(90000).run()
    at.button(key="score_start").click().run()
    assert not at.exception
    wait_for_jobs(path)
    lib = Library(path)
    (run,) = lib.list_runs()
    # The worker reads these (tests/library/test_jobs.py checks that they reach its Gate).
    assert lib.job(run.id)["options"] == {"concurrency": 8, "rpm": 600, "tpm": 90000}
    assert lib.get_run(run.id).status == "done"
