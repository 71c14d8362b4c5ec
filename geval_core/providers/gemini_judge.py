"""The Gemini judge: generateContent through the official google-genai SDK."""

from __future__ import annotations

import time
from typing import Any

from ..errors import JudgeError, LogprobsUnavailableError, RetryableJudgeError
from ..types import Choice, JudgeReply, JudgeRequest, Position, TopLogprob, Usage
from ._common import UnreachableError, gather_choices, redact, status_error

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
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
        top = tuple(TopLogprob(a.token if a.token is not None else "", _logprob(a.log_probability))
                    for a in alternatives)
        positions.append(Position(pick.token if pick.token is not None else "",
                                  _logprob(pick.log_probability), top))
    return tuple(positions)


def _text(candidate: Any) -> str:
    parts = (getattr(candidate.content, "parts", None) or []) if candidate.content else []
    # Thinking models return thought parts too; the reply is the rest.
    return "".join(p.text for p in parts if p.text is not None and not getattr(p, "thought", False))


class GeminiJudge:
    """generateContent with response_logprobs, logprobs (top-k) and candidate_count."""

    provider = "gemini"
    primes = False

    def __init__(self, model: str, api_key: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        from google import genai
        from google.genai import types

        self.model = model
        self.base_url = base_url
        self._key = api_key  # kept only to scrub it from error messages
        options = types.HttpOptions(base_url=base_url, timeout=int(timeout * 1000),
                                    retry_options=types.HttpRetryOptions(attempts=1))  # the runner retries
        self._client = genai.Client(api_key=api_key, vertexai=False, http_options=options)

    def __repr__(self) -> str:  # never show the key
        return f"GeminiJudge(model={self.model!r}, base_url={self.base_url!r})"

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Ask for n candidates; if fewer come back, ask again until n are in (bounded by n calls)."""
        start = time.perf_counter()
        responses, choices = gather_choices(
            request.n, lambda missing, call: self._generate(request, missing, call),
            lambda response: [Choice(_text(c), _positions(c.logprobs_result)) for c in (response.candidates or [])],
            lambda response: f"Gemini returned no candidates for model {request.model!r}{_blocked(response)}")
        if request.logprobs and not any(c.positions for c in choices):
            raise LogprobsUnavailableError(
                f"Gemini model {request.model!r} returned no log-probabilities; "
                "use --mode sampling (n replies at a temperature above 0) for this judge"
            )
        usage = Usage(sum(_usage(r, "prompt_token_count") for r in responses),
                      sum(_usage(r, "candidates_token_count") for r in responses))
        raw = [r.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=RAW_EXCLUDE)
               for r in responses]
        version = responses[0].model_version or request.model
        return JudgeReply(tuple(choices), version, usage, time.perf_counter() - start,
                          raw[0] if len(raw) == 1 else {"responses": raw})

    def _generate(self, request: JudgeRequest, n: int, call: int) -> Any:
        from google.genai import errors

        contents, system = _contents(request.messages)
        config: dict[str, Any] = {
            "temperature": request.temperature, "max_output_tokens": request.max_tokens,
            "candidate_count": n, "system_instruction": system or None,
        }
        if request.seed is not None:
            config["seed"] = request.seed + call  # a repeated call with the same seed repeats itself
        if request.logprobs:
            config.update(response_logprobs=True, logprobs=request.top_logprobs)
        try:
            return self._client.models.generate_content(model=request.model, contents=contents,
                                                        config=config)
        except errors.APIError as exc:
            raise self._api_error(exc, request) from None
        except Exception as exc:  # transport errors come from the SDK's HTTP client
            raise self._transport_error(exc) from None

    def _api_error(self, exc: Any, request: JudgeRequest) -> JudgeError:
        message = redact(str(exc.message or exc), self._key)[:300]
        headers = getattr(exc.response, "headers", None) or {}
        return status_error(int(exc.code or 0), message, headers.get("retry-after"), request, who="Gemini",
                            model="Gemini model", retryable=RETRYABLE_STATUS, key_hint=" or ".join(KEY_VARIABLES))

    def _where(self) -> str:
        return f"Gemini at {self.base_url}" if self.base_url else "the Gemini API"

    def _transport_error(self, exc: Exception) -> JudgeError:
        name = type(exc).__name__
        message = redact(str(exc), self._key)[:300]
        # httpx-style transport errors (timeouts, refused connections, dropped streams) are transient.
        transient = ("Timeout", "Connect", "Network", "Protocol", "ReadError", "WriteError")
        if "Connect" in name or isinstance(exc, ConnectionError):
            return UnreachableError(f"could not connect to {self._where()} ({name}): {message}")
        if any(word in name for word in transient) or isinstance(exc, TimeoutError):
            return RetryableJudgeError(f"could not reach Gemini ({name}): {message}")
        return JudgeError(f"Gemini gave an unusable answer ({name}): {message}")


def _contents(messages: tuple[dict[str, str], ...]) -> tuple[list[dict[str, Any]], str]:
    """Chat dicts to Gemini contents; system messages become the system instruction."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    contents = [{"role": ROLES.get(m["role"], "user"), "parts": [{"text": m["content"]}]}
                for m in messages if m["role"] != "system"]
    return contents, system


def _blocked(response: Any) -> str:
    feedback = getattr(response, "prompt_feedback", None)
    reason = getattr(feedback, "block_reason", None)
    return f" (prompt blocked: {reason})" if reason else ""


def _usage(response: Any, name: str) -> int:
    meta = response.usage_metadata
    return int(getattr(meta, name, 0) or 0) if meta else 0
