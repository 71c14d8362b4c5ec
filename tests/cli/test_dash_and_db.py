"""Script conventions: "-" is stdout for --out and -o, and --db may come before the sub-command."""

from __future__ import annotations

import json

from click.testing import CliRunner
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings


def test_dash_is_stdout_and_db_goes_before_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    library, prompt, _, dataset = setup_library(tmp_path / "lib.db", count=2,
                                                judge=JudgeSettings(provider="scripted", model="scripted-1"))
    library.close()
    db = str(tmp_path / "lib.db")
    done = CliRunner().invoke(cli, ["--db", db, "score", "--prompt", prompt.label, "--data", dataset["label"],
                                    "--out", "-"])
    assert done.exit_code == 0, done.output
    assert len([json.loads(line) for line in done.stdout.splitlines()]) == 2 and not (tmp_path / "-").exists()
    exported = CliRunner().invoke(cli, ["--db", db, "prompts", "export", prompt.label, "-o", "-"])
    assert exported.exit_code == 0 and json.loads(exported.stdout)["content_hash"] == prompt.id
    assert not (tmp_path / "-").exists()
