"""The library's schema as sqlite-utils migrations; add a new function to change it, never edit one.

The steps are listed here without importing sqlite-utils: opening a library only checks which steps a file
has (`pending`), and a read-only command never needs sqlite-utils at all (`geval runs list`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database, Migrations

MIGRATION_SET, MIGRATIONS_TABLE = "geval_library", "_sqlite_migrations"  # sqlite-utils' names for the record
_STEPS: list[Callable[[Database], None]] = []


def migration(step: Callable[[Database], None]) -> Callable[[Database], None]:
    """Register a migration step (applied in the order of this file, named after its function)."""
    _STEPS.append(step)
    return step


def _refusals(table: str, what: str) -> tuple[str, ...]:
    # Triggers, not application code, so even plain SQL from another tool cannot change history.
    return tuple(
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_{action.lower()} BEFORE {action} ON {table} "
        f"BEGIN SELECT RAISE(ABORT, '{what} are immutable: {action} refused'); END"
        for action in ("UPDATE", "DELETE")
    )


_M001_TRIGGERS = (
    *_refusals("prompts", "frozen prompts"),
    *_refusals("datasets", "dataset versions"),
    *_refusals("items", "dataset items"),
)


@migration
def m001_schema(db: Database) -> None:
    """Drafts, frozen prompts, datasets and items, runs and judgments, the judge cache, settings."""
    _design_tables(db)
    _run_tables(db)
    for sql in _M001_TRIGGERS:
        db.execute(sql)


def _design_tables(db: Database) -> None:
    db.table("meta").create({"key": str, "value": str}, pk="key")
    db.table("drafts").create(
        {"id": int, "name": str, "dimension": str, "steps_model": str, "created_at": str, "updated_at": str},
        pk="id",
        not_null={"dimension"},
    )
    db.table("prompts").create(
        {
            "id": str,
            "name": str,
            "version": int,
            "dimension": str,
            "steps_model": str,
            "judge": str,
            "created_at": str,
        },
        pk="id",
        not_null={"name", "version", "dimension", "created_at"},
    )
    db.table("prompts").create_index(["name", "version"], unique=True)
    db.table("datasets").create(
        {
            "id": str,
            "name": str,
            "version": int,
            "source": str,
            "mapping": str,
            "item_count": int,
            "fields": str,
            "human": str,
            "created_at": str,
        },
        pk="id",
        not_null={"name", "version", "created_at"},
    )
    db.table("datasets").create_index(["name", "version"], unique=True)
    db.table("items").create(
        {"dataset_id": str, "item_id": str, "position": int, "fields": str, "human": str, "group_id": str},
        pk=("dataset_id", "item_id"),
        foreign_keys=[("dataset_id", "datasets", "id")],
    )


def _run_tables(db: Database) -> None:
    db.table("runs").create(
        {
            "id": str,
            "prompt_id": str,
            "dataset_id": str,
            "judge": str,
            "item_ids": str,
            "status": str,
            "items_total": int,
            "created_at": str,
            "finished_at": str,
            "model_version": str,
            "input_tokens": int,
            "output_tokens": int,
            "cost_usd": float,
            "extra": str,
        },
        pk="id",
        foreign_keys=[("prompt_id", "prompts", "id"), ("dataset_id", "datasets", "id")],
    )
    db.table("runs").create_index(["prompt_id"])
    db.table("runs").create_index(["dataset_id"])
    db.table("judgments").create(
        {
            "run_id": str,
            "item_id": str,
            "score": float,
            "raw_score": float,
            "top_score": float,
            "distribution": str,
            "valid_mass": float,
            "replies": str,
            "parsed": int,
            "unparsed": int,
            "ambiguous": int,
            "mode": str,
            "fallback": int,
            "model_version": str,
            "input_tokens": int,
            "output_tokens": int,
            "latency_s": float,
            "cached": int,
            "error": str,
            "extra": str,
            "created_at": str,
        },
        pk=("run_id", "item_id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("judge_cache").create({"key": str, "reply": str, "created_at": str}, pk="key")


@migration
def m002_judgment_fields(db: Database) -> None:
    """Judgment fields named for what they hold: top_rating/first_rating, valid_mass/parsed_share, differs.

    Before, `top_score` held the likeliest rating in logprobs mode and the first parsed reply in sampling
    mode, and `valid_mass` held the probability on allowed ratings or the share of replies that parsed.
    """
    db.execute("ALTER TABLE judgments RENAME COLUMN top_score TO top_rating")
    for column, kind in (("first_rating", "FLOAT"), ("parsed_share", "FLOAT"), ("differs", "INTEGER")):
        db.execute(f"ALTER TABLE judgments ADD COLUMN {column} {kind}")
    db.execute(
        "UPDATE judgments SET first_rating = top_rating, top_rating = NULL, parsed_share = valid_mass, "
        "valid_mass = NULL WHERE mode = 'sampling'"
    )
    db.execute(
        "UPDATE judgments SET differs = COALESCE(json_extract(extra, '$.differs'), 0), "
        "extra = json_remove(extra, '$.differs') WHERE extra IS NOT NULL"
    )


@migration
def m003_pin(db: Database) -> None:
    """History refuses every change: REPLACE, UPSERT, extra items, judgment and run edits; cache hashes.

    REPLACE deletes the old row without firing DELETE triggers (unless recursive_triggers is on, which
    another tool's connection will not set), so each frozen table gets a BEFORE INSERT trigger that
    aborts when the key is taken; an UPSERT's INSERT part fires it too. Items may only fill the free
    positions 0..item_count-1 of their version, so a finished version takes no new item. Cache rows
    written before this migration carry no hash and cannot be verified: they are dropped (it is a cache).
    """
    db.execute("CREATE INDEX items_position ON items (dataset_id, position)")
    for sql in _M003_TRIGGERS:
        db.execute(sql)
    db.execute("ALTER TABLE judge_cache ADD COLUMN hash TEXT")
    db.execute("DELETE FROM judge_cache")


def _abort(name: str, when: str, message: str, action: str = "INSERT", table: str = "") -> str:
    table = table or name.partition("_no_")[0]
    return (
        f"CREATE TRIGGER {name} BEFORE {action} ON {table} WHEN {when} "
        f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
    )


_M003_TRIGGERS = (
    _abort(
        "prompts_no_replace",
        "EXISTS (SELECT 1 FROM prompts WHERE id = NEW.id OR (name = NEW.name AND version = NEW.version))",
        "frozen prompts are immutable: REPLACE of an existing version refused",
    ),
    _abort(
        "datasets_no_replace",
        "EXISTS (SELECT 1 FROM datasets WHERE id = NEW.id OR (name = NEW.name AND version = NEW.version))",
        "dataset versions are immutable: REPLACE of an existing version refused",
    ),
    _abort(
        "items_no_replace",
        "EXISTS (SELECT 1 FROM items WHERE dataset_id = NEW.dataset_id AND item_id = NEW.item_id) "
        "OR EXISTS (SELECT 1 FROM items WHERE dataset_id = NEW.dataset_id AND position = NEW.position)",
        "dataset items are immutable: REPLACE of an existing item refused",
    ),
    _abort(
        "items_no_extra",
        "typeof(NEW.position) != 'integer' OR NEW.position < 0 OR NEW.position >= "
        "COALESCE((SELECT item_count FROM datasets WHERE id = NEW.dataset_id), 0)",
        "dataset versions are immutable: INSERT of an item beyond the version refused",
    ),
    _abort(
        "judgments_no_replace",
        "EXISTS (SELECT 1 FROM judgments WHERE run_id = NEW.run_id AND item_id = NEW.item_id)",
        "judgments are immutable: INSERT over a stored judgment refused (a re-judge is a new run)",
    ),
    # An errored judgment is the one row a later attempt of the same run may overwrite.
    _abort(
        "judgments_no_update",
        "OLD.error IS NULL OR NEW.run_id IS NOT OLD.run_id OR NEW.item_id IS NOT OLD.item_id",
        "judgments are immutable: UPDATE refused (only an errored one is retried)",
        "UPDATE",
    ),
    _abort("judgments_no_delete", "1", "judgments are immutable: DELETE refused", "DELETE"),
    _abort(
        "runs_no_replace",
        "EXISTS (SELECT 1 FROM runs WHERE id = NEW.id)",
        "runs are immutable: REPLACE of an existing run refused",
    ),
    # Status, finish time, totals and `extra` change as a run goes on; what it ran never does.
    _abort(
        "runs_no_update",
        "NEW.id IS NOT OLD.id OR NEW.prompt_id IS NOT OLD.prompt_id OR NEW.dataset_id IS NOT OLD.dataset_id "
        "OR NEW.judge IS NOT OLD.judge OR NEW.item_ids IS NOT OLD.item_ids OR NEW.created_at IS NOT OLD.created_at",
        "runs change only their status and totals: UPDATE of what was run refused",
        "UPDATE",
    ),
    _abort("runs_no_delete", "1", "runs are immutable: DELETE refused", "DELETE"),
)


@migration
def m004_run_leases(db: Database) -> None:
    """One runner per run: who scores it (owner, process, host) and its last heartbeat (epoch seconds).

    A table of its own, not columns of `runs`: a lease changes every few seconds, runs are pinned.
    """
    db.table("run_leases").create(
        {"run_id": str, "owner": str, "pid": int, "host": str, "started_at": str, "heartbeat": float},
        pk="run_id",
        foreign_keys=[("run_id", "runs", "id")],
    )


@migration
def m005_ratings(db: Database) -> None:
    """Human ratings made on the Rate page: append-only, one row per act (rate, skip, cannot judge, undo).

    A later row by the same rater on the same item and dimension supersedes an earlier one; an `undo`
    row names the row it takes back. Nothing is ever updated or deleted, so the history stays complete.
    """
    db.execute(
        "CREATE TABLE ratings (id INTEGER PRIMARY KEY, dataset_id TEXT NOT NULL, item_id TEXT NOT NULL, "
        "dimension TEXT NOT NULL, prompt_id TEXT, rater TEXT NOT NULL, rating REAL, "
        "status TEXT NOT NULL CHECK (status IN ('rated', 'skipped', 'cannot_judge', 'undo')), "
        "undoes INTEGER REFERENCES ratings(id), created_at TEXT NOT NULL, "
        "FOREIGN KEY (dataset_id, item_id) REFERENCES items(dataset_id, item_id), "
        "CHECK ((status = 'rated') = (rating IS NOT NULL)), CHECK ((status = 'undo') = (undoes IS NOT NULL)))"
    )
    db.execute("CREATE INDEX ratings_by_rater ON ratings (dataset_id, dimension, rater)")
    for sql in _M005_TRIGGERS:
        db.execute(sql)


_M005_TRIGGERS = (
    _abort(
        "ratings_no_replace",
        "EXISTS (SELECT 1 FROM ratings WHERE id = NEW.id)",
        "ratings are append-only: REPLACE of a stored rating refused (a new rating supersedes it)",
    ),
    _abort(
        "ratings_no_update",
        "1",
        "ratings are append-only: UPDATE refused (a new rating supersedes it)",
        "UPDATE",
    ),
    _abort("ratings_no_delete", "1", "ratings are append-only: DELETE refused (undo adds a row)", "DELETE"),
)


@migration
def m006_archived(db: Database) -> None:
    """Archived datasets, runs and drafts: hidden from pickers, kept whole, restorable.

    A table of its own: archiving must never touch a frozen row (its triggers refuse UPDATE), and a
    restore is a DELETE here, nothing else.
    """
    db.execute(
        "CREATE TABLE archived (kind TEXT NOT NULL CHECK (kind IN ('dataset', 'run', 'draft')), "
        "id TEXT NOT NULL, archived_at TEXT NOT NULL, PRIMARY KEY (kind, id))"
    )


def pending(conn: sqlite3.Connection) -> bool:
    """Whether any migration still has to run (read-only, plain SQL on sqlite-utils' record of them)."""
    if conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [MIGRATIONS_TABLE]
    ).fetchone():
        done = {
            name
            for (name,) in conn.execute(
                f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ?", [MIGRATION_SET]
            )
        }
    else:
        done = set()
    return any(step.__name__ not in done for step in _STEPS)


def migration_set() -> Migrations:
    """The steps as sqlite-utils' Migrations (imported here: only a write needs it)."""
    from ._sqlite import sqlite_utils

    steps = sqlite_utils.Migrations(MIGRATION_SET)
    for step in _STEPS:
        steps()(step)
    return steps


def apply(db: Database, stop_before: str | Iterable[str] | None = None) -> None:
    """Apply pending migrations (the caller holds the write lock); `stop_before` for tests of old files."""
    migration_set().apply(db, stop_before=stop_before)


@migration
def m007_judgment_counts_index(db: Database) -> None:
    """Judgments by run and error: the judged and error counts of every run (`geval runs list`, the pickers)
    read this index alone, never the judgment rows (50 runs x 1,600 judgments: 35 ms -> 5 ms)."""
    db.execute("CREATE INDEX IF NOT EXISTS judgments_by_run_error ON judgments (run_id, error)")


@migration
def m008_judgment_provenance(db: Database) -> None:
    """Why an answered item has no score (note), who answered (server) and where its reply came from
    (source: live, an earlier judgment's cache entry, a batch file)."""
    for column in ("note", "server", "source"):
        db.execute(f"ALTER TABLE judgments ADD COLUMN {column} TEXT")


_JUDGMENTS_INDEX = "CREATE INDEX judgments_by_run_error ON judgments (run_id, error)"


@migration
def m009_tamper_evidence(db: Database) -> None:
    """Results carry hashes: judgments, runs and ratings a row hash, a finished run the digest of its judgments.

    A retry of an errored judgment is its successor (attempt + 1), never an UPDATE: judgments refuse every
    UPDATE now. Cache entries name the judgment they came from (origin); older ones cannot: dropped.
    """
    from .rehash import backfill, rebuild_judgments

    rebuild_judgments(db.conn, _JUDGMENTS_INDEX)
    for column in ("row_hash", "digest"):
        db.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
    db.execute("ALTER TABLE ratings ADD COLUMN row_hash TEXT")
    backfill(db.conn, "runs", "id")  # under the old runs_no_update, which lets row_hash change
    db.execute("DROP TRIGGER ratings_no_update")
    backfill(db.conn, "ratings", "id")
    db.execute("DROP TRIGGER runs_no_update")
    for sql in (*_M009_TRIGGERS, _M005_TRIGGERS[1]):
        db.execute(sql)
    db.execute("ALTER TABLE judge_cache ADD COLUMN origin TEXT")
    db.execute("DELETE FROM judge_cache")


_RUN_PINNED = ("id", "prompt_id", "dataset_id", "judge", "item_ids", "created_at", "row_hash")
_SAME_ITEM = "FROM judgments WHERE run_id = NEW.run_id AND item_id = NEW.item_id"
_M009_TRIGGERS = (
    # The next attempt only, and only after an errored one: a final judgment has no successor.
    _abort(
        "judgments_no_replace",
        f"NEW.attempt IS NOT COALESCE((SELECT MAX(attempt) + 1 {_SAME_ITEM}), 0) "
        f"OR EXISTS (SELECT 1 {_SAME_ITEM} AND error IS NULL)",
        "judgments are immutable: INSERT over a stored judgment refused (an errored one gets a successor, "
        "its next attempt; a re-judge is a new run)",
    ),
    _abort(
        "judgments_no_update",
        "1",
        "judgments are immutable: UPDATE refused (a retry is a new attempt)",
        "UPDATE",
    ),
    _abort("judgments_no_delete", "1", "judgments are immutable: DELETE refused", "DELETE"),
    # Status, finish time, totals, `extra` and the digest change as a run goes on; what it ran never does.
    _abort(
        "runs_no_update",
        " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in _RUN_PINNED),
        "runs change only their status and totals: UPDATE of what was run refused",
        "UPDATE",
    ),
)


# Every protection trigger a migrated library has, by name, as SQLite stores it (without IF NOT EXISTS);
# a later migration's trigger of the same name replaces the earlier one. Opening a library compares its
# triggers with these; tests/library/test_frozen_history.py checks them against a freshly migrated file.
def _named(sqls: Iterable[str]) -> dict[str, str]:
    return {_trigger_name(sql): sql.replace(" IF NOT EXISTS", "", 1) for sql in sqls}


def _trigger_name(sql: str) -> str:
    match = re.match(r"CREATE TRIGGER (?:IF NOT EXISTS )?(\w+)", sql)
    if match is None:
        raise ValueError(f"not a CREATE TRIGGER statement: {sql[:60]}")
    return match[1]


PROTECTION_TRIGGERS = _named((*_M001_TRIGGERS, *_M003_TRIGGERS, *_M005_TRIGGERS, *_M009_TRIGGERS))


@migration
def m010_run_jobs(db: Database) -> None:
    """Runs started by the app as jobs: the worker's options and process, a stop request, the last summary.

    Control state, not results: it changes as a job starts, is stopped and ends, so it has no row hash.
    """
    db.table("run_jobs").create(
        {
            "run_id": str,
            "options": str,
            "pid": int,
            "host": str,
            "started_at": str,
            "stop_requested_at": str,
            "ended_at": str,
            "summary": str,
            "error": str,
        },
        pk="run_id",
        foreign_keys=[("run_id", "runs", "id")],
    )


@migration
def m011_frozen_records(db: Database) -> None:
    """Panels, cascades, splits and test-side uses leave the settings table for one protected table.

    In settings they were plain rows: deleting a test-side use passed `geval verify` and reset what `align
    report` corrects for. Here every version is a row that refuses UPDATE, DELETE and an INSERT over it or out
    of sequence, carries a row hash and the hash of the row before it (frozen_records.py).
    """
    from .frozen_records import move_settings

    db.execute(
        "CREATE TABLE frozen_records (id INTEGER PRIMARY KEY, "
        "kind TEXT NOT NULL CHECK (kind IN ('panel', 'cascade', 'split', 'test-use')), key TEXT NOT NULL, "
        "seq INTEGER NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL, prev TEXT, "
        "row_hash TEXT NOT NULL, UNIQUE (kind, key, seq))"
    )
    for sql in _M011_TRIGGERS:
        db.execute(sql)
    move_settings(db.conn)


_SAME_RECORD = "FROM frozen_records WHERE kind = NEW.kind AND key = NEW.key"
_M011_TRIGGERS = (
    # The next version only: an INSERT OR REPLACE over a stored row, or one that leaves a gap, is refused.
    _abort(
        "frozen_records_no_replace",
        f"EXISTS (SELECT 1 FROM frozen_records WHERE id = NEW.id) "
        f"OR NEW.seq IS NOT COALESCE((SELECT MAX(seq) + 1 {_SAME_RECORD}), 1)",
        "frozen records are append-only: INSERT over a stored version refused (a new version is the next seq)",
    ),
    _abort("frozen_records_no_update", "1", "frozen records are append-only: UPDATE refused", "UPDATE"),
    _abort("frozen_records_no_delete", "1", "frozen records are append-only: DELETE refused", "DELETE"),
)
PROTECTION_TRIGGERS.update(_named(_M011_TRIGGERS))


@migration
def m012_drift_records(db: Database) -> None:
    """Frozen records take drift watches (an anchor set with its reference run) and their checks.

    SQLite cannot widen a CHECK in place: the table is rebuilt with its rows as they are (ids, row hashes and the
    chain unchanged) and its triggers made again.
    """
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'frozen_records'").fetchone()
    if "'drift'" in sql:  # applied already (its record deleted): refused before anything changes
        raise sqlite3.OperationalError("table frozen_records already takes drift records")
    db.execute("ALTER TABLE frozen_records RENAME TO frozen_records_m011")
    db.execute(
        "CREATE TABLE frozen_records (id INTEGER PRIMARY KEY, "
        "kind TEXT NOT NULL CHECK (kind IN ('panel', 'cascade', 'split', 'test-use', 'drift', "
        "'drift-check')), key TEXT NOT NULL, "
        "seq INTEGER NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL, prev TEXT, "
        "row_hash TEXT NOT NULL, UNIQUE (kind, key, seq))"
    )
    db.execute(
        "INSERT INTO frozen_records (id, kind, key, seq, body, created_at, prev, row_hash) "
        "SELECT id, kind, key, seq, body, created_at, prev, row_hash FROM frozen_records_m011 ORDER BY id"
    )
    db.execute("DROP TABLE frozen_records_m011")  # its triggers go with it; DROP fires no DELETE trigger
    for sql in _M011_TRIGGERS:
        db.execute(sql)


@migration
def m013_cached_input_tokens(db: Database) -> None:
    """Of a judgment's input tokens, those the judge's server read from its prompt cache (OpenAI's cached_tokens,
    Gemini's cached_content_token_count, the local judge's reused prefix): the run's cost prices them at the
    cached rate. Rows written before hold NULL, which their row hashes leave out, so they stay valid."""
    db.execute("ALTER TABLE judgments ADD COLUMN cached_input_tokens INTEGER")


# The trigger's check "an error-free judgment of this item exists" reads the judgment's key, never the run's
# (run_id, error) index: `+error` takes the error column out of index choice, so SQLite looks the item up by
# (run_id, item_id) with or without planner statistics, and a run's inserts stay O(log N) each.
_M014_TRIGGERS = (
    _abort(
        "judgments_no_replace",
        f"NEW.attempt IS NOT COALESCE((SELECT MAX(attempt) + 1 {_SAME_ITEM}), 0) "
        f"OR EXISTS (SELECT 1 {_SAME_ITEM} AND +error IS NULL)",
        "judgments are immutable: INSERT over a stored judgment refused (an errored one gets a successor, "
        "its next attempt; a re-judge is a new run)",
    ),
)


@migration
def m014_judgment_key_lookup(db: Database) -> None:
    """The judgments' replace guard looks an item up by its key (see _M014_TRIGGERS): the planner statistics a
    library was given for it are no longer needed."""
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'judgments_no_replace'").fetchone()
    if "+error" in sql:  # applied already (its record deleted): refused before anything changes
        raise sqlite3.OperationalError("trigger judgments_no_replace already looks items up by their key")
    db.execute("DROP TRIGGER judgments_no_replace")
    for sql in _M014_TRIGGERS:
        db.execute(sql)


PROTECTION_TRIGGERS.update(_named(_M014_TRIGGERS))
