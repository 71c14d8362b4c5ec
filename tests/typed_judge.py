"""The OpenAI judge as it was before issue 15, kept as the reference the fast path is checked against (tests)
and measured against (bench/bench_throughput.py): the SDK's typed `chat.completions.create` on its default
httpx transport, the answer read from the SDK's pydantic models by `choice_from_openai`."""

from __future__ import annotations

from typing import Any

from geval_core.providers.openai_judge import Completion, OpenAIJudge, sdk_error_types
from geval_core.types import Choice, Position, TopLogprob


def choice_from_openai(choice: Any) -> Choice:
    """One chat-completion choice (SDK object) in the neutral shape, as the judge read it before issue 15."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    positions = None
    if content:
        positions = tuple(
            Position(
                t.token,
                float(t.logprob),
                tuple(TopLogprob(a.token, float(a.logprob)) for a in (t.top_logprobs or [])),
            )
            for t in content
        )
    text = choice.message.content if choice.message and choice.message.content else ""
    return Choice(text, positions)


def sdk_completion(response: Any) -> Completion:
    """What the old hooks read from a ChatCompletion model (raw: its model_dump, as before)."""
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None)
    return Completion(
        [choice_from_openai(c) for c in (response.choices or [])],
        (
            int(getattr(usage, "prompt_tokens", 0) or 0) if usage else 0,
            int(getattr(usage, "completion_tokens", 0) or 0) if usage else 0,
            int(getattr(details, "cached_tokens", 0) or 0),
        ),
        response.model,
        response.model_dump(mode="json"),
    )


class TypedJudge(OpenAIJudge):
    """OpenAIJudge with the old request: the typed call and the SDK's models (`_send` maps errors for both)."""

    def __init__(self, model: str, api_key: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        from openai import OpenAI

        super().__init__(model, api_key, base_url, timeout)
        self._plain = None  # always the SDK, plain-http servers too: the reference the fast paths are held to
        self._client = OpenAI(api_key=self._key, base_url=self.base_url, timeout=timeout, max_retries=0)
        self._errors = sdk_error_types()

    def _post(self, body: dict[str, Any]) -> Completion:
        return sdk_completion(self._client.chat.completions.create(**body))
