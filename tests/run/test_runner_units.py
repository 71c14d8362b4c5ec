"""The runner's small parts: reply round trip, cache key, backoff, cost estimate and price table."""

from __future__ import annotations

import json
import math
import random
import sqlite3

import pytest
from runner_helpers import dimension, make_items

from geval_core.errors import ConfigError
from geval_core.prompts import render
from geval_core.run.calls import backoff_delay, build_request, cache_key, server_id
from geval_core.run.cost import estimate_cost, estimate_tokens, load_prices, price_for
from geval_core.types import Choice, FrozenPrompt, JudgeReply, JudgeSettings, Position, TopLogprob, Usage


def frozen(judge: JudgeSettings | None = None) -> FrozenPrompt:
    return FrozenPrompt("f" * 64, "coherence", 1, dimension(judge), "2025-01-01T00:00:00+00:00")


def test_reply_round_trips_through_json_exactly():
    reply = JudgeReply(
        (
            Choice(
                "3",
                (
                    Position(
                        "3",
                        math.log(0.6),
                        (TopLogprob("3", math.log(0.6)), TopLogprob(" 4", -1.2), TopLogprob("x", 0.0)),
                    ),
                ),
            ),
            Choice("no logprobs", None),
        ),
        "gpt-4o-2024-08-06",
        Usage(321, 2),
        0.25,
        {"id": "chatcmpl-1", "object": {1, 2}},
    )
    data = json.loads(json.dumps(reply.to_dict()))
    back = JudgeReply.from_dict(data)
    assert back.choices == reply.choices and back.usage == reply.usage
    assert back.model_version == "gpt-4o-2024-08-06" and back.latency_s == 0.25 and back.raw is None
    kept = JudgeReply.from_dict(json.loads(json.dumps(reply.to_dict(keep_raw=True))))
    assert kept.raw is None  # a set is not JSON: dropped rather than failing the cache write
    plain = JudgeReply((Choice("1"),), "m", raw={"id": "x"})
    assert JudgeReply.from_dict(plain.to_dict(keep_raw=True)).raw == {"id": "x"}


def test_merge_replies_keeps_every_choice_and_adds_usage():
    a = JudgeReply((Choice("3"),), "m1", Usage(100, 1), 0.5)
    b = JudgeReply((Choice("4"), Choice("2")), "m1", Usage(100, 2), 0.25)
    merged = JudgeReply.merge([a, b])
    assert merged.texts == ["3", "4", "2"] and merged.usage == Usage(200, 3) and merged.latency_s == 0.75


def test_cache_key_changes_with_what_decides_the_answer_only():
    prompt = frozen()
    item, other = make_items(2)
    settings = prompt.dimension.judge
    base = build_request(prompt, item, settings, "logprobs")
    key = cache_key(base, "openai", "openai")
    assert len(key) == 64 and key == cache_key(
        build_request(prompt, item, settings, "logprobs"), "openai", "openai"
    )
    different = {
        cache_key(base, "gemini", "openai"),
        cache_key(base, "openai", server_id("http://127.0.0.1:9/v1", "openai")),  # another server
        cache_key(base, "openai", "openai", replica=1),
        cache_key(build_request(prompt, other, settings, "logprobs"), "openai", "openai"),
        cache_key(build_request(prompt, item, settings, "sampling"), "openai", "openai"),
        cache_key(
            build_request(prompt, item, JudgeSettings(temperature=1.0), "logprobs"), "openai", "openai"
        ),
        cache_key(build_request(prompt, item, JudgeSettings(model="other"), "logprobs"), "openai", "openai"),
        cache_key(build_request(prompt, item, settings, "logprobs", n=3), "openai", "openai"),
        cache_key(build_request(prompt, item, settings, "logprobs", seed=5), "openai", "openai"),
    }
    assert len(different) == 9 and key not in different


def test_build_request_by_mode():
    settings = JudgeSettings(mode="auto", n=20, temperature=1.0, top_logprobs=5)
    prompt, item = frozen(settings), make_items(1)[0]
    logprobs = build_request(prompt, item, settings, "logprobs")
    sampling = build_request(prompt, item, settings, "sampling")
    assert (logprobs.logprobs, logprobs.top_logprobs) == (True, 5)
    assert (sampling.logprobs, sampling.top_logprobs, sampling.n, sampling.temperature) == (False, 0, 20, 1.0)
    assert logprobs.messages == ({"role": "user", "content": render(prompt, item)},)


def test_backoff_honours_retry_after_and_grows_exponentially_with_jitter():
    random.seed(1)
    assert all(2.0 <= backoff_delay(1, 0.5, 30, 2.0) <= 2.2 for _ in range(50))
    assert backoff_delay(1, 0.5, 30, 120.0) == 30  # capped
    for attempt, ceiling in ((1, 0.5), (2, 1.0), (3, 2.0), (8, 30.0)):
        delays = [backoff_delay(attempt, 0.5, 30, None) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays) and max(delays) > ceiling * 0.8


def test_estimate_cost_by_hand():
    settings = JudgeSettings(provider="openai", model="gpt-4o-mini", n=1, max_tokens=5)
    prompt = frozen(settings)
    items = make_items(3)
    texts = [render(prompt, item) for item in items]
    expected_in = sum(math.ceil(len(t) / 4) + 4 for t in texts)
    result = estimate_cost(prompt, items, prices=load_prices())
    assert result["input_tokens"] == expected_in and result["output_tokens"] == 15
    assert math.isclose(result["usd"], (expected_in * 0.15 + 15 * 0.60) / 1e6)
    assert estimate_tokens("abcdefghi") == 3 and estimate_tokens("") == 0
    sampling = JudgeSettings(provider="openai", model="gpt-4o-mini", mode="sampling", n=20, temperature=1.0)
    many = estimate_cost(prompt, items, sampling)
    assert many["input_tokens"] == expected_in and many["output_tokens"] == 3 * 20 * 5  # prompt billed once
    local = estimate_cost(prompt, items, JudgeSettings())
    assert local["usd"] == 0.0
    unknown = estimate_cost(prompt, items, JudgeSettings(provider="openai", model="my-finetune"))
    assert unknown["usd"] is None and "my-finetune" in unknown["note"]


def test_price_table_prefix_match_and_user_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEVAL_PRICES", raising=False)
    table = load_prices()
    dated = JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18")
    assert price_for(dated, table) == {
        "input": 0.15,
        "cached_input": 0.075,
        "output": 0.60,
    }  # not gpt-4o's price
    assert price_for(JudgeSettings(provider="openai", model="gpt-4o-2024-08-06"), table)["input"] == 2.50
    file = tmp_path / "prices.json"
    file.write_text(
        json.dumps(
            {"openai:gpt-4o-mini": {"input": 1, "output": 2}, "openai:my-finetune": {"input": 3, "output": 4}}
        )
    )
    monkeypatch.setenv("GEVAL_PRICES", str(file))
    table = load_prices()
    assert price_for(dated, table) == {"input": 1.0, "output": 2.0}
    assert price_for(JudgeSettings(provider="openai", model="my-finetune"), table) == {
        "input": 3.0,
        "output": 4.0,
    }
    file.write_text('{"openai:x": {"input": "cheap"}}')
    with pytest.raises(ConfigError, match="openai:x"):
        load_prices()
    monkeypatch.setenv("GEVAL_PRICES", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_prices()


def test_price_table_from_the_library_setting(tmp_path, monkeypatch):
    from prompt_library import Library

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEVAL_PRICES", raising=False)
    library = Library(tmp_path / "lib.db", seed_examples=False)
    library.set_setting("prices", {"gemini:gemini-2.5-flash": {"input": 9, "output": 9}})
    table = load_prices(store=library)
    assert price_for(JudgeSettings(provider="gemini", model="gemini-2.5-flash"), table) == {
        "input": 9.0,
        "output": 9.0,
    }
    assert price_for(JudgeSettings(provider="gemini", model="gemini-2.5-pro"), table)["input"] == 1.25


def test_a_batch_commits_its_judgments_together_and_reports_them_after_the_commit(tmp_path):
    """Replies that finished together are written in one commit; progress is reported only once they are
    stored (a reader sees them), with the counts as they were at each write; a failure inside the batch
    stores none of them and reports none."""
    from runner_helpers import setup_library, worked_judge

    from geval_core.run.options import RunSummary
    from geval_core.run.session import Session

    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=5)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    reports = []

    def stored() -> int:
        other = sqlite3.connect(tmp_path / "lib.db")  # another connection sees committed rows only
        try:
            return other.execute("SELECT COUNT(*) FROM judgments WHERE run_id = ?", [run_id]).fetchone()[0]
        finally:
            other.close()

    def progress(done, total, judgment):
        reports.append((done, total, judgment.item_id, stored()))

    session = Session(
        prompt,
        library,
        RunSummary(run_id, "done", "logprobs", 5),
        prompt.dimension.judge,
        "scripted",
        on_progress=progress,
    )
    judge = worked_judge()
    jobs = [session.first_job(item)[0] for item in items]
    with session.batch():
        for job in jobs[:3]:
            session.answered(job, judge.judge(job.request))
        assert reports == [] and stored() == 0  # nothing reported, nothing visible before the commit
    assert reports == [(1, 5, items[0].id, 3), (2, 5, items[1].id, 3), (3, 5, items[2].id, 3)]
    with pytest.raises(RuntimeError), session.batch():
        session.answered(jobs[3], judge.judge(jobs[3].request))
        raise RuntimeError("the collecting thread failed mid-batch")
    assert len(reports) == 3 and stored() == 3 and library.cache_get(jobs[3].key) is None
    session.answered(jobs[4], judge.judge(jobs[4].request))  # outside a batch: stored, then reported at once
    assert reports[-1][2:] == (items[4].id, 4)
