"""Issue 11: OpenAI reasoning models, Gemini thinking models and Vertex AI, against a loopback server that
speaks their documented request and error shapes (tests/judge_fakes.py); the hash of the new setting."""

from __future__ import annotations

import pytest
from judge_fakes import REASONING, FakeJudges

from geval_core.errors import ConfigError, JudgeError, LogprobsUnavailableError
from geval_core.prompts import content_hash, metric_fields
from geval_core.providers import get_judge
from geval_core.providers.capabilities import NO_LOGPROBS, completion_budget, gemini_thinking, preflight
from geval_core.providers.gemini_judge import GeminiJudge
from geval_core.providers.openai_judge import OpenAIJudge
from geval_core.providers.vertex_judge import VertexJudge
from geval_core.scoring.weighted import score_reply
from geval_core.types import JudgeRequest, JudgeSettings, Scale
from prompt_library.seed import example_dimensions

KEY = "sk-test-2026-reasoning-5b1c"
MESSAGES = ({"role": "user", "content": "Rate this summary from 1 to 5.\n\n- Coherence:"},)
# The seeded prompts' hashes before reasoning_effort existed (computed from the commit before it).
SEEDED = {
    "Coherence": "ae4331c01f8e75144fe8252887a81e0a77ce584a1a35f4f0118a5ee2cca604cc",
    "Fluency": "60d9b6f7521b75d462c959a878b4416130b480d30cc50a9cf96bbd61922ad761",
}


@pytest.fixture(scope="module")
def fake():
    server = FakeJudges()
    yield server
    server.close()


def ask(model: str, **options) -> JudgeRequest:
    return JudgeRequest(MESSAGES, model, **{"max_tokens": 5, "top_logprobs": 5, **options})


def bodies(fake: FakeJudges, since: int) -> list[dict]:
    return [r[3] for r in fake.requests[since:]]


# ---- OpenAI reasoning models ----------------------------------------------------------------------


def test_reasoning_model_gets_max_completion_tokens_and_no_temperature(fake):
    judge = OpenAIJudge("gpt-5-mini", KEY, base_url=f"{fake.url}/v1")
    start = len(fake.requests)
    reply = judge.judge(ask("gpt-5-mini", logprobs=False, top_logprobs=0, temperature=1.0, n=2))
    [body] = bodies(fake, start)
    assert "max_tokens" not in body and "temperature" not in body and "logprobs" not in body
    assert body["max_completion_tokens"] == completion_budget(5, None) > 5 + REASONING
    assert [t for t in reply.texts] == [reply.texts[0]] * 2 and reply.texts[0] in "12345"
    assert reply.usage.output_tokens == REASONING + 1  # reasoning tokens are billed output


def test_reasoning_effort_is_sent_and_sizes_the_budget(fake):
    judge = OpenAIJudge("o4-mini", KEY, base_url=f"{fake.url}/v1")
    start = len(fake.requests)
    starved = judge.judge(
        ask("o4-mini", logprobs=False, top_logprobs=0, temperature=1.0, reasoning_effort="none")
    )
    assert bodies(fake, start)[0]["reasoning_effort"] == "none"
    assert starved.texts == [""]  # 5 tokens and the reasoning ate them: what a fixed small budget does
    roomy = judge.judge(
        ask("o4-mini", logprobs=False, top_logprobs=0, temperature=1.0, reasoning_effort="low")
    )
    assert roomy.texts[0] in "12345"


def test_reasoning_model_in_logprobs_mode_stops_before_any_call(fake):
    judge = OpenAIJudge("gpt-5", KEY, base_url=f"{fake.url}/v1")
    start = len(fake.requests)
    with pytest.raises(LogprobsUnavailableError, match=NO_LOGPROBS):
        judge.judge(ask("gpt-5"))
    assert len(fake.requests) == start


def test_unknown_reasoning_model_adapts_once_to_the_documented_400_and_records_it(fake):
    judge = OpenAIJudge("reasoner-7", KEY, base_url=f"{fake.url}/v1")
    start = len(fake.requests)
    reply = judge.judge(ask("reasoner-7", logprobs=False, top_logprobs=0, temperature=1.0))
    first, second = bodies(fake, start)
    assert "max_tokens" in first and "max_completion_tokens" in second and "temperature" not in second
    assert reply.raw["geval_adapted"] == [
        "max_tokens -> max_completion_tokens (the server refused max_tokens)"
    ]
    judge.judge(ask("reasoner-7", logprobs=False, top_logprobs=0, temperature=1.0))
    assert len(fake.requests) == start + 3  # adapted for good: no second refusal


def test_refused_temperature_names_the_parameter(fake):
    other = OpenAIJudge("reasoner-9", KEY, base_url=f"{fake.url}/v1")
    with pytest.raises(JudgeError, match="temperature") as info:
        other.judge(ask("reasoner-9", logprobs=False, top_logprobs=0, temperature=0.7))
    assert "freeze the prompt with temperature 1" in str(info.value)


def test_preflight_refuses_logprobs_and_temperature_for_reasoning_models():
    assert preflight(JudgeSettings(provider="openai", model="gpt-5-mini")) == [
        f"{NO_LOGPROBS} (openai:gpt-5-mini)"
    ]
    sampling = JudgeSettings(provider="openai", model="o3", mode="sampling", n=5, temperature=0.7)
    assert "temperature 1" in preflight(sampling)[0]
    assert (
        preflight(JudgeSettings(provider="openai", model="o3", mode="sampling", n=5, temperature=1.0)) == []
    )
    assert preflight(JudgeSettings(provider="openai", model="gpt-4o")) == []
    assert preflight(JudgeSettings(), {"logprobs": False})[0].startswith(NO_LOGPROBS)


# ---- the new setting is hashed, old prompts keep their hash ------------------------------------------


def test_reasoning_effort_is_hashed_and_seeded_prompts_keep_their_hash():
    from dataclasses import replace

    for dim in example_dimensions():
        if dim.name in SEEDED:
            assert content_hash(dim) == SEEDED[dim.name]
            assert "reasoning_effort" not in metric_fields(dim)["judge"]
    dim = example_dimensions()[0]
    low = replace(dim, judge=replace(dim.judge, reasoning_effort="low"))
    high = replace(dim, judge=replace(dim.judge, reasoning_effort="high"))
    assert len({content_hash(dim), content_hash(low), content_hash(high)}) == 3
    with pytest.raises(ConfigError, match="reasoning_effort"):
        JudgeSettings(reasoning_effort="extreme")


# ---- Gemini thinking models ---------------------------------------------------------------------


def test_gemini_25_flash_is_told_not_to_think_and_returns_ratings_with_logprobs(fake):
    judge = GeminiJudge("gemini-2.5-flash", KEY, base_url=fake.url, timeout=5)
    start = len(fake.requests)
    reply = judge.judge(ask("gemini-2.5-flash"))
    config = bodies(fake, start)[0]["generationConfig"]
    assert config["thinkingConfig"] == {"thinking_budget": 0} and config["maxOutputTokens"] == 5
    scored = score_reply(reply, Scale(1, 5), "logprobs")
    assert scored.score is not None and reply.texts[0] in "12345"


def test_gemini_thinking_budget_raises_output_and_thought_parts_are_not_the_reply(fake):
    thinking = gemini_thinking("gemini-2.5-pro")
    assert thinking.config() == {"thinking_budget": 128}
    judge = GeminiJudge("gemini-2.5-pro", KEY, base_url=fake.url, timeout=5)
    start = len(fake.requests)
    reply = judge.judge(ask("gemini-2.5-pro", logprobs=False, top_logprobs=0))
    config = bodies(fake, start)[0]["generationConfig"]
    assert config["thinkingConfig"] == {"thinking_budget": 128} and config["maxOutputTokens"] == 5 + 128
    assert reply.texts == [""]  # only thought parts came back: never read as the rating
    assert reply.usage.output_tokens == 5 + 128  # thought tokens are counted (and paid)
    assert gemini_thinking("gemini-2.0-flash").config() is None


def test_gemini_logprobs_not_enabled_names_the_model_and_suggests_sampling_or_vertex(fake):
    judge = GeminiJudge("gemini-2.5-flash-nolog", KEY, base_url=fake.url, timeout=5)
    with pytest.raises(LogprobsUnavailableError) as info:
        judge.judge(ask("gemini-2.5-flash-nolog"))
    message = str(info.value)
    assert "'gemini-2.5-flash-nolog'" in message and "sampling mode" in message
    assert "--judge vertex:gemini-2.5-flash-nolog" in message


# ---- Vertex AI ---------------------------------------------------------------------------------------


class FakeCredentials:
    """Google credentials that never refresh over the network (the SDK only reads .token)."""

    token, expired, valid, quota_project_id = "fake-adc-token", False, True, None

    def refresh(self, request):  # pragma: no cover - a valid token is never refreshed
        raise AssertionError("no network in tests")


def test_vertex_judge_calls_the_publisher_model_path_with_adc(fake):
    judge = VertexJudge(
        "gemini-2.5-flash",
        "my-project",
        "us-central1",
        base_url=fake.url,
        timeout=5,
        credentials=FakeCredentials(),
    )
    start = len(fake.requests)
    reply = judge.judge(ask("gemini-2.5-flash"))
    method, path, headers, body = fake.requests[start]
    assert path.endswith(
        "/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    assert headers["authorization"] == "Bearer fake-adc-token" and "x-goog-api-key" not in headers
    assert body["generationConfig"]["thinkingConfig"] == {"thinking_budget": 0}
    assert reply.choices[0].positions and judge.provider == "vertex"


def test_vertex_through_get_judge_reads_the_project_from_the_environment(fake, monkeypatch):
    import google.auth

    monkeypatch.setattr(google.auth, "default", lambda **_: (FakeCredentials(), "adc-project"))
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    settings = JudgeSettings(provider="vertex", model="gemini-2.5-flash", base_url=fake.url)
    with pytest.raises(ConfigError, match="GOOGLE_CLOUD_PROJECT"):
        get_judge(settings)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    start = len(fake.requests)
    get_judge(settings).judge(ask("gemini-2.5-flash"))
    assert "/projects/env-project/locations/europe-west4/" in fake.requests[start][1]
    assert fake.requests[start][2]["authorization"] == "Bearer fake-adc-token"


def test_pre_freeze_checks_read_the_documented_facts_and_the_latest_probe():
    from dataclasses import replace

    from geval_core.providers.capabilities import check_dimension

    dim = example_dimensions()[0]
    gpt5 = replace(dim, judge=JudgeSettings(provider="openai", model="gpt-5-mini"))
    assert [c.message for c in check_dimension(gpt5) if c.field == "judge"] == [
        f"{NO_LOGPROBS} (openai:gpt-5-mini)"
    ]
    split = [
        c for c in check_dimension(dim, {"split_ratings": ["10"], "logprobs": True}) if c.field == "judge"
    ]
    assert [c.level for c in split] == ["warning"] and "splits 10" in split[0].message
