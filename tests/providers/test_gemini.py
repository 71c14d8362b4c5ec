"""Gemini contract tests: the real google-genai SDK, pointed by http_options.base_url at a loopback
server that answers in the documented generateContent REST shape (Gemini itself is not reachable)."""

from __future__ import annotations

import json
import math
import re

import pytest
from conftest import JsonStub, free_port

from geval_core.errors import JudgeError, LogprobsUnavailableError, MissingKeyError, RetryableJudgeError
from geval_core.providers import UnreachableError, get_judge
from geval_core.providers.gemini_judge import GeminiJudge
from geval_core.scoring.weighted import score_reply
from geval_core.types import JudgeRequest, JudgeSettings, Scale

KEY = "AIzaSyTEST-7c1d2e3f4a5b6c7d8e9f0"
MODEL = "gemini-test"
MESSAGES = (
    {"role": "system", "content": "You are a careful rater."},
    {"role": "user", "content": "Rate the summary from 1 to 10."},
)


def candidate(token: str, logprob: float | None, token_id: int) -> dict:
    """A LogprobsResult.Candidate; proto3 JSON leaves out logProbability when it is 0.0."""
    out = {"token": token, "tokenId": token_id}
    if logprob is not None:
        out["logProbability"] = logprob
    return out


def response_ten(index: int = 0) -> dict:
    """The rating 10 split into the tokens "1" and "0"; "0" is certain (logprob 0.0)."""
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "10"}]},
                "finishReason": "STOP",
                "index": index,
                "avgLogprobs": -0.125,
                "logprobsResult": {
                    "topCandidates": [
                        {
                            "candidates": [
                                candidate("1", -0.25, 49),
                                candidate("9", -2.0, 57),
                                candidate("8", -3.0, 56),
                            ]
                        },
                        {"candidates": [candidate("0", 0.0, 48), candidate("1", -20.0, 49)]},
                    ],
                    "chosenCandidates": [candidate("1", -0.25, 49), candidate("0", None, 48)],
                },
            }
        ],
        "usageMetadata": {"promptTokenCount": 31, "candidatesTokenCount": 2, "totalTokenCount": 33},
        "modelVersion": "gemini-test-001",
        "responseId": "resp-1",
    }


@pytest.fixture
def gemini():
    stubs = []

    def make(*script, default=None):
        stubs.append(JsonStub(script, default=default or (200, {}, response_ten())))
        return GeminiJudge(MODEL, KEY, base_url=stubs[-1].url, timeout=2.0), stubs[-1]

    yield make
    for stub in stubs:
        stub.close()


def ask(**options) -> JudgeRequest:
    return JudgeRequest(MESSAGES, MODEL, **{"max_tokens": 3, "top_logprobs": 5, **options})


def test_gemini_contract_maps_logprobs_result_into_the_neutral_shape(gemini):
    judge, server = gemini()
    reply = judge.judge(ask())
    assert reply.texts == ["10"]
    first, second = reply.choices[0].positions
    assert (first.token, first.logprob) == ("1", -0.25)
    assert [(t.token, t.logprob) for t in first.top] == [("1", -0.25), ("9", -2.0), ("8", -3.0)]
    # Both spellings of a certain token survive: explicit 0.0 and the omitted field.
    assert (second.token, second.logprob) == ("0", 0.0)
    assert [(t.token, t.logprob) for t in second.top] == [("0", 0.0), ("1", -20.0)]
    assert reply.model_version == "gemini-test-001"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (31, 2)
    assert reply.raw["responseId"] == "resp-1"  # the REST field names, as the API sent them
    assert reply.raw["candidates"][0]["logprobsResult"]["chosenCandidates"][0]["token"] == "1"


def test_gemini_contract_split_rating_scores_as_ten(gemini):
    judge, _ = gemini()
    scored = score_reply(judge.judge(ask()), Scale(1, 10), "logprobs")
    p10, p9, p8 = math.exp(-0.25) * 1.0, math.exp(-2.0), math.exp(-3.0)
    assert scored.valid_mass == pytest.approx(p10 + p9 + p8)
    assert scored.score == pytest.approx((10 * p10 + 9 * p9 + 8 * p8) / (p10 + p9 + p8))
    assert scored.top_rating == 10


def test_gemini_contract_sends_the_documented_request(gemini):
    judge, server = gemini()
    judge.judge(ask(temperature=0.0, seed=4))
    sent = server.requests[0]
    # The path's API version is the SDK's own default (v1 in google-genai 3.x, v1beta before).
    assert re.fullmatch(rf"/v1(beta)?/models/{MODEL}:generateContent", sent["path"])
    assert sent["headers"]["x-goog-api-key"] == KEY
    config = sent["body"]["generationConfig"]
    assert config == {
        "temperature": 0.0,
        "maxOutputTokens": 3,
        "candidateCount": 1,
        "seed": 4,
        "responseLogprobs": True,
        "logprobs": 5,
    }
    assert sent["body"]["systemInstruction"]["parts"] == [{"text": "You are a careful rater."}]
    assert sent["body"]["contents"] == [{"role": "user", "parts": [{"text": MESSAGES[1]["content"]}]}]


def test_gemini_contract_asks_again_when_fewer_candidates_come_back(gemini):
    judge, server = gemini()  # the stub always answers one candidate
    reply = judge.judge(ask(n=3, temperature=1.0, seed=10))
    assert len(reply.choices) == 3 and len(server.requests) == 3
    assert [r["body"]["generationConfig"]["candidateCount"] for r in server.requests] == [3, 2, 1]
    assert [r["body"]["generationConfig"]["seed"] for r in server.requests] == [10, 11, 12]
    assert reply.usage.input_tokens == 3 * 31 and len(reply.raw["responses"]) == 3


def test_gemini_contract_no_logprobs_result_is_a_named_error(gemini):
    plain = response_ten()
    del plain["candidates"][0]["logprobsResult"]
    judge, _ = gemini((200, {}, plain), (200, {}, plain))
    with pytest.raises(LogprobsUnavailableError, match=r"'gemini-test'.*sampling"):
        judge.judge(ask())
    assert judge.judge(ask(logprobs=False)).texts == ["10"]  # sampling mode is fine without them


def test_gemini_contract_429_with_retry_after_and_5xx_are_retryable(gemini):
    busy = {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}
    down = {"error": {"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}}
    judge, server = gemini((429, {"retry-after": "12"}, busy), (503, {}, down))
    with pytest.raises(RetryableJudgeError) as info:
        judge.judge(ask())
    assert info.value.retry_after == 12.0
    with pytest.raises(RetryableJudgeError, match="503"):
        judge.judge(ask())
    assert len(server.requests) == 2  # no retries inside the SDK


def test_gemini_contract_timeout_and_refused_connection_are_retryable(gemini):
    judge, _ = gemini(("hang", {}, response_ten()))
    with pytest.raises(RetryableJudgeError, match="could not reach Gemini") as slow:
        judge.judge(ask())
    assert not isinstance(slow.value, UnreachableError)  # a slow server is there: no reason to stop a run
    url = f"http://127.0.0.1:{free_port()}"
    closed = GeminiJudge(MODEL, KEY, base_url=url, timeout=2.0)
    with pytest.raises(UnreachableError, match=f"could not connect to Gemini at {url}"):
        closed.judge(ask())


def test_gemini_contract_key_never_in_raw_or_errors(gemini):
    echo = {"error": {"code": 400, "message": f"API key not valid: {KEY}", "status": "INVALID_ARGUMENT"}}
    judge, server = gemini((400, {}, echo))
    with pytest.raises(JudgeError) as info:
        judge.judge(ask())
    assert not isinstance(info.value, RetryableJudgeError)
    assert KEY not in str(info.value) and "400" in str(info.value)
    reply = judge.judge(ask())
    assert KEY not in json.dumps(reply.raw) and KEY not in repr(judge)
    assert server.requests[-1]["headers"]["x-goog-api-key"] == KEY  # it was sent, only to the API


def test_gemini_contract_missing_key_names_both_variables(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    settings = JudgeSettings(provider="gemini", model="gemini-2.0-flash")
    with pytest.raises(MissingKeyError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        get_judge(settings)
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    judge = get_judge(settings)
    assert judge.provider == "gemini" and KEY not in repr(judge)


def test_gemini_cached_content_tokens_map_to_usage(gemini):
    """Implicit caching (Gemini 2.5): usageMetadata.cachedContentTokenCount is the part of promptTokenCount read
    from the cache, live and in a batch result alike."""
    from google.genai import types

    from geval_core.providers.gemini_judge import gemini_reply

    body = response_ten()
    body["usageMetadata"] = {
        "promptTokenCount": 2300,
        "candidatesTokenCount": 2,
        "cachedContentTokenCount": 2048,
        "totalTokenCount": 2302,
    }
    judge, _ = gemini(default=(200, {}, body))
    reply = judge.judge(ask())
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.cached_input_tokens) == (
        2300,
        2,
        2048,
    )
    batch = gemini_reply(types.GenerateContentResponse.model_validate(body))
    assert batch.usage == reply.usage
    assert judge.judge(ask(n=2)).usage.cached_input_tokens == 2 * 2048  # a server ignoring n is asked twice
