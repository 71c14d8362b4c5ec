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
from urllib.parse import parse_qsl, urlparse, urlsplit

from ..errors import ConfigError, JudgeError, LogprobsUnavailableError, MissingKeyError, RetryableJudgeError
from ..types import Choice, JudgeRequest

# A placeholder for OpenAI-compatible servers that need no key (llama.cpp server, vLLM, Ollama).
NO_KEY = "not-needed"
OPENAI_HOSTS = {"api.openai.com"}
_WORD = re.compile(r"[A-Za-z0-9_\-]{6,}")
# Query parameters that carry credentials (api_key, key, token, access_token, secret, password, sig, ...).
_SECRET_PARAM = re.compile(r"key|token|secret|passw|auth|sig|credential", re.IGNORECASE)


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
            t for m in found for t in (m.TimeoutException, m.NetworkError, m.ProtocolError))


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


def shown_url(url: str) -> str:
    """scheme://host:port/path of a URL: never its user:password@, query or fragment (safe to print)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else "(not a URL)"


def credentials_in(url: str) -> str | None:
    """Where a URL carries credentials ("user:password@ before the host", "?api_key= in the URL"), or None."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if "@" in parts.netloc:
        return "user:password@ before the host"
    named = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment)
             if _SECRET_PARAM.search(k)]
    return f"?{named[0]}= in the URL" if named else None


def check_base_url(url: str | None, variable: str = "OPENAI_API_KEY") -> str | None:
    """The server URL as given (None when empty); ConfigError when it is not http(s) or carries credentials.

    A key inside a URL (user:KEY@host, ?api_key=KEY) would be stored with the run and printed wherever the
    URL is: keys come from the environment only. The message never repeats the credentials.
    """
    if url is None or not url.strip():
        return None
    url = url.strip()
    where = credentials_in(url)
    if where is not None:
        raise ConfigError(f"the base URL {shown_url(url)} carries credentials ({where}); a key never goes in a "
                          f"URL: set {variable} in the environment and give the URL without it")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        raise ConfigError(f"the base URL {shown_url(url)} is not a valid URL; give the server's address, "
                          "e.g. http://127.0.0.1:8080/v1") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"the base URL {shown_url(url)} is not an http(s) server address; give the server's "
                          "address, e.g. http://127.0.0.1:8080/v1")
    return url


def is_custom_server(base_url: str | None) -> bool:
    """True for a base_url that is not the official OpenAI API (loopback, vLLM, Ollama, ...)."""
    if not base_url:
        return False
    return (urlparse(base_url).hostname or "") not in OPENAI_HOSTS


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


def status_error(status: int, message: str, retry_after: str | None, request: JudgeRequest, *, who: str,
                 model: str, retryable: set[int], key_hint: str) -> JudgeError:
    """An HTTP error answer as the workbench's error: retryable (honouring Retry-After), logprobs refused,
    or final (with a hint at the key variable for 401/403). `who` answered; `model` names the model."""
    if status in retryable or status >= 500:
        return RetryableJudgeError(f"{who} answered {status}: {message}", retry_after=parse_retry_after(retry_after),
                                   status=status)
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


def gather_choices(n: int, ask: Callable[[int, int], Any], choices_of: Callable[[Any], list[Choice]],
                   nothing: Callable[[Any], str]) -> tuple[list[Any], list[Choice]]:
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
