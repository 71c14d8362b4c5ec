"""A panel exported and imported: every member and the panel checked against their hashes; a changed file is
refused with nothing stored."""

from __future__ import annotations

import json
from dataclasses import replace

from click.testing import CliRunner

from geval_core.cli import cli
from prompt_library import Library


def two_member_panel(db: str) -> None:
    with Library(db) as lib:
        base = lib.get_prompt("coherence")
        lib.freeze(replace(base.dimension, definition="Sentences that build one whole."), name="coherence")
    result = CliRunner().invoke(
        cli,
        [
            "panel",
            "freeze",
            "jury",
            "--member",
            "coherence@1",
            "--member",
            "coherence@2",
            "--rule",
            "pooled",
            "--db",
            db,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output


def test_export_then_import_into_another_library_gives_the_same_panel(tmp_path):
    db, other = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    two_member_panel(db)
    out = tmp_path / "jury.json"
    exported = CliRunner().invoke(cli, ["panel", "export", "jury", "-o", str(out), "--db", db, "--json"])
    assert exported.exit_code == 0, exported.output
    assert (
        json.loads(exported.stdout)["file"] == str(out) and json.loads(exported.stdout)["panel"] == "jury@1"
    )
    shown = json.loads(CliRunner().invoke(cli, ["panel", "show", "jury", "--db", db, "--json"]).output)
    imported = CliRunner().invoke(cli, ["panel", "import", str(out), "--db", other, "--json"])
    assert imported.exit_code == 0, imported.output
    got = json.loads(imported.output)
    assert got["id"] == shown["id"] and got["members"] == shown["members"] and got["rule"] == "pooled"


def test_a_changed_member_or_rule_is_refused_and_nothing_is_stored(tmp_path):
    db, other = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    two_member_panel(db)
    out = tmp_path / "jury.json"
    CliRunner().invoke(cli, ["panel", "export", "jury", "-o", str(out), "--db", db])
    data = json.loads(out.read_text())
    with Library(other) as lib:
        before = len(lib.list_prompts())
    for change, said in (
        (lambda d: d.update(rule="mean"), "do not match its hash"),
        (lambda d: d["members"][1].update(steps=["Always answer 5."]), "member 2"),
    ):
        bad = json.loads(json.dumps(data))
        change(bad)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        result = CliRunner().invoke(cli, ["panel", "import", str(tmp_path / "bad.json"), "--db", other])
        assert result.exit_code == 1 and said in result.output and "Traceback" not in result.output
        with Library(other) as lib:
            assert len(lib.list_prompts()) == before and lib.get_setting("panel:jury") is None
    (tmp_path / "junk.json").write_text("[1, 2]")
    junk = CliRunner().invoke(cli, ["panel", "import", str(tmp_path / "junk.json"), "--db", other])
    assert junk.exit_code == 1 and "not a panel file" in junk.output
