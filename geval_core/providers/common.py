"""Helpers the hosted-judge adapters share: keys from the environment, Retry-After, redaction."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import re
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

from ..errors import JudgeError, LogprobsUnavailableError, MissingKeyError, RetryableJudgeError
from ..types import Choice, JudgeRequest

# A placeholder for OpenAI-compatible servers that need no key (llama.cpp server, vLLM, Ollama).
NO_KEY = "not-needed"
_WORD = re.compile(r"[A-Za-z0-9_\-]{6,}")


class HttpErrors:
    """The transport error types of the HTTP clients the SDKs talk through (httpx and its fork httpx2).

    google-genai uses whichever of the two is installed and lets their errors through; classifying by
    their own types, never by names, keeps a renamed class from turning a timeout into a final error.
    """

    def __init__(self, modules: tuple[str, ...] = ("httpx2", "httpx")) -> None:
        found = [importlib.import_module(m) for m in modules if importlib.util.find_spec(m)]
        self.transport: tuple[type[Exception], ...] = tuple(m.TransportError for m in found)
        self.connect: tuple[type[Exception], ...] = tuple(m.ConnectError for m in found)
        self.transient: tuple[type[Exception], ...] = tuple(
            t for m in found for t in (m.TimeoutException, m.NetworkError, m.ProtocolError)
        )


@functools.cache
def http_errors() -> HttpErrors:
    """The transport error types, looked up once (only a judge that talks HTTP pays for the import)."""
    return HttpErrors()


def env_key(*variables: str) -> str | None:
    """The first non-empty environment variable among `variables`."""
    for name in variables:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def require_key(key: str | None, variables: tuple[str, ...], provider: str) -> str:
    """The key, or a MissingKeyError naming the variable(s) to set."""
    if key:
        return key
    names = " or ".join(variables)
    raise MissingKeyError(
        f"the {provider} judge needs an API key: set {names} in the environment "
        "(or as a root key in .streamlit/secrets.toml)"
    )


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), None if absent."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import datetime as dt

        when = parsedate_to_datetime(value)
        return max(0.0, (when - dt.datetime.now(dt.timezone.utc)).total_seconds())
    except (TypeError, ValueError):
        return None


def status_error(
    status: int,
    message: str,
    retry_after: str | None,
    request: JudgeRequest,
    *,
    who: str,
    model: str,
    retryable: set[int],
    key_hint: str,
) -> JudgeError:
    """An HTTP error answer as the workbench's error: retryable (honouring Retry-After), logprobs refused,
    or final (with a hint at the key variable for 401/403). `who` answered; `model` names the model."""
    if status in retryable or status >= 500:
        return RetryableJudgeError(
            f"{who} answered {status}: {message}", retry_after=parse_retry_after(retry_after), status=status
        )
    if status == 400 and request.logprobs and "logprob" in message.lower():
        return LogprobsUnavailableError(
            f"{model} {request.model!r} refused log-probabilities ({message}); use --mode sampling"
        )
    hint = f"; check {key_hint}" if status in (401, 403) else ""
    return JudgeError(f"{who} answered {status}: {message}{hint}", status=status)


def redact(text: str, key: str | None) -> str:
    """`text` without the key or any run of 6+ of its characters (servers echo masked keys)."""
    if not key or key == NO_KEY:
        return text
    text = text.replace(key, "[redacted key]")
    return _WORD.sub(lambda m: "[redacted]" if m.group(0) in key else m.group(0), text)


def gather_choices(
    n: int,
    ask: Callable[[int, int], Any],
    choices_of: Callable[[Any], list[Choice]],
    nothing: Callable[[Any], str],
) -> tuple[list[Any], list[Choice]]:
    """Call ask(missing, call_index) until n replies are in: (responses, the first n choices).

    Some servers ignore n (llama.cpp's answers one choice), so this asks again for the rest; at most
    n calls, because every call brings at least one reply or raises JudgeError(nothing(response)).
    """
    responses: list[Any] = []
    choices: list[Choice] = []
    while len(choices) < n and len(responses) < n:
        response = ask(n - len(choices), len(responses))
        got = choices_of(response)
        if not got:  # an empty answer is a glitch of this one call more often than of the judge: ask again
            raise RetryableJudgeError(nothing(response))
        responses.append(response)
        choices.extend(got)
    return responses, choices[:n]
