"""`geval prompts steps` writes a dimension's evaluation steps once with the judge the plan shows, and `geval
prompts freeze` refuses what is not a dimension (an exported prompt, a key a dimension does not have) instead of
freezing a changed prompt without a word."""

from __future__ import annotations

import json

from click.testing import CliRunner
from runner_helpers import dimension
from scripted_app_judge import SCRIPTED_STEPS

from geval_core.cli import cli
from geval_core.types import Dimension, JudgeSettings
from prompt_library import Library


def dimension_file(tmp_path, **changes) -> str:
    data = {
        **dimension(JudgeSettings(provider="scripted", model="scripted-1")).to_dict(),
        "steps": [],
        **changes,
    }
    path = tmp_path / "dim.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_steps_are_written_by_the_planned_judge_and_freeze_as_written(tmp_path):
    db, out = str(tmp_path / "lib.db"), tmp_path / "steps.json"
    done = CliRunner().invoke(cli, ["prompts", "steps", dimension_file(tmp_path), "--db", db, "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "judge: scripted:scripted-1 in process" in done.output  # the plan, shown before the call
    written = Dimension.from_dict(json.loads(out.read_text(encoding="utf-8")))
    assert list(written.steps) == [line.split(". ", 1)[1] for line in SCRIPTED_STEPS.splitlines()]
    assert written.steps_model and written.steps_model != dimension().steps_model
    frozen = CliRunner().invoke(cli, ["prompts", "freeze", str(out), "--db", db, "--json"])
    assert frozen.exit_code == 0, frozen.output
    with Library(db, seed_examples=False) as library:
        assert library.get_prompt(json.loads(frozen.output)["label"]).dimension.steps == written.steps


def test_freeze_refuses_an_exported_prompt_and_unknown_keys_and_stores_nothing(tmp_path):
    db = str(tmp_path / "lib.db")
    export = tmp_path / "coherence.json"
    shown = CliRunner().invoke(cli, ["prompts", "export", "coherence", "--db", db, "-o", str(export)])
    assert shown.exit_code == 0, shown.output
    with Library(db) as library:
        before = len(library.list_prompts())
    refused = CliRunner().invoke(cli, ["prompts", "freeze", str(export), "--db", db, "--name", "copy"])
    assert refused.exit_code != 0 and "an exported prompt" in refused.output
    assert f"geval prompts import {export}" in refused.output
    extra = dimension_file(tmp_path, content_hash="0" * 64, decoding={})
    refused = CliRunner().invoke(cli, ["prompts", "freeze", extra, "--db", db])
    assert refused.exit_code != 0 and "not a dimension's fields: content_hash, decoding" in refused.output
    with Library(db) as library:
        assert len(library.list_prompts()) == before


def test_show_says_who_wrote_the_steps_once(tmp_path):
    db = str(tmp_path / "lib.db")
    shown = CliRunner().invoke(cli, ["prompts", "show", "coherence", "--db", db]).output
    assert "steps written by hand" in shown and "written by written" not in shown
