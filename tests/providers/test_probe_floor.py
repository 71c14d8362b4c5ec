"""`geval probe` says, before any run, when a judge puts too little probability on the ratings to be scored:
the real llama.cpp server with the tiny model, asked through the chat API, writes words at the rating."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.providers.capabilities import probe_findings
from geval_core.types import JudgeSettings


@pytest.mark.slow
def test_probe_reports_the_valid_mass_and_warns_below_the_floor(llama_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(
        cli,
        [
            "probe",
            "--judge",
            "openai:smollm2",
            "--base-url",
            llama_server,
            "--db",
            str(tmp_path / "lib.db"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    facts = json.loads(result.stdout)
    assert 0.0 <= facts["valid_mass"] <= 1.0 and isinstance(facts["reply_start"], str)
    settings = JudgeSettings(provider="openai", model="smollm2", base_url=llama_server)
    low = [f for f in probe_findings(facts, settings) if "of the probability on the ratings" in f]
    assert bool(low) == (facts["valid_mass"] < 0.5)
    assert probe_findings({**facts, "valid_mass": 0.007, "reply_start": "Your task"}, settings)[0].startswith(
        "this judge put 0.7% of the probability on the ratings in its test (the floor is 50%"
    )
