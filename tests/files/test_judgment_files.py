"""One Judgment type: the runner builds it, the library stores it, exports and the CLI write its fields."""

from __future__ import annotations

import io
import json

import click
import pytest
from runner_helpers import dimension, make_items
from sqlite_utils import Database

from geval_core import Judgment, errors
from geval_core.cli.common import bounded_option
from geval_core.cli.score import RESULT_KEYS, output_line
from geval_core.export import JUDGMENT_FIELDS, write_judgments
from geval_core.providers import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.store import Store
from geval_core.types import JudgeSettings, bounds_of
from prompt_library import Library
from prompt_library import migrations as library_migrations

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def test_every_column_list_is_judgments_fields(tmp_path):
    columns = Judgment.columns()
    assert columns[0] == "item_id" and columns == JUDGMENT_FIELDS
    assert ("id", *columns[1:]) == RESULT_KEYS
    with Library(tmp_path / "lib.db") as lib:
        assert isinstance(lib, Store)
        stored = {r["name"] for r in lib.db.query("PRAGMA table_info(judgments)")}
        assert set(columns[1:]) <= stored
        lib.import_items("d", make_items(2))
        prompt = lib.freeze(dimension(SCRIPTED)).prompt
        run_id = lib.create_run(prompt.id, "d", SCRIPTED)
        seen: list[Judgment] = []
        run_scoring(
            prompt,
            lib.dataset_items("d"),
            ScriptedJudge(),
            lib,
            run_id,
            RunOptions(settings=SCRIPTED),
            on_progress=lambda done, total, judgment: seen.append(judgment),
        )
        rows = lib.judgments(run_id)
    assert all(isinstance(j, Judgment) for j in seen) and len(seen) == 2
    stored = sorted((Judgment.from_dict(r) for r in rows), key=lambda j: j.item_id)
    assert stored == sorted(seen, key=lambda j: j.item_id)  # stored and read back field for field
    out = io.StringIO()
    write_judgments(rows, out, "jsonl")
    assert list(json.loads(out.getvalue().splitlines()[0])) == list(RESULT_KEYS)  # files name the item "id"
    assert list(output_line(rows[0])) == list(RESULT_KEYS)


def test_mode_dependent_fields_hold_one_thing_each():
    from geval_core.scoring.weighted import score_reply
    from geval_core.types import Choice, JudgeReply, Scale

    sampled = Judgment.from_score(
        "a", score_reply(JudgeReply((Choice("4"), Choice("x")), "m"), Scale(), "sampling")
    )
    assert (sampled.first_rating, sampled.parsed_share, sampled.top_rating, sampled.valid_mass) == (
        4,
        0.5,
        None,
        None,
    )
    assert sampled.single_rating == 4


def test_migration_moves_old_rows_to_the_named_fields(tmp_path):
    path = tmp_path / "old.db"
    db = Database(path)
    library_migrations.apply(db, stop_before="m002_judgment_fields")  # the first schema
    db["runs"].insert({"id": "r1", "status": "done"})
    # The old column name and meanings: top_score and valid_mass held the sampling figures, differs sat in extra.
    db["judgments"].insert_all(
        [
            {
                "run_id": "r1",
                "item_id": "a",
                "score": 3.5,
                "top_score": 4,
                "valid_mass": 0.8,
                "mode": "logprobs",
                "extra": "{}",
            },
            {
                "run_id": "r1",
                "item_id": "b",
                "score": 3.0,
                "top_score": 3.5,
                "valid_mass": 0.5,
                "mode": "sampling",
                "extra": '{"differs": true}',
            },
        ]
    )
    library_migrations.apply(db)
    rows = {r["item_id"]: r for r in db.query("SELECT * FROM judgments")}
    assert (rows["a"]["top_rating"], rows["a"]["valid_mass"], rows["a"]["first_rating"]) == (4, 0.8, None)
    assert (rows["b"]["first_rating"], rows["b"]["parsed_share"], rows["b"]["valid_mass"]) == (3.5, 0.5, None)
    assert rows["b"]["top_rating"] is None and rows["b"]["differs"] == 1 and rows["a"]["differs"] == 0
    assert json.loads(rows["b"]["extra"]) == {}


def test_bounds_are_stated_once_and_read_by_click():
    n = bounds_of(JudgeSettings, "n")
    assert (n.min, n.max) == (1, 100)
    with pytest.raises(errors.ConfigError, match="n must be between 1 and 100"):
        JudgeSettings(n=101)
    with pytest.raises(errors.ConfigError, match="concurrency must be between 1 and 64"):
        RunOptions(concurrency=0)

    @click.command()
    @bounded_option(JudgeSettings, "temperature")
    def command(temperature: float) -> None:
        """Test."""

    option = command.params[0]
    assert isinstance(option.type, click.FloatRange) and (option.type.min, option.type.max) == (0.0, 2.0)
    assert "temperature" in option.help.lower()


def test_error_hierarchy_is_closed_and_validation_stays_a_value_error():
    assert issubclass(errors.ConfigError, ValueError) and issubclass(errors.InputError, ValueError)
    assert issubclass(errors.UnreachableError, errors.RetryableJudgeError)
    assert {name for name in errors.__all__} == {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.GEvalError)
    }
    assert errors.RetryableJudgeError("x", attempts=3).attempts == 3 and errors.JudgeError("x").attempts == 1
