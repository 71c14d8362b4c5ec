"""`geval score` as a script meets it: --id alone names a file's id field, and a judge without its key is
refused before a run is recorded (a run that can never start would stay "running" for good)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings
from prompt_library import Library

KEY = "sk-test-SCRIPTING00000000000000000000000000"


def test_id_alone_names_the_id_field_of_a_file(tmp_path):
    library, prompt, _, _ = setup_library(
        tmp_path / "lib.db", count=1, judge=JudgeSettings(provider="openai", model="fault-model")
    )
    library.close()
    rows = [{"ticket_id": f"t{k}", "document": f"Ticket {k}.", "summary": f"Answer {k}."} for k in range(3)]
    data = tmp_path / "support.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with FaultServer() as server:
        done = CliRunner().invoke(
            cli,
            [
                "score",
                "--prompt",
                prompt.label,
                "--data",
                str(data),
                "--id",
                "ticket_id",
                "--db",
                str(tmp_path / "lib.db"),
                "--base-url",
                server.base_url,
            ],
            env={"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""},
        )
    assert done.exit_code == 0, done.output
    assert sorted(json.loads(line)["id"] for line in done.stdout.splitlines()) == ["t0", "t1", "t2"]


def test_a_judge_without_its_key_records_no_run(tmp_path):
    library, prompt, _, dataset = setup_library(
        tmp_path / "lib.db", count=2, judge=JudgeSettings(provider="openai", model="gpt-4o-mini")
    )
    library.close()
    done = CliRunner().invoke(
        cli,
        ["score", "--prompt", prompt.label, "--data", dataset["label"], "--db", str(tmp_path / "lib.db")],
        env={"OPENAI_API_KEY": ""},
    )
    assert done.exit_code != 0 and "needs an API key: set OPENAI_API_KEY" in done.output
    assert "Traceback" not in done.output
    with Library(tmp_path / "lib.db") as library:
        assert library.list_runs() == []
