"""Numbers that mean what they say: a reply with almost no probability on the ratings has no score (with the
reason), a judge that breaks mid-run stops the run within a window of items, the server that really answered
is recorded and keys the cache (OPENAI_BASE_URL included), and a re-run of the same state exits the same."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension, setup_library

from geval_core.cli import cli
from geval_core.export import score_item
from geval_core.files.prompt_files import export_prompt, open_export
from geval_core.prompts import content_hash, metric_fields
from geval_core.providers import get_judge
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.hopeless import HOPELESS_WINDOW
from geval_core.types import JudgeSettings

KEY = "sk-test-MEANING000000000000000000000000000"
LOW = {"Your": 0.993, "3": 0.007}  # the small model wrote "Your task is to evaluate"


def fault_settings(server: FaultServer, **changes) -> JudgeSettings:
    return JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url, **changes)


def test_a_reply_with_almost_no_probability_on_the_ratings_has_no_score_and_says_why(tmp_path):
    library, prompt, items, _ = setup_library(tmp_path / "low.db", count=1)
    judgment = score_item(prompt, dict(items[0].fields), judge=ScriptedJudge(lambda request: dict(LOW)))
    assert judgment.score is None and judgment.raw_score is None and judgment.error is None
    assert math.isclose(judgment.valid_mass, 0.007)
    assert judgment.note == (
        "the judge put 0.7% of the probability on the ratings (the floor is 50%); its reply began 'Your'"
    )
    library.close()


def test_the_floor_is_frozen_with_the_prompt_and_hashed_only_when_changed():
    usual, strict = dimension(), dimension(judge=JudgeSettings(valid_mass_floor=0.8))
    assert "valid_mass_floor" not in metric_fields(usual)["judge"]  # every earlier prompt keeps its hash
    assert metric_fields(strict)["judge"]["valid_mass_floor"] == 0.8 and content_hash(usual) != content_hash(
        strict
    )
    from geval_core.types import FrozenPrompt

    frozen = FrozenPrompt(content_hash(strict), "strict", 1, strict, "2026-01-01")
    data = export_prompt(frozen)
    assert data["scoring"]["valid_mass_floor"] == 0.8  # shown in every export
    assert open_export(data).prompt.dimension.judge.valid_mass_floor == 0.8


def test_geval_score_counts_low_mass_items_and_exits_4_on_every_rerun(tmp_path):
    library, prompt, items, dataset = setup_library(
        tmp_path / "cli.db", count=3, judge=JudgeSettings(provider="openai", model="fault-model")
    )
    library.close()
    with FaultServer(distribution=LOW) as server:
        args = [
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--db",
            str(tmp_path / "cli.db"),
            "--base-url",
            server.base_url,
            "--concurrency",
            "1",
        ]
        first = CliRunner().invoke(cli, args, env={"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""})
        again = CliRunner().invoke(cli, args, env={"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""})
    assert first.exit_code == 4, first.output
    assert "3 without a score (3 below the valid-mass floor)" in first.output
    assert again.exit_code == 4 and server.count == 3  # same state, same exit code; nothing asked twice


@pytest.mark.parametrize("fault", ["500", "nologprobs", "out of scale"])
def test_a_judge_that_breaks_after_a_good_start_is_stopped_within_the_window(tmp_path, fault):
    good = 40

    def script(index: int, body: dict) -> str:
        return "ok" if index < good or fault == "out of scale" else fault

    def distribution(body: dict) -> dict:
        seen = server.count
        return {"7": 1.0} if fault == "out of scale" and seen > good else {"4": 0.9, "3": 0.1}

    server = FaultServer(script, distribution=distribution)
    with server:
        library, prompt, items, dataset = setup_library(
            tmp_path / "break.db", count=400, judge=fault_settings(server)
        )
        settings = fault_settings(server)  # a frozen prompt names no server: the run does
        run_id = library.create_run(prompt.id, dataset["id"], settings)
        judge = get_judge(settings, api_key=KEY)
        options = RunOptions(
            settings=settings, concurrency=4, max_attempts=2, retry_base=0.0, use_cache=False
        )
        summary = run_scoring(prompt, items, judge, library, run_id, options)
        after_break = server.count - good
    assert summary.status == "failed" and "items all ended without a score" in summary.error
    assert summary.scored >= good - 4  # the good start is kept (in-flight calls may straddle the break)
    # Requests after the break: the window's items, their retries, and the calls already in flight (a good
    # answer written late, among the failures, restarts the window once at most per call in flight). Without
    # the stop the run would send every item's attempts: 400 x 2.
    attempts = 1 if fault == "out of scale" else options.max_attempts
    assert after_break <= 2 * (HOPELESS_WINDOW + 2 * options.concurrency) * attempts, after_break
    assert summary.judged < len(items) / 2
    library.close()


def test_the_server_in_openai_base_url_answers_is_recorded_and_never_replayed_for_another(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    library, prompt, items, dataset = setup_library(
        tmp_path / "env.db", count=3, judge=JudgeSettings(provider="openai", model="fault-model")
    )
    with FaultServer() as first, FaultServer() as second:
        for server in (first, second):
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            settings = prompt.dimension.judge  # base_url None: the SDK takes the server from the environment
            run_id = library.create_run(prompt.id, dataset["id"], settings)
            summary = run_scoring(
                prompt, items, get_judge(settings), library, run_id, RunOptions(concurrency=1)
            )
            rows = library.judgments(run_id)
            assert summary.cached == 0 and server.count == len(items)  # the other server's replies: never
            assert {r["server"] for r in rows} == {server.base_url} and {r["source"] for r in rows} == {
                "live"
            }
        again = library.create_run(prompt.id, dataset["id"], settings)
        summary = run_scoring(prompt, items, get_judge(settings), library, again, RunOptions(concurrency=1))
        assert summary.cached == len(items) and second.count == len(items)  # the same server: its own cache
        assert {r["source"] for r in library.judgments(again)} == {"cache"}
    library.close()


def test_a_key_inside_openai_base_url_is_refused_before_any_call(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:sk-secret-in-url@127.0.0.1:9/v1")
    library, prompt, items, dataset = setup_library(
        tmp_path / "key.db", count=1, judge=JudgeSettings(provider="openai", model="fault-model")
    )
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    from geval_core.errors import ConfigError

    with pytest.raises(ConfigError, match="carries credentials") as caught:
        run_scoring(prompt, items, get_judge(prompt.dimension.judge), library, run_id)
    assert "sk-secret-in-url" not in str(caught.value)
    library.close()
