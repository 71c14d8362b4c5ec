"""The low-mass case through the real llama.cpp server: the tiny model, asked through the chat API (which
cannot prime the reply), mostly writes words at the rating position. No item below the valid-mass floor may
carry a score, and every unscored item says why."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings


@pytest.mark.slow
def test_geval_score_through_llama_cpp_never_scores_below_the_floor(llama_server, tmp_path):
    db = tmp_path / "low.db"
    judge = JudgeSettings(provider="openai", model="smollm2")
    library, prompt, items, dataset = setup_library(db, count=6, judge=judge)
    library.close()
    out = tmp_path / "results.jsonl"
    done = CliRunner().invoke(
        cli,
        [
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--db",
            str(db),
            "--base-url",
            llama_server,
            "--concurrency",
            "1",
            "--out",
            str(out),
        ],
    )
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(items) and "Traceback" not in done.output
    scored = [r for r in rows if r["score"] is not None]
    unscored = [r for r in rows if r["score"] is None]
    assert all(r["valid_mass"] >= 0.5 for r in scored)  # low-mass items scored: 0
    for row in unscored:
        assert row["error"] or row["note"], row  # every item without a score says why
    below = [r for r in unscored if r["note"] and r["note"].startswith("the judge put")]
    assert all(r["valid_mass"] < 0.5 for r in below)
    assert {r["server"] for r in rows} == {llama_server.rstrip("/")}
    assert done.exit_code == (0 if scored else 4), done.output
