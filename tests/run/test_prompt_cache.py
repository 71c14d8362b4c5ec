"""Issue 42, item 2: cached input tokens recorded per judgment and per run, priced at the cached rate, and
predicted by the estimate, against a loopback server that caches by OpenAI's documented rule."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from judge_fakes import CachingJudges
from runner_helpers import dimension

from geval_core.prompts import messages
from geval_core.providers.openai_judge import OpenAIJudge
from geval_core.run import RunOptions, estimate_cost, run_scoring
from geval_core.run.cost import cache_rule, load_prices, run_totals
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

GPT = JudgeSettings(provider="openai", model="gpt-4o-mini", top_logprobs=5, max_tokens=3)
# gpt-4o-mini's rates (openai.com/api/pricing), USD per million tokens, written out for the costs by hand.
INPUT, CACHED, OUTPUT = 0.15, 0.075, 0.60
NEWS = (
    "the council approved a budget after a long debate about schools roads parks and the harbour while "
    "residents asked whether taxes would rise and officials promised a review next spring"
)
WORDS = NEWS.split()
# Characters per document: three long enough that their prompts pass 1,024 tokens, one under it (never cached).
LENGTHS = {"d0": 6100, "d1": 4700, "d2": 1500, "d3": 5300}
OPENINGS = ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel")  # no two share a prefix


def document(name: str, chars: int) -> str:
    rng = random.Random(name)
    text = name.upper() + ":"
    while len(text) < chars:
        text += " " + rng.choice(WORDS)
    return text


def dataset(summaries: int = 4) -> tuple[dict[str, str], list[Item]]:
    """(documents, items): `summaries` per document but d3 (a group of one), interleaved across documents as a
    shuffled dataset would have them."""
    docs = {name: document(name, chars) for name, chars in LENGTHS.items()}
    items = [
        Item(
            f"{name}-s{s}",
            {"document": text, "summary": f"{OPENINGS[s]}: the gist of {name}, part {s}."},
            group=name,
        )
        for s in range(summaries)
        for name, text in docs.items()
        if name != "d3" or s == 0
    ]
    return docs, items


def scored(tmp_path, fake: CachingJudges, items: list[Item], concurrency: int):
    """(library, prompt, run id, summary) of a run of the items against the fake at OpenAI's rates."""
    settings = replace(GPT, base_url=f"{fake.url}/v1")
    library = Library(tmp_path / "lib.db", seed_examples=False)
    prompt = library.freeze(dimension(settings)).prompt
    run_id = library.create_run(prompt.id, library.import_items("news", items)["id"], settings)
    judge = OpenAIJudge(settings.model, "sk-test-cache-2026", base_url=settings.base_url)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=concurrency))
    assert summary.status == "done" and summary.scored == len(items)
    return library, prompt, run_id, summary


def cached_by_hand(prompt, text: str) -> int:
    """What a later item of a document reads from the cache: its prompt up to the summary, counted as the
    estimate counts tokens (4 per message, 4 characters a token), in whole steps of 128 from 1,024."""
    marked = messages(prompt, {"document": text, "summary": "\x00"})[0]["content"]
    shared = 4 + marked.index("\x00") // 4
    return shared - shared % 128 if shared >= 1024 else 0


@pytest.fixture
def fake():
    server = CachingJudges()
    yield server
    server.close()


def test_a_run_records_prices_and_predicts_cached_tokens(tmp_path, monkeypatch, fake):
    """The fake reads one prompt at a time, each done before the next is read: what one request in flight gives."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("GEVAL_PRICES", raising=False)
    docs, items = dataset()
    library, prompt, run_id, summary = scored(tmp_path, fake, items, concurrency=4)

    # Per judgment: the first item of a document to arrive pays in full, the others read its prefix.
    rows = {r["item_id"]: r for r in library.judgments(run_id)}
    expected_total = 0
    for name, text in docs.items():
        group = sorted(rows[i.id]["cached_input_tokens"] for i in items if i.group == name)
        hit = cached_by_hand(prompt, text)
        assert group == [0] + [hit] * (len(group) - 1), name
        expected_total += hit * (len(group) - 1)
    # d0: its prompt up to the summary is 6,681 characters, 4 + 6681 // 4 = 1,674 tokens, 13 steps of 128 = 1,664;
    # d1: 5,279 characters, 1,323 tokens, 1,280; d2's 2,082 characters are 524 tokens, under 1,024; d3 is alone.
    assert [cached_by_hand(prompt, docs[d]) for d in ("d0", "d1", "d2")] == [1664, 1280, 0]
    assert expected_total == 3 * 1664 + 3 * 1280 == 8832

    # Per run: the summary, the stored run and the sum of the judgments agree; the cost prices them at the cached rate.
    run = library.get_run(run_id)
    assert summary.cached_input_tokens == run.extra["cached_input_tokens"] == expected_total > 0
    paid, out = run.input_tokens, run.output_tokens
    by_hand = ((paid - expected_total) * INPUT + expected_total * CACHED + out * OUTPUT) / 1e6
    assert run.cost_usd == pytest.approx(by_hand, rel=1e-12) and run.extra["cost_upper_bound"] is False
    assert run.cost_usd < (paid * INPUT + out * OUTPUT) / 1e6

    # The estimate, for the same judge at OpenAI's own API (the loopback stands in for it).
    estimate = estimate_cost(prompt, items, GPT, prices=load_prices(), concurrency=1)
    assert estimate["input_tokens"] == paid  # the fake counts tokens as the estimate does
    gap = abs(estimate["cached_input_tokens"] - expected_total) / expected_total
    print(
        f"cached input tokens: estimate {estimate['cached_input_tokens']} vs actual {expected_total} "
        f"of {paid} input ({gap:.1%} apart)"
    )
    assert gap <= 0.02  # prefix order sends a document's items together: the prediction is the rule applied
    assert "of which cached (est.)" in estimate["note"]
    # At the user's own server the rule is not the provider's: nothing predicted, and the note says so.
    at_loopback = replace(GPT, base_url=f"{fake.url}/v1")
    assert estimate_cost(prompt, items, at_loopback, prices=load_prices())["cached_input_tokens"] == 0


def test_requests_in_flight_together_miss_the_cache_and_the_estimate_says_so(tmp_path, monkeypatch):
    """A prompt enters the cache when the server has read it (the fake takes 50 ms): with 4 requests in flight a
    document's first 4 items pay in full, and the estimate for 4 in flight predicts that."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("GEVAL_PRICES", raising=False)
    fake = CachingJudges(latency=0.05)
    try:
        docs, items = dataset(summaries=8)
        library, prompt, run_id, summary = scored(tmp_path, fake, items, concurrency=4)
    finally:
        fake.close()
    actual = summary.cached_input_tokens
    assert actual == library.get_run(run_id).extra["cached_input_tokens"] > 0
    predicted = {
        c: estimate_cost(prompt, items, GPT, prices=load_prices(), concurrency=c)["cached_input_tokens"]
        for c in (1, 4)
    }
    # By hand, 4 in flight: items 5-8 of d0 and d1 hit (4 x 1,664 + 4 x 1,280); one at a time, items 2-8 would.
    assert predicted == {1: 7 * 1664 + 7 * 1280, 4: 4 * 1664 + 4 * 1280}
    gap = abs(predicted[4] - actual) / predicted[4]
    print(
        f"4 in flight: cached input tokens estimate {predicted[4]} vs actual {actual} ({gap:.1%} apart); "
        f"an estimate for one at a time would say {predicted[1]}"
    )
    assert gap <= 0.25  # the server's timing decides the items at a document's edge


def test_cached_rates_batch_discount_and_the_upper_bound(tmp_path, monkeypatch):
    """Cached tokens at the cached rate; the Batch API's half applies to every rate; a price without a cached
    rate bills them as input and says the cost is an upper bound."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    rows = [
        {"input_tokens": 2000, "output_tokens": 1, "cached_input_tokens": 1920, "cached": False},
        {"input_tokens": 2000, "output_tokens": 1, "cached_input_tokens": 1920, "cached": True},
    ]  # replayed: free
    rated = {"openai:gpt-4o-mini": {"input": INPUT, "cached_input": CACHED, "output": OUTPUT}}
    live = run_totals(rows, GPT, rated)
    assert live["cached_input_tokens"] == 1920 and live["cost_upper_bound"] is False
    assert live["cost_usd"] == pytest.approx((80 * INPUT + 1920 * CACHED + 1 * OUTPUT) / 1e6, rel=1e-12)
    assert run_totals(rows, GPT, rated, discount=0.5)["cost_usd"] == pytest.approx(
        live["cost_usd"] / 2, rel=1e-12
    )
    unrated = run_totals(rows, GPT, {"openai:gpt-4o-mini": {"input": INPUT, "output": OUTPUT}})
    assert unrated["cost_usd"] == pytest.approx((2000 * INPUT + 1 * OUTPUT) / 1e6, rel=1e-12)
    assert unrated["cost_upper_bound"] is True
    file = tmp_path / "prices.json"
    file.write_text('{"openai:gpt-4o-mini": {"input": 0.2, "output": 0.8, "cached_input": 0.02}}')
    assert load_prices(file)["openai:gpt-4o-mini"] == {"input": 0.2, "output": 0.8, "cached_input": 0.02}


def test_cache_rules_by_provider_and_server(monkeypatch):
    """OpenAI's own API: 1,024 tokens, steps of 128; Gemini 2.5 Flash and Pro: the caching page's minimum;
    another server, or a model the page does not list, gets no prediction."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    openai = cache_rule(GPT)
    assert openai is not None and (openai.minimum, openai.step) == (1024, 128)
    assert (
        openai.cached(1500, 1400) == 1280
        and openai.cached(1500, 1100) == 1024
        and openai.cached(1000, 990) == 0
    )
    assert cache_rule(replace(GPT, base_url="http://127.0.0.1:8080/v1")) is None
    assert cache_rule(replace(GPT, model="gpt-4-turbo")) is None  # before gpt-4o: no caching documented
    flash = cache_rule(JudgeSettings(provider="gemini", model="gemini-2.5-flash"))
    assert flash is not None and flash.minimum == 2048 and flash.cached(3000, 2500) == 2500
    assert cache_rule(JudgeSettings(provider="gemini", model="gemini-2.5-pro-preview-06-05")) is not None
    assert cache_rule(JudgeSettings(provider="gemini", model="gemini-2.5-flash-lite")) is None
    assert cache_rule(JudgeSettings(provider="gemini", model="gemini-2.0-flash")) is None
