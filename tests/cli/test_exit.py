"""How a `geval` process ends (issue 15): without the interpreter's teardown, but with everything written.

The console entry (`cli()`) closes every library, flushes its output and exits with the command's code
at once. A closed library has its WAL checkpointed into the file, so the .db alone holds every judgment.
A reader that closes the pipe early ends the command quietly with 141.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

from runner_helpers import setup_library

from geval_core.judgment import Judgment
from geval_core.types import JudgeSettings

CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]
SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def test_a_score_leaves_no_write_outside_the_library_file(tmp_path):
    db = tmp_path / "lib.db"
    library, prompt, items, dataset = setup_library(db, count=30, judge=SCRIPTED)
    library.close()
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [
            *CLI,
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--db",
            str(db),
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "lib.db-wal").exists() and not (tmp_path / "lib.db-shm").exists()
    copy = tmp_path / "copy.db"  # what a user sharing the file would send
    shutil.copyfile(db, copy)
    with sqlite3.connect(copy) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM judgments WHERE score IS NOT NULL").fetchone()[0]
    assert stored == 30
    assert len(out.read_text().splitlines()) == 30  # the results file was flushed too


def test_exit_codes_and_messages_survive_the_quick_exit(tmp_path):
    db = tmp_path / "lib.db"
    setup_library(db, count=2, judge=SCRIPTED)[0].close()
    missing = subprocess.run(
        [*CLI, "runs", "show", "nope", "--db", str(db)], capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 1 and "no run 'nope'" in missing.stderr
    usage = subprocess.run([*CLI, "nonsense"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "No such command 'nonsense'" in usage.stderr
    listing = subprocess.run(
        [*CLI, "prompts", "list", "--json", "--db", str(db)], capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0 and {"coherence"} <= {p["name"] for p in json.loads(listing.stdout)}


def test_a_reader_closing_the_pipe_ends_the_command_quietly(tmp_path):
    db = tmp_path / "lib.db"
    library, prompt, items, dataset = setup_library(db, count=3000, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    for item in items:  # 3,000 rows of JSONL: far more than a pipe's buffer
        library.save_judgment(run_id, Judgment(item.id, score=3.0, distribution={3: 1.0}, replies=("3",) * 8))
    library.close()
    proc = subprocess.Popen(
        [*CLI, "runs", "export", run_id, "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141
    assert json.loads(first)["id"] == items[0].id and proc.stderr.read() == b""
