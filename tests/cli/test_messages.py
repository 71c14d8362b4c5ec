"""No tracebacks: a file that is no library, missing output folders, a locked library: clean messages, exit 1."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

from faultserver import FaultServer
from runner_helpers import setup_library

from geval_core.types import JudgeSettings
from prompt_library import Library

CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def geval(*args, env=None):
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-messages", **(env or {})},
    )


def test_a_file_that_is_not_a_library_is_named(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("shopping list")
    out = geval("prompts", "list", "--db", str(bad))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"{bad}: not a workbench library" in out.stderr and bad.read_text() == "shopping list"


def test_output_paths_are_checked_before_anything_is_paid_for(tmp_path):
    with FaultServer() as server:
        settings = JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url)
        library, prompt, _, dataset = setup_library(tmp_path / "lib.db", count=3, judge=settings)
        runs_before = len(library.list_runs())
        library.close()
        out = geval(
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--db",
            str(tmp_path / "lib.db"),
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "missing" / "out.jsonl"),
        )
        assert server.count == 0
    assert out.returncode == 1 and "Traceback" not in out.stderr and "does not exist" in out.stderr
    assert len(Library(tmp_path / "lib.db").list_runs()) == runs_before
    export = geval(
        "prompts",
        "export",
        prompt.label,
        "--db",
        str(tmp_path / "lib.db"),
        "-o",
        str(tmp_path / "nowhere" / "p.json"),
    )
    assert export.returncode == 1 and "does not exist" in export.stderr and "Traceback" not in export.stderr


def test_a_library_locked_too_long_says_so(tmp_path):
    path = tmp_path / "lib.db"
    Library(path).close()
    (tmp_path / "x.jsonl").write_text('{"id": "1", "b": "text"}\n')
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")  # another process's long write
    try:
        out = geval(
            "datasets",
            "import",
            str(tmp_path / "x.jsonl"),
            "--name",
            "x",
            "--input",
            "a=b",
            "--db",
            str(path),
            env={"GEVAL_BUSY_TIMEOUT": "1"},
        )
    finally:
        holder.rollback()
        holder.close()
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "has been locked by another process for more than 1 s" in out.stderr
