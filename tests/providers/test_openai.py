"""The openai provider: against a real llama.cpp OpenAI-compatible server, and a scripted loopback stub
for the failure mapping (429 + Retry-After, 5xx, 401, hangs, malformed bodies, missing logprobs)."""

from __future__ import annotations

import json
import math
import time

import pytest
from conftest import JsonStub, free_port

from geval_core.errors import JudgeError, LogprobsUnavailableError, MissingKeyError, RetryableJudgeError
from geval_core.providers import UnreachableError, get_judge
from geval_core.providers.openai_judge import OpenAIJudge
from geval_core.types import JudgeRequest, JudgeSettings

KEY = "sk-test-4f9a1c7e2b8d6053aa17"
MESSAGES = (
    {
        "role": "user",
        "content": "Rate the fluency of 'The cat sat on the mat.' from 1 to 5. Answer with one number.",
    },
)


def ask(**options) -> JudgeRequest:
    return JudgeRequest(MESSAGES, "smollm2", **{"max_tokens": 3, "top_logprobs": 5, **options})


# ---- a real OpenAI-compatible server: llama_cpp.server with SmolLM2 ---------------------------------


@pytest.mark.slow
def test_openai_against_llama_server_returns_logprobs_in_the_neutral_shape(llama_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a custom base_url needs no key
    judge = get_judge(JudgeSettings(provider="openai", model="smollm2", base_url=llama_server))
    reply = judge.judge(ask())
    choice = reply.choices[0]
    assert 1 <= len(choice.positions) <= 3
    assert "".join(p.token for p in choice.positions) == choice.text
    for position in choice.positions:
        assert 1 <= len(position.top) <= 5
        logprobs = [t.logprob for t in position.top]
        assert all(lp <= 0.0 for lp in logprobs) and logprobs == sorted(logprobs, reverse=True)
    first = choice.positions[0]
    assert first.top[0].token == first.token  # greedy at temperature 0
    assert reply.model_version == "smollm2"  # what the server reported
    assert reply.usage.input_tokens > 20 and reply.usage.output_tokens == len(choice.positions)
    assert reply.raw["choices"][0]["logprobs"]["content"][0]["token"] == first.token


@pytest.mark.slow
def test_openai_tops_up_n_when_the_server_ignores_it(llama_server):
    judge = OpenAIJudge("smollm2", "not-needed", base_url=llama_server)
    single = judge.judge(ask(max_tokens=1))
    reply = judge.judge(ask(n=3, temperature=1.0, seed=11, max_tokens=1))
    assert len(reply.choices) == 3
    assert len(reply.raw["responses"]) == 3  # the server answered one choice per call
    assert reply.usage.input_tokens == 3 * single.usage.input_tokens
    assert all(c.positions for c in reply.choices)


@pytest.mark.slow
def test_openai_server_logprobs_equal_the_local_judge(llama_server, local_judge):
    """The same GGUF behind the API and in-process gives the same first-token distribution."""
    served = OpenAIJudge("smollm2", "not-needed", base_url=llama_server).judge(ask(max_tokens=1))
    local = local_judge.judge(ask(max_tokens=1))
    served_top = {t.token: t.logprob for t in served.choices[0].positions[0].top}
    local_top = {t.token: t.logprob for t in local.choices[0].positions[0].top}
    assert list(served_top) == list(local_top)
    # Both sides reuse the KV cache of earlier prompts' shared prefix, so the rest of the prompt is decoded
    # in batches that depend on which tests ran before; the float sums then differ by up to ~0.05 nats
    # (seen in a full run; 1e-4 when run alone). Same tokens, same order, close logprobs: the same model.
    assert served_top == pytest.approx(local_top, abs=0.1)


@pytest.mark.slow
def test_llama_server_ignores_prompt_cache_key(llama_server):
    """The real llama.cpp server drops a field it does not know (its request models keep pydantic's default,
    extra fields ignored), so the same request with prompt_cache_key answers alike; the judge still sends it only
    to OpenAI's own API (routes_by_cache_key), since a strictly validating server would refuse the request."""
    from geval_core.providers.openai_judge import chat_body
    from geval_core.providers.plain_http import PlainHttpPost

    post = PlainHttpPost(llama_server, "/chat/completions", "not-needed", 60.0)
    body = chat_body(ask(max_tokens=1), 1, False, None)
    plain, keyed = (
        json.loads(post(b)) for b in (body, {**body, "prompt_cache_key": "geval-0123456789abcdef"})
    )
    post.close()
    assert keyed["choices"][0]["logprobs"] == plain["choices"][0]["logprobs"]


# ---- a scripted stub for the failure mapping ------------------------------------------------------


def completion(logprobs: bool = True, text: str = "4") -> dict:
    content = [
        {
            "token": text,
            "logprob": -0.1,
            "top_logprobs": [{"token": text, "logprob": -0.1}, {"token": "3", "logprob": -2.5}],
        }
    ]
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test-2024-01-01",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
                "logprobs": {"content": content} if logprobs else None,
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
    }


@pytest.fixture
def stub():
    stubs = []

    def make(*script):
        stubs.append(JsonStub(script, default=(200, {}, completion())))
        return OpenAIJudge("gpt-test", KEY, base_url=stubs[-1].url + "/v1", timeout=1.0), stubs[-1]

    yield make
    for s in stubs:
        s.close()


def test_openai_maps_a_reply_and_sends_the_options(stub):
    judge, server = stub((200, {}, completion()))
    reply = judge.judge(ask(seed=5, temperature=0.5))
    position = reply.choices[0].positions[0]
    assert (position.token, position.logprob) == ("4", -0.1)
    assert [(t.token, t.logprob) for t in position.top] == [("4", -0.1), ("3", -2.5)]
    assert reply.model_version == "gpt-test-2024-01-01"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 1)
    body = server.requests[0]["body"]
    assert {k: body[k] for k in ("logprobs", "top_logprobs", "n", "seed", "temperature", "max_tokens")} == {
        "logprobs": True,
        "top_logprobs": 5,
        "n": 1,
        "seed": 5,
        "temperature": 0.5,
        "max_tokens": 3,
    }
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(reply.raw) and KEY not in repr(judge)


def test_openai_429_is_retryable_with_retry_after_and_no_sdk_retry(stub):
    judge, server = stub((429, {"retry-after": "7"}, {"error": {"message": "slow down"}}))
    with pytest.raises(RetryableJudgeError) as info:
        judge.judge(ask())
    assert info.value.retry_after == 7.0
    assert len(server.requests) == 1  # the SDK did not retry on its own


@pytest.mark.parametrize("status", [500, 503])
def test_openai_5xx_is_retryable(stub, status):
    judge, server = stub((status, {}, {"error": {"message": "overloaded"}}))
    with pytest.raises(RetryableJudgeError, match=str(status)) as info:
        judge.judge(ask())
    assert info.value.retry_after is None and len(server.requests) == 1


def test_openai_timeout_and_refused_connection_are_retryable(stub):
    judge, _ = stub(("hang", {}, completion()))
    started = time.monotonic()
    with pytest.raises(RetryableJudgeError, match="timed out") as slow:
        judge.judge(ask())
    assert time.monotonic() - started < 2.5 and not isinstance(slow.value, UnreachableError)
    url = f"http://127.0.0.1:{free_port()}/v1"
    closed = OpenAIJudge("gpt-test", KEY, base_url=url, timeout=1.0)
    with pytest.raises(UnreachableError, match=f"could not connect to {url}"):
        closed.judge(ask())


def test_openai_401_is_final_and_never_echoes_the_key(stub):
    masked = f"Incorrect API key provided: {KEY[:10]}****{KEY[-4:]}. Full: {KEY}"
    judge, _ = stub((401, {}, {"error": {"message": masked, "code": "invalid_api_key"}}))
    with pytest.raises(JudgeError) as info:
        judge.judge(ask())
    assert not isinstance(info.value, RetryableJudgeError)
    assert KEY not in str(info.value) and KEY[:10] not in str(info.value)
    assert "OPENAI_API_KEY" in str(info.value)


def test_openai_missing_or_refused_logprobs_are_named_errors(stub):
    judge, _ = stub(
        (200, {}, completion(logprobs=False)),
        (400, {}, {"error": {"message": "logprobs are not supported with this model"}}),
    )
    with pytest.raises(LogprobsUnavailableError, match=r"'smollm2'.*sampling"):
        judge.judge(ask())
    with pytest.raises(LogprobsUnavailableError, match="sampling"):
        judge.judge(ask())


def test_openai_sampling_mode_needs_no_logprobs(stub):
    judge, server = stub((200, {}, completion(logprobs=False, text="3")))
    reply = judge.judge(ask(logprobs=False, temperature=1.0))
    assert reply.texts == ["3"] and reply.choices[0].positions is None
    assert "logprobs" not in server.requests[0]["body"]


def test_openai_malformed_body_is_retried_as_one_broken_answer(stub):
    judge, _ = stub((200, {}, b'{"choices": [ not json'))
    with pytest.raises(JudgeError, match="unusable answer") as info:
        judge.judge(ask())
    assert isinstance(info.value, RetryableJudgeError)  # the runner asks again within the attempt budget


def test_openai_key_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        get_judge(JudgeSettings(provider="openai", model="gpt-4o-mini"))
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        get_judge(JudgeSettings(provider="openai", model="gpt-4o-mini", base_url="https://api.openai.com/v1"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    judge = get_judge(JudgeSettings(provider="openai", model="gpt-4o-mini"))
    assert judge.provider == "openai" and KEY not in repr(judge)
    assert math.isclose(judge._client.timeout, 60.0) and judge._client.max_retries == 0


def test_openai_reads_cached_tokens_and_sends_prompt_cache_key_only_to_openai(stub, monkeypatch):
    """usage.prompt_tokens_details.cached_tokens is the cached part of prompt_tokens; prompt_cache_key goes to
    OpenAI's own API (the SDK client's resolved address, OPENAI_BASE_URL included), never to a server of the user's."""
    from geval_core.providers.openai_judge import completion_from_body, routes_by_cache_key

    cached = {
        **completion(),
        "usage": {
            "prompt_tokens": 2000,
            "completion_tokens": 1,
            "total_tokens": 2001,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        },
    }
    judge, server = stub((200, {}, cached), (200, {}, cached))
    reply = judge.judge(ask(prefix_key="geval-0123456789abcdef"))
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.cached_input_tokens) == (
        2000,
        1,
        1920,
    )
    assert not judge.sends_cache_key and "prompt_cache_key" not in server.requests[0]["body"]
    judge.sends_cache_key = True  # what a judge whose client talks to api.openai.com has (checked below)
    judge.judge(ask(prefix_key="geval-0123456789abcdef"))
    assert server.requests[1]["body"]["prompt_cache_key"] == "geval-0123456789abcdef"
    # Servers other than OpenAI's leave the details out or send null: nothing cached.
    assert completion_from_body(
        {**completion(), "usage": {"prompt_tokens": 9, "completion_tokens": 1, "prompt_tokens_details": None}}
    ).usage == (9, 1, 0)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIJudge("gpt-4o-mini", KEY).sends_cache_key  # the SDK's default address
    monkeypatch.setenv("OPENAI_BASE_URL", "https://llm.example.com/v1")
    assert not OpenAIJudge("gpt-4o-mini", KEY).sends_cache_key
    assert routes_by_cache_key("https://api.openai.com/v1") and not routes_by_cache_key(
        "http://127.0.0.1:8080/v1"
    )
