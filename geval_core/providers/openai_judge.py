"""The OpenAI judge: chat completions through the official SDK, or any OpenAI-compatible server."""

from __future__ import annotations

import time
from typing import Any

from ..errors import JudgeError, LogprobsUnavailableError, RetryableJudgeError
from ..types import Choice, JudgeReply, JudgeRequest, Position, TopLogprob, Usage
from ._common import UnreachableError, gather_choices, redact, status_error

KEY_VARIABLE = "OPENAI_API_KEY"
# Status codes worth another try; the runner retries, never the SDK (max_retries=0).
RETRYABLE_STATUS = {408, 409, 429}


class OpenAIJudge:
    """Chat completions with logprobs/top_logprobs and n; tops up servers that ignore n."""

    provider = "openai"
    primes = False  # a chat API cannot start the assistant turn with given text

    def __init__(self, model: str, api_key: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        self._key = api_key  # kept only to scrub it from error messages
        self._client = OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r})"

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Ask for n replies; servers that return fewer are asked again until n are in."""
        start = time.perf_counter()
        responses, choices = gather_choices(
            request.n, lambda missing, call: self._create(request, missing, call),
            lambda response: [choice_from_openai(c) for c in (response.choices or [])],
            lambda response: f"{self._where()} returned no choices for model {request.model!r}")
        if request.logprobs and not any(c.positions for c in choices):
            raise LogprobsUnavailableError(
                f"model {request.model!r} at {self._where()} returned no log-probabilities; "
                "use --mode sampling (n replies at a temperature above 0) for this judge"
            )
        usage = Usage(sum(_usage(r, "prompt_tokens") for r in responses),
                      sum(_usage(r, "completion_tokens") for r in responses))
        raw = [r.model_dump(mode="json") for r in responses]
        return JudgeReply(tuple(choices), responses[0].model or request.model, usage,
                          time.perf_counter() - start, raw[0] if len(raw) == 1 else {"responses": raw})

    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _create(self, request: JudgeRequest, n: int, call: int) -> Any:
        """One SDK call with every failure mapped onto the workbench's errors."""
        import openai

        options: dict[str, Any] = {
            "model": request.model, "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature, "max_tokens": request.max_tokens, "n": n,
        }
        if request.seed is not None:
            # A repeated call with the same seed would repeat the same replies.
            options["seed"] = request.seed + call
        if request.logprobs:
            options.update(logprobs=True, top_logprobs=request.top_logprobs)
        try:
            return self._client.chat.completions.create(**options)
        except openai.APIStatusError as exc:
            raise self._status_error(exc, request) from None
        except openai.APITimeoutError:
            raise RetryableJudgeError(f"{self._where()} timed out") from None
        except openai.APIConnectionError as exc:
            raise UnreachableError(f"could not connect to {self._where()}: {redact(str(exc), self._key)}") from None
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise JudgeError(f"{self._where()} gave an unusable answer: "
                             f"{redact(str(exc), self._key)[:300]}") from None

    def _status_error(self, exc: Any, request: JudgeRequest) -> JudgeError:
        message = redact(str(getattr(exc, "message", "") or exc), self._key)[:300]
        return status_error(exc.status_code, message, exc.response.headers.get("retry-after"), request,
                            who=self._where(), model="model", retryable=RETRYABLE_STATUS, key_hint=KEY_VARIABLE)


def choice_from_openai(choice: Any) -> Choice:
    """One chat-completion choice (SDK object) in the neutral shape; batch output files use it too."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    positions = None
    if content:
        positions = tuple(
            Position(t.token, float(t.logprob),
                     tuple(TopLogprob(a.token, float(a.logprob)) for a in (t.top_logprobs or [])))
            for t in content
        )
    text = choice.message.content if choice.message and choice.message.content else ""
    return Choice(text, positions)


def _usage(response: Any, name: str) -> int:
    return int(getattr(response.usage, name, 0) or 0) if response.usage else 0
