"""Libraries the workbench cannot use end in one clear line, exit 1, nothing half-written (issue 24, item 6).

A newer library, a full disk, deeply nested JSON, a dropped column, a missing migration record: each
runs through the CLI in this process (CliRunner) and must end in a clean error, never a traceback.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from prompt_library import Library
from prompt_library.base import LibraryBase
from prompt_library.schema import step_names


@pytest.fixture
def library(tmp_path) -> Path:
    path = tmp_path / "lib.db"
    Library(path).close()
    return path


def sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def fails_cleanly(args: list[str], *wanted: str) -> str:
    """Run a command; it must exit 1 with one line of error naming each of `wanted` (besides warnings said
    before it, and the results lines `geval score` wrote as its judgments committed), and no traceback."""
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (
        result.output,
        result.exception,
    )
    assert "Traceback" not in result.output
    lines = [
        line for line in result.output.strip().splitlines() if not line.startswith(("warning: ", '{"id": '))
    ]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for text in wanted:
        assert text in lines[0], lines[0]
    return lines[0]


def test_a_library_of_a_newer_version_is_refused_with_both_versions(library):
    from prompt_library.schema import schema_version

    known = schema_version()
    sql(
        library,
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
        "VALUES ('geval_library', 'm999_future', 'later')",
    )
    fails_cleanly(
        ["runs", "list", "--db", str(library)],
        "newer version",
        f"schema version {known + 1}",
        "migrations m999_future",
        f"reads schema version {known}",
    )
    fails_cleanly(["verify", "--db", str(library)], "newer version")
    sql(
        library,
        "DELETE FROM _sqlite_migrations WHERE name = 'm999_future'",
        f"PRAGMA user_version = {known + 3}",
    )
    fails_cleanly(
        ["prompts", "list", "--db", str(library)],
        f"schema version {known + 3}",
        f"reads schema version {known}",
    )
    with sqlite3.connect(library) as conn:  # refused before anything was written: no 'upgrade' of the file
        assert conn.execute("PRAGMA user_version").fetchone()[0] == known + 3


def test_a_dropped_column_is_named_at_open(library):
    sql(library, "ALTER TABLE judgments DROP COLUMN score")
    fails_cleanly(
        ["runs", "list", "--db", str(library)], "schema was changed", "judgments: column score missing"
    )
    fails_cleanly(
        ["agree", "nope", "--human", "coherence", "--db", str(library)], "judgments: column score missing"
    )


LAST = step_names()[-1]


@pytest.mark.parametrize(
    "record,wanted",
    [
        ("m003_pin", "m003_pin missing though later ones are recorded"),
        (LAST, f"applying migration {LAST} failed"),  # the last step: re-applied, it finds its own tables
    ],
)
def test_a_missing_migration_record_is_named_and_nothing_is_changed(library, record, wanted):
    sql(library, f"DELETE FROM _sqlite_migrations WHERE name = '{record}'")
    with sqlite3.connect(library) as conn:
        before = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    fails_cleanly(["runs", "list", "--db", str(library)], wanted)
    with sqlite3.connect(library) as conn:
        assert conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == before


def test_deeply_nested_json_is_refused_on_import(library, tmp_path):
    depth = 100_000
    rows = tmp_path / "deep.jsonl"
    rows.write_text('{"id": "a", "document": "x", "summary": ' + "[" * depth + "]" * depth + "}\n")
    fails_cleanly(
        [
            "datasets",
            "import",
            str(rows),
            "--name",
            "deep",
            "--input",
            "document=document",
            "--db",
            str(library),
        ],
        "nested too deeply",
    )
    prompt = tmp_path / "deep.json"
    prompt.write_text('{"a": ' + "[" * depth + "]" * depth + "}")
    fails_cleanly(["prompts", "import", str(prompt), "--db", str(library)], "nested too deeply")
    with Library(library) as lib:
        assert [d.name for d in lib.list_datasets()] == ["sample"]


@pytest.fixture
def full_disk(monkeypatch, library):
    """Every library connection may grow the file by 8 pages only (SQLite's answer: 'database or disk is full')."""
    opened = LibraryBase._enable_wal

    def tight(self):
        opened(self)
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {pages + 8}")

    monkeypatch.setattr(LibraryBase, "_enable_wal", tight)
    return monkeypatch


def test_a_full_disk_ends_in_one_message_and_nothing_half_written(full_disk, library, tmp_path):
    rows = tmp_path / "big.jsonl"
    rows.write_text("".join(f'{{"id": "r{k}", "document": "{"words " * 200}"}}\n' for k in range(300)))
    fails_cleanly(
        [
            "datasets",
            "import",
            str(rows),
            "--name",
            "big",
            "--input",
            "document=document",
            "--db",
            str(library),
        ],
        "disk holding the library is full",
        "nothing of this write was stored",
    )
    fails_cleanly(
        [
            "score",
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--judge",
            "scripted:scripted-1",
            "--db",
            str(library),
            "--quiet",
        ],
        "disk holding the library is full",
    )
    full_disk.undo()
    with Library(library) as lib:
        assert [d.name for d in lib.list_datasets()] == ["sample"]
        for run in lib.list_runs():  # whatever the run wrote is whole: its counts are its rows
            assert run.judged == len(lib.judgments(run.id))
    result = CliRunner().invoke(cli, ["verify", "--db", str(library), "--json"])
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    # Until the runner names each cache entry's judgment (cache_put's origin), its entries are reported so.
    assert all(p["kind"] == "cache entry" and "names no judgment" in p["problem"] for p in report["problems"])
    assert report["checked"]["judgments"] > 0
