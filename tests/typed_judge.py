"""The OpenAI judge as it was before issue 15, kept as the reference the fast path is checked against (tests)
and measured against (bench/bench_throughput.py): the SDK's typed `chat.completions.create` on its default
httpx transport, the answer read from the SDK's pydantic models by `choice_from_openai`."""

from __future__ import annotations

from typing import Any

from geval_core.errors import RetryableJudgeError, UnreachableError
from geval_core.providers._common import redact
from geval_core.providers.openai_judge import Completion, OpenAIJudge, choice_from_openai


def sdk_completion(response: Any) -> Completion:
    """What the old hooks read from a ChatCompletion model (raw: its model_dump, as before)."""
    usage = response.usage
    return Completion([choice_from_openai(c) for c in (response.choices or [])],
                      (int(getattr(usage, "prompt_tokens", 0) or 0) if usage else 0,
                       int(getattr(usage, "completion_tokens", 0) or 0) if usage else 0),
                      response.model, response.model_dump(mode="json"))


class TypedJudge(OpenAIJudge):
    """OpenAIJudge with the old `_send`: the typed call, the same error mapping, the SDK's models."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from openai import OpenAI

        super().__init__(*args, **kwargs)
        self._client = OpenAI(api_key=self._key, base_url=self.base_url, timeout=self._client.timeout, max_retries=0)

    def _send(self, body: dict[str, Any], request: Any) -> Completion:
        import openai

        try:
            response = self._client.chat.completions.create(**body)
        except openai.BadRequestError:
            raise
        except openai.APIStatusError as exc:
            raise self._status_error(exc, request) from None
        except openai.APITimeoutError:
            raise RetryableJudgeError(f"{self._where()} timed out") from None
        except openai.APIConnectionError as exc:
            raise UnreachableError(f"could not connect to {self._where()}: {redact(str(exc), self._key)}") from None
        except (openai.OpenAIError, ValueError) as exc:
            raise RetryableJudgeError(f"{self._where()} gave an unusable answer: "
                                      f"{redact(str(exc), self._key)[:300]}") from None
        return sdk_completion(response)
