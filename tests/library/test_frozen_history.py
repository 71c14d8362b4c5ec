"""The pin holds in SQLite (issue 9): every SQL change to frozen history is refused, or `geval verify` names it.

Each statement runs on a real library file through a plain sqlite3 connection, as another tool would
(no foreign keys, no recursive triggers), then `geval verify` runs on the file. A statement that succeeds
and that verify does not name is a failure of this file: "SQL changes that succeed undetected: 0".
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from needs import require_file

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import run_scoring
from prompt_library import Library
from prompt_library.verify import expected_triggers

REFUSED = None  # the statement must fail inside SQLite
ITEM_COLUMNS = "(dataset_id, item_id, position, fields, human, group_id)"
PROMPT_COLUMNS = "id, name, version, dimension, steps_model, judge, created_at"
DATASET_COLUMNS = "id, name, version, source, mapping, item_count, fields, human, created_at"
EDITED_FIELDS = '\'{"document":"Edited.","summary":"Edited."}\''

# (name, SQL with :placeholders, REFUSED or the text `geval verify` must print)
STATEMENTS = [
    # Items of a frozen dataset version.
    (
        "items insert-or-replace same id",
        f"INSERT OR REPLACE INTO items {ITEM_COLUMNS} "
        f"VALUES (:dataset, :item, 0, {EDITED_FIELDS}, '{{}}', 'g')",
        REFUSED,
    ),
    (
        "items replace-into same id",
        f"REPLACE INTO items {ITEM_COLUMNS} VALUES (:dataset, :item, 0, {EDITED_FIELDS}, '{{}}', 'g')",
        REFUSED,
    ),
    (
        "items upsert",
        f"INSERT INTO items {ITEM_COLUMNS} VALUES (:dataset, :item, 0, {EDITED_FIELDS}, '{{}}', 'g') "
        "ON CONFLICT(dataset_id, item_id) DO UPDATE SET fields = excluded.fields",
        REFUSED,
    ),
    (
        "items insert an extra item",
        f"INSERT INTO items {ITEM_COLUMNS} VALUES (:dataset, 'extra', :count, {EDITED_FIELDS}, '{{}}', 'g')",
        REFUSED,
    ),
    (
        "items insert at a taken position",
        f"INSERT INTO items {ITEM_COLUMNS} VALUES (:dataset, 'extra', 3, {EDITED_FIELDS}, '{{}}', 'g')",
        REFUSED,
    ),
    (
        "items insert without a position",
        f"INSERT INTO items {ITEM_COLUMNS} VALUES (:dataset, 'extra', NULL, {EDITED_FIELDS}, '{{}}', 'g')",
        REFUSED,
    ),
    (
        "items replace by position",
        f"INSERT OR REPLACE INTO items {ITEM_COLUMNS} VALUES (:dataset, 'extra', 0, "
        f"{EDITED_FIELDS}, '{{}}', 'g')",
        REFUSED,
    ),
    (
        "items insert into no version",
        f"INSERT INTO items {ITEM_COLUMNS} VALUES ('nope', 'x', 0, '{{}}', '{{}}', NULL)",
        REFUSED,
    ),
    ("items update", f"UPDATE items SET fields = {EDITED_FIELDS} WHERE item_id = :item", REFUSED),
    ("items delete", "DELETE FROM items WHERE item_id = :item", REFUSED),
    # Frozen prompts.
    (
        "prompts insert-or-replace same id",
        f"INSERT OR REPLACE INTO prompts ({PROMPT_COLUMNS}) SELECT id, name, "
        "version, json_set(dimension, '$.definition', 'Sneaky.'), steps_model, judge, created_at FROM prompts "
        "WHERE id = :prompt",
        REFUSED,
    ),
    (
        "prompts replace same name@version",
        f"INSERT OR REPLACE INTO prompts ({PROMPT_COLUMNS}) SELECT 'forged', "
        "name, version, dimension, steps_model, judge, created_at FROM prompts WHERE id = :prompt",
        REFUSED,
    ),
    (
        "prompts upsert",
        f"INSERT INTO prompts ({PROMPT_COLUMNS}) SELECT id, name, version, dimension, steps_model, "
        "judge, created_at FROM prompts WHERE id = :prompt ON CONFLICT(id) DO UPDATE SET dimension = '{}'",
        REFUSED,
    ),
    (
        "prompts update",
        "UPDATE prompts SET dimension = json_set(dimension, '$.definition', 'Sneaky.')",
        REFUSED,
    ),
    ("prompts delete", "DELETE FROM prompts WHERE id = :prompt", REFUSED),
    # Dataset versions.
    (
        "datasets insert-or-replace same id",
        f"INSERT OR REPLACE INTO datasets ({DATASET_COLUMNS}) SELECT id, name, "
        "version, source, mapping, item_count + 1, fields, human, created_at FROM datasets WHERE id = :dataset",
        REFUSED,
    ),
    ("datasets update", "UPDATE datasets SET item_count = item_count + 1", REFUSED),
    ("datasets delete", "DELETE FROM datasets WHERE id = :dataset", REFUSED),
    # Judgments: a written one is final.
    ("judgments update", "UPDATE judgments SET score = 5.0 WHERE run_id = :run AND item_id = :item", REFUSED),
    ("judgments update all", "UPDATE judgments SET score = 5.0", REFUSED),
    ("judgments delete", "DELETE FROM judgments WHERE run_id = :run", REFUSED),
    (
        "judgments insert-or-replace",
        "INSERT OR REPLACE INTO judgments (run_id, item_id, score, mode, created_at) "
        "VALUES (:run, :item, 5.0, 'logprobs', 'now')",
        REFUSED,
    ),
    (
        "judgments upsert",
        "INSERT INTO judgments (run_id, item_id, score, mode, created_at) VALUES (:run, :item, 5.0, "
        "'logprobs', 'now') ON CONFLICT(run_id, item_id, attempt) DO UPDATE SET score = 5.0",
        REFUSED,
    ),
    (
        "judgments replace an errored one",
        "INSERT OR REPLACE INTO judgments (run_id, item_id, score, mode, "
        "created_at) VALUES (:run, :errored, 5.0, 'logprobs', 'now')",
        REFUSED,
    ),
    (
        "judgments move an errored one",
        "UPDATE judgments SET item_id = 'moved' WHERE item_id = :errored",
        REFUSED,
    ),
    (
        "judgments score an errored one",
        "UPDATE judgments SET score = 3.0, error = NULL WHERE item_id = :errored",
        REFUSED,
    ),
    (
        "judgments successor of a final one",
        "INSERT INTO judgments (run_id, item_id, attempt, score, mode, created_at) "
        "VALUES (:run, :item, 1, 5.0, 'logprobs', 'now')",
        REFUSED,
    ),
    (
        "judgments skip an attempt",
        "INSERT INTO judgments (run_id, item_id, attempt, score, mode, created_at) "
        "VALUES (:run, :errored, 2, 5.0, 'logprobs', 'now')",
        REFUSED,
    ),
    ("runs update row hash", "UPDATE runs SET row_hash = 'forged'", REFUSED),
    # Runs: only status and totals change.
    (
        "runs update prompt",
        "UPDATE runs SET prompt_id = (SELECT id FROM prompts WHERE name = 'fluency')",
        REFUSED,
    ),
    ("runs update dataset", "UPDATE runs SET dataset_id = 'other'", REFUSED),
    ("runs update judge", "UPDATE runs SET judge = json_set(judge, '$.model', 'other')", REFUSED),
    ("runs update items", "UPDATE runs SET item_ids = '[]'", REFUSED),
    ("runs update created_at", "UPDATE runs SET created_at = '2000-01-01'", REFUSED),
    ("runs update id", "UPDATE runs SET id = 'other'", REFUSED),
    ("runs delete", "DELETE FROM runs", REFUSED),
    (
        "runs insert-or-replace",
        "INSERT OR REPLACE INTO runs (id, prompt_id, dataset_id, judge, status, created_at) "
        "VALUES (:run, :prompt, :dataset, '{}', 'done', 'now')",
        REFUSED,
    ),
    # The judge cache: edits succeed in SQL and are caught by their hash.
    (
        "cache edit reply",
        "UPDATE judge_cache SET reply = json_set(reply, '$.choices[0].text', '5') WHERE key = :key",
        "cache entry {key12}",
    ),
    (
        "cache replace reply",
        "INSERT OR REPLACE INTO judge_cache (key, reply, hash, created_at) SELECT key, "
        "json_set(reply, '$.model_version', 'forged'), hash, created_at FROM judge_cache WHERE key = :key",
        "cache entry {key12}",
    ),
    (
        "cache move entry",
        "UPDATE judge_cache SET key = 'f' || substr(key, 2) WHERE key = :key",
        "cache entry f",
    ),
    # Protection itself, and changes made after removing it.
    (
        "drop trigger then update prompt",
        "DROP TRIGGER prompts_no_update; UPDATE prompts SET dimension = "
        "json_set(dimension, '$.definition', 'Sneaky.') WHERE id = :prompt",
        "prompt coherence@1 ({prompt12}…): stored hash does not match its content",
    ),
    (
        "drop trigger then edit item",
        f"DROP TRIGGER items_no_update; UPDATE items SET fields = {EDITED_FIELDS} WHERE item_id = :item",
        "dataset sample@1 ({dataset12}…): stored hash does not match its items",
    ),
    (
        "drop trigger then add item",
        f"DROP TRIGGER items_no_extra; INSERT INTO items {ITEM_COLUMNS} VALUES "
        f"(:dataset, 'extra', :count, {EDITED_FIELDS}, '{{}}', 'g')",
        "dataset sample@1 ({dataset12}…): holds 68 items",
    ),
    (
        "drop trigger then delete item",
        "DROP TRIGGER items_no_delete; DELETE FROM items WHERE item_id = :item",
        "dataset sample@1 ({dataset12}…): holds 66 items",
    ),
    (
        "no-op trigger under the same name",
        "DROP TRIGGER judgments_no_update; CREATE TRIGGER judgments_no_update "
        "BEFORE UPDATE ON judgments WHEN 0 BEGIN SELECT 1; END",
        "trigger judgments_no_update altered",
    ),
    (
        "unknown trigger",
        "CREATE TRIGGER sneaky AFTER INSERT ON judge_cache BEGIN SELECT 1; END",
        "trigger sneaky is not part of the library's schema",
    ),
    ("renamed table", "ALTER TABLE items RENAME TO items_old", "trigger items_no_update altered"),
    (
        "forged prompt version",
        f"INSERT INTO prompts ({PROMPT_COLUMNS}) SELECT 'f' || substr(id, 2), name, 2, "
        "json_set(dimension, '$.definition', 'Sneaky.'), steps_model, judge, created_at FROM prompts WHERE id = :prompt",
        "prompt coherence@2",
    ),
    (
        "forged dataset version",
        f"INSERT INTO datasets ({DATASET_COLUMNS}) SELECT 'forged', name, 2, source, mapping, "
        "0, fields, human, created_at FROM datasets WHERE id = :dataset",
        "dataset sample@2 (forged…): stored hash",
    ),
] + [
    (f"drop trigger {name}", f"DROP TRIGGER {name}", f"trigger {name} missing")
    for name in expected_triggers()
]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, object]]:
    """A seeded library with a finished run (5 final judgments, 1 errored) and its cache entries."""
    path = tmp_path_factory.mktemp("pin") / "template.db"
    with Library(path) as lib:
        prompt = lib.get_prompt("coherence")
        items = lib.dataset_items("sample")[:6]
        run = lib.create_run(prompt.id, "sample", prompt.dimension.judge, item_ids=[i.id for i in items])
        run_scoring(prompt, items[:5], ScriptedJudge(), lib, run)
        lib.save_judgment(run, Judgment(items[5].id, mode="logprobs", error="JudgeError: boom"))
        lib.finish_run(run, "done")  # as a resumed session does: the digest covers the errored item too
        give_origins(lib, run)
        key = lib._one("SELECT key FROM judge_cache ORDER BY key LIMIT 1")["key"]
        dataset = lib.get_dataset("sample")
    params = {
        "run": run,
        "item": items[0].id,
        "errored": items[5].id,
        "prompt": prompt.id,
        "dataset": dataset.id,
        "count": dataset.item_count,
        "key": key,
    }
    return path, params


def give_origins(lib: Library, run: str) -> None:
    """Name each cache entry's judgment where the runner wrote none, as a session passing `origin` does."""
    judged = lib.judgments(run)
    for key, reply in lib.conn.execute("SELECT key, reply FROM judge_cache WHERE origin IS NULL").fetchall():
        texts = [c["text"] for c in json.loads(reply)["choices"]]
        item = next(j["item_id"] for j in judged if j["replies"] == texts)
        with lib.transaction():
            lib.conn.execute("UPDATE judge_cache SET origin = ? WHERE key = ?", [f"{run}/{item}", key])


@pytest.fixture
def library_file(template, tmp_path) -> tuple[Path, dict[str, object]]:
    source, params = template
    path = tmp_path / "lib.db"
    shutil.copy(source, path)
    return path, params


def execute(path: Path, sql: str, params: dict[str, object]) -> None:
    """Run statements as another tool would: a plain connection, autocommit, default pragmas."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in re.split(r";\s+(?=(?:DROP|UPDATE|INSERT|DELETE|CREATE|ALTER)\b)", sql):
            conn.execute(statement, {k: v for k, v in params.items() if f":{k}" in statement})
    finally:
        conn.close()


def verify(path: Path, *extra: str):
    return CliRunner().invoke(cli, ["verify", "--db", str(path), *extra])


@pytest.mark.parametrize("name,sql,expected", STATEMENTS, ids=[s[0] for s in STATEMENTS])
def test_sql_change_is_refused_or_named_by_verify(library_file, name, sql, expected):
    path, params = library_file
    assert verify(path).exit_code == 0
    if expected is REFUSED:
        with pytest.raises(sqlite3.IntegrityError, match="immutable|refused|change only"):
            execute(path, sql, params)
        result = verify(path)
        assert result.exit_code == 0, result.output  # nothing changed
        return
    execute(path, sql, params)
    result = verify(path)
    wanted = expected.format(
        key12=str(params["key"])[:12],
        prompt12=str(params["prompt"])[:12],
        dataset12=str(params["dataset"])[:12],
    )
    assert result.exit_code == 1 and wanted in result.output, result.output


def test_changes_a_run_may_still_make_succeed_and_verify(library_file):
    """Not history: a run's status and totals, a retry of an errored item (its successor), a cache eviction."""
    path, params = library_file
    execute(
        path,
        "UPDATE runs SET status = 'running', finished_at = 'later', input_tokens = 1, output_tokens = 2, "
        "cost_usd = 0.5, model_version = 'm', items_total = 6, extra = '{}' WHERE id = :run",
        params,
    )
    with Library(path) as lib:
        assert lib.save_judgment(params["run"], Judgment(params["errored"], score=3.0, mode="logprobs"))
        lib.finish_run(params["run"], "done")
        assert {j["item_id"]: j["score"] for j in lib.judgments(params["run"])}[params["errored"]] == 3.0
    execute(path, "DELETE FROM judge_cache WHERE key = :key", params)
    assert verify(path).exit_code == 0


def test_verify_json_lists_each_problem(library_file):
    path, params = library_file
    execute(
        path, "DROP TRIGGER items_no_update; UPDATE items SET fields = '{}' WHERE item_id = :item", params
    )
    result = verify(path, "--json")
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    assert result.exit_code == 1 and not report["ok"]
    assert {(p["kind"], p["name"]) for p in report["problems"]} == {
        ("dataset", "sample@1"),
        ("trigger", "items_no_update"),
    }
    assert report["checked"]["items"] == 67 and report["checked"]["triggers"] == len(expected_triggers())


def test_verify_as_a_command_exits_non_zero_naming_the_object(library_file):
    path, params = library_file
    geval = require_file(Path(sys.executable).with_name("geval"), "the geval script `pip install -e .` makes")
    ok = subprocess.run(
        [str(geval), "verify", "--db", str(path)], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0 and "every protection trigger is in place" in ok.stdout
    execute(
        path,
        "DROP TRIGGER prompts_no_update; UPDATE prompts SET dimension = json_set(dimension, '$.steps[0]', "
        "'Give 5.') WHERE id = :prompt",
        params,
    )
    bad = subprocess.run(
        [str(geval), "verify", "--db", str(path)], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 1
    assert (
        f"prompt coherence@1 ({str(params['prompt'])[:12]}…): stored hash does not match its content"
        in bad.stdout
    )
    assert "trigger prompts_no_update missing" in bad.stdout


def test_verify_refuses_a_missing_file(tmp_path):
    result = verify(tmp_path / "none.db")
    assert result.exit_code == 1 and "no library file" in result.output
    assert not (tmp_path / "none.db").exists()
    (tmp_path / "text.db").write_text("not a database")
    result = verify(tmp_path / "text.db")
    assert result.exit_code == 1 and "not a workbench library" in result.output


def test_the_expected_triggers_are_the_ones_a_migrated_file_has(tmp_path):
    """The open check compares with constants, not with a migration run: they must say what migrating writes."""
    import sqlite_utils

    from prompt_library import migrations

    db = sqlite_utils.Database(tmp_path / "fresh.db")
    migrations.apply(db)
    stored = {
        r["name"]: " ".join(r["sql"].split())
        for r in db.query("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
    }
    assert stored == expected_triggers()
    assert (
        len(stored) == 22
        and stored["judgments_no_update"].endswith(
            "WHEN 1 BEGIN SELECT RAISE(ABORT, "
            "'judgments are immutable: UPDATE refused (a retry "
            "is a new attempt)'); END"
        )
        and {"judgments_no_update", "ratings_no_delete", "items_no_extra", "frozen_records_no_delete"}
        <= set(stored)
    )
    assert not migrations.pending(db.conn)


def test_pending_reads_sqlite_utils_record_of_the_steps(tmp_path):
    """`pending` (plain SQL) agrees with sqlite-utils' own Migrations.pending before, during and after."""
    import sqlite_utils

    from prompt_library import migrations

    db = sqlite_utils.Database(tmp_path / "old.db")
    steps = migrations.migration_set()
    assert migrations.pending(db.conn) and len(steps.pending(db)) == len(migrations._STEPS)
    migrations.apply(db, stop_before="m004_run_leases")
    assert migrations.pending(db.conn) and [m.name for m in steps.pending(db)] == [
        "m004_run_leases",
        "m005_ratings",
        "m006_archived",
        "m007_judgment_counts_index",
        "m008_judgment_provenance",
        "m009_tamper_evidence",
        "m010_run_jobs",
        "m011_frozen_records",
        "m012_drift_records",
        "m013_cached_input_tokens",
        "m014_judgment_key_lookup",
    ]
    migrations.apply(db)
    assert not migrations.pending(db.conn) and steps.pending(db) == []
