"""The OpenAI judge: chat completions through the official SDK, or any OpenAI-compatible server."""

from __future__ import annotations

from typing import Any

from ..errors import JudgeError, RetryableJudgeError, UnreachableError
from ..types import Choice, JudgeRequest, Position, TopLogprob
from ._common import redact, status_error
from .hosted import HostedJudge

KEY_VARIABLE = "OPENAI_API_KEY"
# Status codes worth another try; the runner retries, never the SDK (max_retries=0).
RETRYABLE_STATUS = {408, 409, 429}


class OpenAIJudge(HostedJudge):
    """Chat completions with logprobs/top_logprobs and n; tops up servers that ignore n."""

    provider = "openai"

    def __init__(self, model: str, api_key: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        from openai import OpenAI

        super().__init__(model, api_key, base_url)
        self._client = OpenAI(api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=0)

    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _choices(self, response: Any) -> list[Choice]:
        return [choice_from_openai(c) for c in (response.choices or [])]

    def _nothing(self, response: Any, request: JudgeRequest) -> str:
        return f"{self._where()} returned no choices for model {request.model!r}"

    def _usage(self, response: Any) -> tuple[int, int]:
        return _usage(response, "prompt_tokens"), _usage(response, "completion_tokens")

    def _raw(self, response: Any) -> Any:
        return response.model_dump(mode="json")

    def _version(self, response: Any) -> str | None:
        return response.model

    def _call(self, request: JudgeRequest, n: int, call: int) -> Any:
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
