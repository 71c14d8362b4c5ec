"""The store's run and dataset records: frozen, typed, the judge decoded once, and `as_dict` the old dict shape
(what `geval runs show --json` and `geval datasets show --json` print)."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.records import Dataset, DatasetMapping, Run
from geval_core.types import JudgeSettings
from prompt_library import Library

JUDGE = JudgeSettings(temperature=0.5, seed=3, max_tokens=7)


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "records.db")


def _finished_run(db: str) -> str:
    with Library(db) as library:
        run = library.create_run("fluency", "sample", JUDGE, item_ids=["d01-a", "d01-b"])
        library.save_judgment(run, Judgment("d01-a", score=2.5, distribution={2: 0.5, 3: 0.5}, replies=["3"]))
        library.set_run_fields(run, batch_id="b1")
        library.finish_run(run, "done", mode="logprobs", input_tokens=10)
    return run


def test_the_store_returns_frozen_records(db):
    run_id = _finished_run(db)
    with Library(db) as library:
        run, dataset = library.get_run(run_id), library.get_dataset("sample")
        assert isinstance(run, Run) and isinstance(dataset, Dataset)
        assert [r.id for r in library.list_runs()] == [run_id]
        assert all(isinstance(d, Dataset) for d in library.list_datasets())
        assert library.find_run("fluency", "sample", JUDGE, item_ids=["d01-a", "d01-b"]) == run
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "failed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        dataset.label = "other@1"  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.extra["batch_id"] = "b2"  # type: ignore[index]
    assert pickle.loads(pickle.dumps(run)) == run  # caches and worker processes may pickle a run


def test_a_runs_judge_is_the_settings_it_was_created_with(db):
    run_id = _finished_run(db)
    with Library(db) as library:
        run = library.get_run(run_id)
    assert run.judge == JUDGE and isinstance(run.judge, JudgeSettings)
    assert run.item_ids == ("d01-a", "d01-b") and run.items_total == 2
    assert (run.status, run.judged, run.errors, run.input_tokens) == ("done", 1, 0, 10)
    assert (run.prompt_label, run.dataset_label) == ("fluency@1", "sample@1")
    assert run.mode == "logprobs" and run.extra["batch_id"] == "b1" and run.run_error is None


def test_runs_show_json_is_the_old_dict(db):
    """The keys and values `geval runs show --json` printed when the store returned dicts, in that order."""
    run_id = _finished_run(db)
    with Library(db) as library:
        run = library.get_run(run_id)
        stored = library._one("SELECT created_at, finished_at, digest FROM runs WHERE id = ?", [run_id])
        extra = json.loads(library._one("SELECT extra FROM runs WHERE id = ?", [run_id])["extra"])
    expected = {
        "id": run_id,
        "prompt_id": run.prompt_id,
        "dataset_id": run.dataset_id,
        "judge": dataclasses.asdict(JUDGE),
        "item_ids": ["d01-a", "d01-b"],
        "status": "done",
        "items_total": 2,
        "created_at": stored["created_at"],
        "finished_at": stored["finished_at"],
        "model_version": None,
        "input_tokens": 10,
        "output_tokens": None,
        "cost_usd": None,
        "digest": stored["digest"],
        "prompt_label": "fluency@1",
        "dataset_label": "sample@1",
        "judged": 1,
        "errors": 0,
        **{
            k: v for k, v in extra.items()
        },  # batch_id, mode, digest_rows, ...: merged in, as they always were
        "judgments": None,
    }
    assert {"batch_id", "mode"} <= set(extra)
    shown = CliRunner().invoke(cli, ["runs", "show", run_id, "--json", "--db", db])
    assert shown.exit_code == 0, shown.output
    assert list(json.loads(shown.output).items()) == list(expected.items())
    assert run.as_dict() == {k: v for k, v in expected.items() if k != "judgments"}


def test_datasets_show_json_is_the_old_dict(db):
    with Library(db) as library:
        dataset = library.get_dataset("sample")
        row = library._one("SELECT * FROM datasets WHERE id = ?", [dataset.id])
    expected = {
        **row,
        "mapping": json.loads(row["mapping"]) if row["mapping"] else None,
        "fields": json.loads(row["fields"]),
        "human": json.loads(row["human"]),
        "label": "sample@1",
    }
    assert dataset.as_dict() == expected and list(dataset.as_dict()) == list(expected)
    shown = CliRunner().invoke(cli, ["datasets", "show", "sample", "--json", "--items", "0", "--db", db])
    assert shown.exit_code == 0, shown.output
    assert list(json.loads(shown.output).items()) == [*expected.items(), ("items", [])]
    assert isinstance(dataset.mapping, DatasetMapping | None) and dataset.fields == tuple(expected["fields"])


def test_a_record_stored_by_an_older_version_prints_as_it_was_stored():
    """A judge without a setting added since, or with one since dropped, decodes (defaults, the unknown key left
    out) and prints exactly as stored; so does an older dataset mapping."""
    row = {
        "id": "r1",
        "prompt_id": "p",
        "dataset_id": "d",
        "status": "done",
        "items_total": 3,
        "created_at": "t",
    }
    old = {"provider": "openai", "model": "m", "mode": "logprobs", "retired_setting": 1}
    run = Run.from_stored(row, old, None, {"mode": "sampling", "status": "ignored: the column wins"})
    assert run.judge == JudgeSettings(provider="openai", model="m")
    assert run.as_dict()["judge"] == old and run.as_dict()["status"] == "done" and run.mode == "sampling"
    stored = {"id": "key", "inputs": {"summary": "text"}, "human": {}, "group": None}  # before raters existed
    version = {"id": "h", "name": "n", "version": 1, "source": "f", "item_count": 1, "created_at": "t"}
    dataset = Dataset.from_stored(version, stored, ["summary"], [])
    assert dataset.mapping == DatasetMapping(id="key", inputs={"summary": "text"})
    assert dataset.as_dict()["mapping"] == stored and dataset.label == "n@1"
