"""A judge-cache entry is replayed only when its whole reply is the one its origin judgment was scored from (issue 38).

The attack: keep an entry's texts, change its log-probabilities (or its usage), recompute its unkeyed hash as
anyone can. Before, verify said nothing and the next run took every reply from the cache with other scores.
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from click.testing import CliRunner
from runner_helpers import WORKED_SCORE, close, setup_library, worked_judge

from geval_core.cli import cli
from geval_core.errors import IntegrityError
from geval_core.run import RunOptions, run_scoring
from geval_core.scoring import score_reply
from geval_core.types import JudgeReply
from prompt_library import verify_library
from prompt_library.runs import cache_hash

SURE_FIVE = [["5", math.log(0.9)], ["3", math.log(0.1)]]  # the forger's alternatives at the rating position


def scored_run(library, prompt, items, judge):
    run = library.create_run(prompt.id, "tiny", prompt.dimension.judge)
    return run, run_scoring(prompt, items, judge, library, run, RunOptions(concurrency=2))


def forge(path, change) -> list[str]:
    """Rewrite every cache entry's reply with `change(reply)`, its hash recomputed; returns the entries' keys."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        rows = conn.execute("SELECT key, reply FROM judge_cache ORDER BY key").fetchall()
        for key, text in rows:
            reply = json.loads(text)
            change(reply)
            forged = json.dumps(reply, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            conn.execute(
                "UPDATE judge_cache SET reply = ?, hash = ? WHERE key = ?",
                [forged, cache_hash(key, forged), key],
            )
        return [key for key, _ in rows]
    finally:
        conn.close()


def other_logprobs(reply: dict) -> None:
    """The texts kept ("3"), the probabilities moved to 5."""
    for choice in reply["choices"]:
        for position in choice["positions"]:
            position[1], position[2] = math.log(0.1), SURE_FIVE


def other_usage(reply: dict) -> None:
    reply["usage"]["input_tokens"] += 1


@pytest.fixture
def honest(tmp_path):
    """A library with a finished run of 6 items (every cache entry written by it) and its scores."""
    path = tmp_path / "lib.db"
    library, prompt, items, _ = setup_library(path, count=6)
    run, summary = scored_run(library, prompt, items, worked_judge())
    assert summary.judge_calls == 6 and library._one("SELECT COUNT(*) AS n FROM judge_cache")["n"] == 6
    assert verify_library(library)["ok"]
    yield path, library, prompt, items, run, [j["score"] for j in library.judgments(run)]
    library.close()


def test_forged_log_probabilities_are_never_replayed_and_verify_names_each_entry(honest):
    path, library, prompt, items, _, scores = honest
    keys = forge(path, other_logprobs)
    (key, forged_text), *_ = library.conn.execute(
        "SELECT key, reply FROM judge_cache ORDER BY key"
    ).fetchall()
    forged = score_reply(JudgeReply.from_dict(json.loads(forged_text)), prompt.dimension.scale, "logprobs")
    assert forged.score > 4.5 and not close(
        forged.score, WORKED_SCORE
    )  # replayed, it would change every score
    assert json.loads(forged_text)["choices"][0]["text"] == "3"
    report = verify_library(library)
    named = {p["name"]: p["problem"] for p in report["problems"] if p["kind"] == "cache entry"}
    assert not report["ok"] and len(report["problems"]) == 6
    assert sorted(named) == sorted(k[:12] + "…" for k in keys)
    assert all("its log-probabilities differ" in why and "never replayed" in why for why in named.values())
    with pytest.raises(IntegrityError, match=f"judge cache entry {key[:12]}: .*log-probabilities differ"):
        library.cache_get(key)
    judge = worked_judge()
    run, again = scored_run(library, prompt, items, judge)
    assert (again.cached, again.cache_rejected, again.judge_calls, len(judge.requests)) == (0, 6, 6, 6)
    assert [j["score"] for j in library.judgments(run)] == scores and all(
        close(s, WORKED_SCORE) for s in scores
    )
    assert verify_library(library)["ok"]  # the judge's fresh replies replaced the forged entries
    _, third = scored_run(library, prompt, items, worked_judge())
    assert (third.cached, third.cache_rejected, third.judge_calls) == (6, 0, 0)  # honest entries still replay


def test_forged_usage_is_never_replayed(honest):
    path, library, prompt, items, _, scores = honest
    forge(path, other_usage)
    problems = verify_library(library)["problems"]
    assert len(problems) == 6 and all("its token counts differ" in p["problem"] for p in problems)
    run, again = scored_run(library, prompt, items, worked_judge())
    assert (again.cached, again.cache_rejected) == (0, 6)
    assert [j["input_tokens"] for j in library.judgments(run)] == [106] * 6


def test_verify_sign_refuses_to_sign_over_a_forged_cache(honest, tmp_path, monkeypatch):
    path, library, _, _, run, _ = honest
    monkeypatch.setenv("GEVAL_SIGNING_KEY", "0123456789abcdef0123456789abcdef")
    clean = CliRunner().invoke(cli, ["verify", "--db", str(path), "--sign", run])
    assert clean.exit_code == 0 and '"signature"' in clean.output, clean.output
    forge(path, other_logprobs)
    refused = CliRunner().invoke(cli, ["verify", "--db", str(path), "--sign", run])
    assert refused.exit_code == 1 and '"signature"' not in refused.output
    assert f"run {run} not signed" in refused.output and "its log-probabilities differ" in refused.output
