"""Batch runs go through the one plan: the side of a split and its seal, the server as part of the run, and
the plan's line shown, for `geval batch prepare`, `submit` and `submit-panel` as for a live run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from judge_fakes import FakeJudges
from runner_helpers import dimension, make_items

from geval_core.cli import cli
from geval_core.errors import ConfigError, InputError
from geval_core.run.batch import batch_plan, prepare_batch, prepare_planned
from geval_core.run.batch_engines import submit_batch
from geval_core.run.plan import plan_run, record_run
from geval_core.run.splits import make_split, sealed_uses
from geval_core.types import JudgeSettings
from prompt_library import Library

GPT = JudgeSettings(provider="openai", model="gpt-4o-mini", top_logprobs=5, max_tokens=3)


@pytest.fixture(scope="module")
def fake():
    server = FakeJudges()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0000")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def split_library(path):
    """(library, prompt, dataset, split): 12 items in 4 groups, half the groups sealed on the test side."""
    library = Library(path, seed_examples=False)
    prompt = library.freeze(dimension(GPT)).prompt
    items = [item.__class__(item.id, item.fields, {}, f"g{k % 4}") for k, item in enumerate(make_items(12))]
    dataset = library.import_items("grouped", items)
    split, _ = make_split(library, dataset["id"], 0.5, "group", 1)
    return library, prompt, dataset, split


def file_ids(path) -> set[str]:
    return {json.loads(line)["custom_id"].split(":")[1] for line in path.read_text().splitlines()}


def test_a_batch_file_of_a_split_dataset_holds_the_dev_side_and_the_test_side_only_when_named(tmp_path):
    library, prompt, dataset, split = split_library(tmp_path / "lib.db")
    dev = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "dev.jsonl")
    assert file_ids(tmp_path / "dev.jsonl") == set(split["dev"]) and dev["side"] == "dev"
    assert sealed_uses(library, split) == []  # the dev side is no look at the test side
    test = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "test.jsonl", side="test")
    assert file_ids(tmp_path / "test.jsonl") == set(split["test"])
    assert [u["run_id"] for u in sealed_uses(library, split)] == [test["run_id"]]
    assert library.get_run(test["run_id"]).plan["side"] == "test"
    with pytest.raises(InputError, match="not on the dev side"):
        prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "x.jsonl", item_ids=split["test"][:1])
    assert not (tmp_path / "x.jsonl").exists() and len(library.list_runs()) == 2


def test_a_batch_file_needs_no_key_and_names_no_server_whatever_the_environment_says(tmp_path, monkeypatch):
    library, prompt, dataset, _ = split_library(tmp_path / "lib.db")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    plan = batch_plan(library, prompt, dataset["id"], GPT, file=True)
    assert plan.settings.base_url is None and "OpenAI's own API" in plan.describe()
    run_id = prepare_planned(library, plan, tmp_path / "in.jsonl")["run_id"]
    assert library.get_run(run_id).judge.base_url is None


def test_a_batch_never_joins_a_stored_run(tmp_path):
    library, prompt, dataset, _ = split_library(tmp_path / "lib.db")
    live = record_run(library, plan_run(library, prompt, dataset["id"]), key_needed=False)
    with pytest.raises(ConfigError, match="a batch always makes a run of its own"):
        prepare_planned(library, live, tmp_path / "in.jsonl")
    batch = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "in.jsonl")
    assert batch["run_id"] != live.run_id  # the same judge and items as the live run, yet a run of its own


def test_submit_scores_the_dev_side_at_the_named_server_and_records_it(tmp_path, fake):
    library, prompt, dataset, split = split_library(tmp_path / "lib.db")
    server = f"{fake.url}/v1"
    result = submit_batch(
        library, prompt, dataset["id"], GPT.__class__(**{**GPT.__dict__, "base_url": server})
    )
    assert result["side"] == "dev" and result["requests"] == len(split["dev"]) and server in result["judge"]
    run = library.get_run(result["run_id"])
    assert set(run.item_ids) == set(split["dev"]) and run.judge.base_url == server
    assert sealed_uses(library, split) == []


def geval(*args: str):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_batch_submit_and_collect_on_the_test_side_record_one_use_and_name_the_server(tmp_path, fake):
    db = str(tmp_path / "lib.db")
    library, prompt, dataset, split = split_library(db)
    base = ["--db", db, "--base-url", f"{fake.url}/v1"]
    code, out, err = geval(
        "batch", "submit", "--prompt", prompt.id, "--data", "grouped", "--side", "test", *base
    )
    assert code == 0, err
    assert f"judge: openai:gpt-4o-mini at {fake.url}/v1" in err and "test side, 6 items" in err
    uses = sealed_uses(library, split)
    assert len(uses) == 1
    run = library.get_run(uses[0]["run_id"])
    assert set(run.item_ids) == set(split["test"])
    assert (
        geval("batch", "status", run.extra["batch_id"], *base)[0] == 0
    )  # the loopback engine finishes at its 2nd look
    code, out, err = geval("batch", "collect", run.extra["batch_id"], "--json", *base)
    assert code == 0 and json.loads(out)["summary"]["scored"] == 6, (out, err)
    assert library.run_servers(run.id) == {run.plan["server"]} == {f"{fake.url}/v1"}  # who answered


def test_cli_batch_prepare_shows_its_plan_and_submit_panel_takes_the_side(tmp_path, fake):
    db = str(tmp_path / "lib.db")
    library, prompt, dataset, split = split_library(db)
    code, _, err = geval(
        "batch",
        "prepare",
        "--prompt",
        prompt.id,
        "--data",
        "grouped",
        "--out",
        str(tmp_path / "in.jsonl"),
        "--db",
        db,
    )
    assert code == 0, err
    assert "judge: openai:gpt-4o-mini at OpenAI's own API" in err and "dev side, 6 items" in err
    other = library.freeze(
        dimension(JudgeSettings(provider="openai", model="gpt-4o", top_logprobs=5, max_tokens=3))
    ).prompt
    code, _, err = geval("panel", "freeze", "duo", "--member", prompt.id, "--member", other.id, "--db", db)
    assert code == 0, err
    code, out, err = geval(
        "batch",
        "submit-panel",
        "duo",
        "--data",
        "grouped",
        "--side",
        "test",
        "--json",
        "--member-base-url",
        f"{prompt.label}={fake.url}/v1",
        "--member-base-url",
        f"{other.label}={fake.url}/v1",
        "--db",
        db,
    )
    assert code == 0, err
    assert all(b["side"] == "test" for b in json.loads(out)["batches"])
    code, _, err = geval(
        "batch",
        "submit-panel",
        "duo",
        "--data",
        "grouped",
        "--member-base-url",
        f"nobody={fake.url}/v1",
        "--db",
        db,
    )
    assert code != 0 and "'nobody', which is not a member of panel" in err
