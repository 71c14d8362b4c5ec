"""Files and libraries the CLI cannot use end in one clear line and exit 1, never a traceback (issue 38):
deeply nested JSON to `prompts freeze` and `panel import`, a member's server URL, a panel file of 2,000
members, a full disk when the library is opened."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.prompts import canonical_hash
from geval_core.run.panel import freeze_panel
from prompt_library import Library
from prompt_library.base import LibraryBase

DEPTH = 100_000


@pytest.fixture
def db(tmp_path) -> str:
    path = tmp_path / "lib.db"
    Library(path).close()
    return str(path)


def fails_cleanly(args: list[str], *wanted: str) -> str:
    """Exit 1 with one 'Error: ' line naming each of `wanted` (warnings before it aside), and no traceback."""
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (
        result.output,
        result.exception,
    )
    assert "Traceback" not in result.output
    lines = [line for line in result.output.strip().splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for text in wanted:
        assert text in lines[0], lines[0]
    return lines[0]


def panel_file(db: str, path: Path, members: int, name: str = "coherence") -> dict:
    """A panel of `members` different prompts (definitions differ) exported to `path`; the file's data."""
    with Library(db) as lib:
        base = lib.get_prompt("coherence")
        prompts = [
            lib.freeze(
                replace(base.dimension, definition=f"Variant {k}: sentences that build one whole."), name=name
            ).prompt
            for k in range(members)
        ]
        freeze_panel(lib, "jury", prompts, "mean")
    result = CliRunner().invoke(cli, ["panel", "export", "jury", "-o", str(path), "--db", db])
    assert result.exit_code == 0, result.output
    return json.loads(path.read_text())


def rewrite(path: Path, data: dict) -> None:
    """The panel file with its members changed and its hash recomputed, as a hand-edited file would be."""
    data["id"] = canonical_hash(
        {"members": [m["content_hash"] for m in data["members"]], "rule": data["rule"]}
    )
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "text", ["[" * DEPTH, '{"name": "x", "definition": ' + "[" * DEPTH + "]" * DEPTH + "}"]
)
def test_deeply_nested_json_is_refused_by_freeze_and_panel_import(db, tmp_path, text):
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    fails_cleanly(["prompts", "freeze", str(deep), "--db", db], str(deep), "nested too deeply")
    fails_cleanly(["panel", "import", str(deep), "--db", db], str(deep), "panel file", "nested too deeply")
    with Library(db) as lib:
        assert len(lib.list_prompts()) == 4  # the seeded examples only


def test_a_dimension_field_of_the_wrong_type_is_named(db, tmp_path):
    shallow = tmp_path / "list.json"
    shallow.write_text(json.dumps({"name": "x", "definition": [[1]]}))  # parsed fine, then .strip() on a list
    fails_cleanly(["prompts", "freeze", str(shallow), "--db", db], "definition must be text")
    export = tmp_path / "p.json"
    CliRunner().invoke(cli, ["prompts", "export", "coherence", "-o", str(export), "--db", db])
    data = json.loads(export.read_text())
    export.write_text(json.dumps({**data, "steps": 5}))
    fails_cleanly(["prompts", "import", str(export), "--db", db], "steps must be a list of texts")


def test_a_member_server_url_is_warned_about_as_prompts_import_does(db, tmp_path):
    path = tmp_path / "jury.json"
    data = panel_file(db, path, 2)
    data["members"][1]["judge"]["base_url"] = "http://judge.internal:8000/v1"  # not part of the content hash
    path.write_text(json.dumps(data))
    other = str(tmp_path / "other.db")
    result = CliRunner().invoke(cli, ["panel", "import", str(path), "--db", other, "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    said = "the export names a server (http://judge.internal:8000/v1) under judge; ignored"
    assert f"warning: member 2: {said}" in result.stderr
    (warning,) = json.loads(result.stdout)["warnings"]
    assert warning.startswith(f"member 2: {said}")
    prompt_file = tmp_path / "member.json"  # the same words as `prompts import` of that member alone
    prompt_file.write_text(json.dumps(data["members"][1]))
    alone = CliRunner().invoke(cli, ["prompts", "import", str(prompt_file), "--db", other])
    assert f"warning: {said}" in alone.stderr
    with Library(other) as lib:
        assert all(
            lib.get_prompt(m).dimension.judge.base_url is None for m in json.loads(result.stdout)["members"]
        )


def test_a_panel_file_of_2000_members_is_imported(db, tmp_path):
    path = tmp_path / "jury.json"
    data = panel_file(db, path, 2000)  # 2,000 versions of one name: each member's note read them all before
    other = str(tmp_path / "other.db")
    result = CliRunner().invoke(cli, ["panel", "import", str(path), "--db", other, "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["id"] == data["id"] and len(got["members"]) == 2000 and got["warnings"] == []


def test_a_panel_file_repeating_a_member_is_refused_for_that(db, tmp_path):
    path = tmp_path / "jury.json"
    data = panel_file(db, path, 2)
    data["members"] = data["members"] * 1000  # 2,000 members, two prompts: the hash recomputed to match
    rewrite(path, data)
    line = fails_cleanly(
        ["panel", "import", str(path), "--db", str(tmp_path / "other.db")],
        "member 3 repeats member 1",
        "nothing was imported",
    )
    assert "two different" not in line  # the old, wrong reason: there are two different prompts


def test_a_full_disk_at_open_is_said_so(tmp_path, monkeypatch):
    def full(self):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(LibraryBase, "_enable_wal", full)
    new = tmp_path / "new.db"
    line = fails_cleanly(
        ["prompts", "list", "--db", str(new)],
        str(new),
        "could not write the library",
        "disk holding it is full",
    )
    assert "not a workbench library" not in line
    junk = tmp_path / "junk.db"
    junk.write_text("shopping list")
    monkeypatch.undo()
    fails_cleanly(
        ["prompts", "list", "--db", str(junk)], "not a workbench library"
    )  # still said of a non-library
