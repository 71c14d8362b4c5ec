"""`geval probe` against real judges: the embedded local model and the llama.cpp OpenAI-compatible server."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.diagnostics.judge_probe import probe_judge
from geval_core.types import FrozenPrompt, JudgeSettings, Scale

TEN = replace(dimension(JudgeSettings()), scale=Scale(1, 10), anchors={i: f"level {i}" for i in range(1, 11)})


@pytest.mark.slow
def test_probe_of_the_local_judge_names_the_split_ten(local_judge):
    facts = probe_judge(local_judge, JudgeSettings(), FrozenPrompt("0" * 64, "Coherence", 1, TEN, "now"))
    assert facts["reachable"] and facts["logprobs"] and facts["top_logprobs_max"] >= 20
    assert facts["n_honoured"] is True  # in-process: one call gives n replies
    # SmolLM2's tokenizer writes numbers one digit per token (see checks.LOCAL_SINGLE_TOKEN_MAX).
    assert facts["single_token_ratings"] is False and facts["split_ratings"] == ["10"]
    assert facts["usd_per_item"] == 0.0


@pytest.mark.slow
def test_probe_of_the_llama_cpp_server_reports_and_stores_its_facts(llama_server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = str(tmp_path / "lib.db")
    result = CliRunner().invoke(
        cli, ["probe", "--judge", "openai:smollm2", "--base-url", llama_server, "--db", db, "--json"]
    )
    assert result.exit_code == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["reachable"] and facts["model_version"] == "smollm2"
    assert facts["logprobs"] is True and 1 <= facts["top_logprobs_max"] <= 20
    assert facts["n_honoured"] is False  # llama.cpp's server answers one choice whatever n says
    assert facts["single_token_ratings"] is True and facts["latency_s"] > 0
    shown = CliRunner().invoke(
        cli, ["probe", "--judge", "openai:smollm2", "--base-url", llama_server, "--db", db]
    )
    assert "n_honoured: False" in shown.stdout and "ignores n" not in shown.stdout  # n is 1 in these settings
