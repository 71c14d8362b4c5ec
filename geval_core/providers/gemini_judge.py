"""The Gemini judge: generateContent through the official google-genai SDK."""

from __future__ import annotations

from typing import Any

from ..errors import JudgeError, LogprobsUnavailableError, RetryableJudgeError, UnreachableError
from ..types import Choice, JudgeReply, JudgeRequest, JudgeSettings, Position, TopLogprob, Usage
from .capabilities import gemini_thinking
from .common import env_key, http_errors, redact, require_key, status_error
from .hosted import HostedJudge
from .registry import provider_spec

RETRYABLE_STATUS = {408, 429}
ROLES = {"user": "user", "assistant": "model", "model": "model"}
# Parts of the response that are transport detail, not the model's answer.
RAW_EXCLUDE = {"sdk_http_response", "automatic_function_calling_history", "parsed"}


def _logprob(value: float | None) -> float:
    """Proto3 JSON omits a float field equal to 0.0, so an absent log-probability means 0.0."""
    return 0.0 if value is None else float(value)


def _positions(result: Any) -> tuple[Position, ...] | None:
    """chosen_candidates[i] with top_candidates[i] as alternatives; tokens at logprob 0.0 kept."""
    chosen = getattr(result, "chosen_candidates", None) or []
    tops = getattr(result, "top_candidates", None) or []
    if not chosen:
        return None
    positions = []
    for i, pick in enumerate(chosen):
        alternatives = (tops[i].candidates or []) if i < len(tops) else []
        top = tuple(
            TopLogprob(a.token if a.token is not None else "", _logprob(a.log_probability))
            for a in alternatives
        )
        positions.append(
            Position(pick.token if pick.token is not None else "", _logprob(pick.log_probability), top)
        )
    return tuple(positions)


def _text(candidate: Any) -> str:
    parts = (getattr(candidate.content, "parts", None) or []) if candidate.content else []
    # Thinking models return thought parts too; the reply is the rest.
    return "".join(p.text for p in parts if p.text is not None and not getattr(p, "thought", False))


class GeminiJudge(HostedJudge):
    """generateContent with response_logprobs, logprobs (top-k) and candidate_count."""

    provider = "gemini"

    def __init__(self, model: str, api_key: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        super().__init__(model, api_key, base_url)
        self._client = self._make_client(timeout)

    def _make_client(self, timeout: float) -> Any:
        """The google-genai client for the Gemini API (VertexJudge makes one for Vertex AI)."""
        from google import genai

        return genai.Client(api_key=self._key, vertexai=False, http_options=self._http_options(timeout))

    def _http_options(self, timeout: float) -> Any:
        from google.genai import types

        return types.HttpOptions(
            base_url=self.base_url,
            timeout=int(timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )  # the runner retries

    def _where(self) -> str:
        return f"Gemini at {self.base_url}" if self.base_url else "the Gemini API"

    # The response-reading hooks keep no state: static, so batch results (gemini_reply) read answers alike.
    @staticmethod
    def _choices(response: Any) -> list[Choice]:
        return [Choice(_text(c), _positions(c.logprobs_result)) for c in (response.candidates or [])]

    def _nothing(self, response: Any, request: JudgeRequest) -> str:
        return f"Gemini returned no candidates for model {request.model!r}{_blocked(response)}"

    @staticmethod
    def _usage(response: Any) -> tuple[int, int, int]:
        # Thought tokens are billed as output: count them, so usage and cost say what was paid. The prompt count
        # includes cached_content_token_count (implicit caching of Gemini 2.5 and later), billed at the cached rate.
        return (
            _usage(response, "prompt_token_count"),
            _usage(response, "candidates_token_count") + _usage(response, "thoughts_token_count"),
            _usage(response, "cached_content_token_count"),
        )

    @staticmethod
    def _raw(response: Any) -> Any:
        return response.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=RAW_EXCLUDE)

    @staticmethod
    def _version(response: Any) -> str | None:
        return response.model_version

    def _call(self, request: JudgeRequest, n: int, call: int) -> Any:
        """One generateContent call with every failure mapped onto the workbench's errors."""
        from google.genai import errors

        contents, config = gemini_request(request, n, None if request.seed is None else request.seed + call)
        try:
            return self._client.models.generate_content(model=request.model, contents=contents, config=config)
        except errors.APIError as exc:
            raise self._api_error(exc, request) from None
        except http_errors().transport as exc:  # the SDK lets its HTTP client's errors through
            raise self._transport_error(exc) from None
        except ValueError as exc:  # a body that is not JSON, or JSON that is not a response (pydantic)
            raise RetryableJudgeError(
                f"Gemini gave an unusable answer ({type(exc).__name__}): {redact(str(exc), self._key)[:300]}"
            ) from None

    def _api_error(self, exc: Any, request: JudgeRequest) -> JudgeError:
        message = redact(str(exc.message or exc), self._key)[:300]
        if int(exc.code or 0) == 400 and request.logprobs and "logprob" in message.lower():
            return LogprobsUnavailableError(
                f"{self._where()} gives no log-probabilities for model {request.model!r} ({message}): freeze in "
                f"sampling mode{self._elsewhere(request)}",
                status=400,
            )
        headers = getattr(exc.response, "headers", None) or {}
        return status_error(
            int(exc.code or 0),
            message,
            headers.get("retry-after"),
            request,
            who="Gemini",
            model="Gemini model",
            retryable=RETRYABLE_STATUS,
            key_hint=" or ".join(provider_spec("gemini").key_variables),
        )

    def _elsewhere(self, request: JudgeRequest) -> str:
        """Where else the model may give log-probabilities (Vertex AI serves them for several models)."""
        return f", or use the same model on Vertex AI (--judge vertex:{request.model})"

    def _transport_error(self, exc: Exception) -> JudgeError:
        name = type(exc).__name__
        message = redact(str(exc), self._key)[:300]
        if isinstance(exc, http_errors().connect):
            return UnreachableError(f"could not connect to {self._where()} ({name}): {message}")
        if isinstance(exc, http_errors().transient):
            return RetryableJudgeError(f"could not reach Gemini ({name}): {message}")
        return JudgeError(f"Gemini gave an unusable answer ({name}): {message}")


def gemini_request(
    request: JudgeRequest, n: int, seed: int | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(contents, config) of one generateContent call; the Batch API sends the same (see run/batch_engines)."""
    from google.genai import types

    contents, system = _contents(request.messages)
    thinking = gemini_thinking(request.model)
    thinking_config = thinking.config()
    config: dict[str, Any] = {
        # Thinking tokens come out of max_output_tokens: add room for the least thinking the model does.
        "temperature": request.temperature,
        "max_output_tokens": request.max_tokens + thinking.allowance,
        "candidate_count": n,
        "system_instruction": system or None,
        # A ThinkingConfig, not a dict: the SDK passes a nested dict's keys through unconverted.
        "thinking_config": types.ThinkingConfig(**thinking_config) if thinking_config else None,
    }
    if seed is not None:
        config["seed"] = seed  # a repeated call passes seed + call: the same seed would repeat itself
    if request.logprobs:
        config.update(response_logprobs=True, logprobs=request.top_logprobs)
    return contents, config


def gemini_reply(response: Any) -> JudgeReply:
    """A GenerateContentResponse as a JudgeReply, with the live judge's own mapping (batch results use it)."""
    read = GeminiJudge
    return JudgeReply(
        tuple(read._choices(response)),
        read._version(response) or "",
        Usage(*read._usage(response)),
        0.0,
        read._raw(response),
    )


def _contents(messages: tuple[dict[str, str], ...]) -> tuple[list[dict[str, Any]], str]:
    """Chat dicts to Gemini contents; system messages become the system instruction."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    contents = [
        {"role": ROLES.get(m["role"], "user"), "parts": [{"text": m["content"]}]}
        for m in messages
        if m["role"] != "system"
    ]
    return contents, system


def _blocked(response: Any) -> str:
    feedback = getattr(response, "prompt_feedback", None)
    reason = getattr(feedback, "block_reason", None)
    return f" (prompt blocked: {reason})" if reason else ""


def _usage(response: Any, name: str) -> int:
    meta = response.usage_metadata
    return int(getattr(meta, name, 0) or 0) if meta else 0


def build(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> GeminiJudge:
    """The registry's builder: the key from `api_key` or the spec's variables (GEMINI_API_KEY, GOOGLE_API_KEY)."""
    variables = provider_spec("gemini").key_variables
    key = require_key(api_key or env_key(*variables), variables, "gemini")
    return GeminiJudge(settings.model, key, base_url=settings.base_url, timeout=timeout)
