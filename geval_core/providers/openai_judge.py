"""The OpenAI judge: chat completions through the official SDK, or any OpenAI-compatible server.

The hot path sends the body through the client's public `post` (the SDK's documented way to make a request
by hand: its auth, headers, timeout, connection pool and error types), or for a plain-http server through the
public API of the SDK's own httpx client (plain_http.py), and reads the answer's bytes with `json.loads`: the typed `create` spends ~1 ms validating the request's TypedDicts and ~0.7 ms building
pydantic models of the response, three times what the judgment needs. `completion_from_json` reads the
fields the SDK's models would give (tests/typed_judge.py keeps the typed path as the reference it is
checked against); batch output files are read the same way.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ..errors import JudgeError, LogprobsUnavailableError, RetryableJudgeError, UnreachableError
from ..types import Choice, JudgeRequest, JudgeSettings, Position, TopLogprob
from ..urls import is_custom_server
from .capabilities import NO_LOGPROBS, completion_budget, is_reasoning_model
from .common import NO_KEY, env_key, redact, require_key, status_error
from .hosted import HostedJudge
from .plain_http import PlainHttpPost, ServerStatusError, ServerTimeout, ServerUnreachable, is_plain_http
from .registry import provider_spec

_BEARER: Any = {"security": {"bearer_auth": True}}  # RequestOptions: authenticate with the API key
# Status codes worth another try; the runner retries, never the SDK (max_retries=0).
RETRYABLE_STATUS = {408, 409, 429}
# The documented 400 codes for a parameter a model does not take, or a value it does not accept.
UNSUPPORTED = {"unsupported_parameter", "unsupported_value"}
OPENAI_API_HOST = "api.openai.com"


def chat_body(
    request: JudgeRequest, n: int, reasoning: bool, seed: int | None, cache_key: str | None = None
) -> dict[str, Any]:
    """The chat-completions body: reasoning models get max_completion_tokens (reply + reasoning room),
    no temperature unless it is their default (1), and no logprobs; others the classic options. `cache_key`
    goes out as prompt_cache_key (requests sharing a prefix routed to one cache): OpenAI's own API only."""
    body: dict[str, Any] = {"model": request.model, "messages": [dict(m) for m in request.messages], "n": n}
    if reasoning:
        body["max_completion_tokens"] = completion_budget(request.max_tokens, request.reasoning_effort)
        if request.logprobs:
            raise LogprobsUnavailableError(f"{NO_LOGPROBS} (model {request.model!r})")
        if request.temperature != 1.0:
            raise JudgeError(
                f"model {request.model!r} takes only the default temperature (1), not "
                f"{request.temperature}: freeze the prompt with temperature 1"
            )
    else:
        body.update(temperature=request.temperature, max_tokens=request.max_tokens)
        if request.logprobs:
            body.update(logprobs=True, top_logprobs=request.top_logprobs)
    if request.reasoning_effort:
        body["reasoning_effort"] = request.reasoning_effort
    if seed is not None:
        body["seed"] = seed
    if cache_key:
        body["prompt_cache_key"] = cache_key
    return body


def routes_by_cache_key(base_url: Any) -> bool:
    """Whether a server is OpenAI's own API, the one that documents prompt_cache_key.

    Other OpenAI-compatible servers are not sent it: llama.cpp's server (llama_cpp.server and llama-server) drops
    unknown fields, but a server that validates strictly refuses the whole request with a 400, and none of them
    routes by the key (llama.cpp picks a slot by prompt similarity, vLLM and SGLang match prefixes themselves)."""
    host = urlsplit(str(base_url or "")).hostname or ""
    return host == OPENAI_API_HOST


class ErrorTypes(NamedTuple):
    """The exception types one client raises, by what they mean (the SDK's, or plain_http's)."""

    bad_request: tuple[type[Exception], ...]  # 400: maybe a documented refusal of one parameter
    status: tuple[type[Exception], ...]  # any other status outside 2xx
    timeout: tuple[type[Exception], ...]
    connection: tuple[type[Exception], ...]
    unusable: tuple[type[Exception], ...]  # an answer that is not a chat completion


def sdk_error_types() -> ErrorTypes:
    """The openai SDK's exception types, by what they mean."""
    import openai

    return ErrorTypes(
        (openai.BadRequestError,),
        (openai.APIStatusError,),
        (openai.APITimeoutError,),
        (openai.APIConnectionError,),
        (openai.OpenAIError, ValueError),
    )


class OpenAIJudge(HostedJudge):
    """Chat completions with logprobs/top_logprobs and n; tops up servers that ignore n."""

    provider = "openai"
    scrubs_answers = True  # _post takes the key out of the answer's bytes: one search, before any parsing

    def __init__(self, model: str, api_key: str, base_url: str | None = None, timeout: float = 60.0) -> None:
        super().__init__(model, api_key, base_url)
        self._client: Any = None
        self._plain: PlainHttpPost | None = None
        if is_plain_http(self.base_url):  # a server of the user's: no SDK import (0.8 s), httpx's public API
            self._plain = PlainHttpPost(self.base_url, "/chat/completions", api_key, timeout)
            self._errors = ErrorTypes(
                (), (ServerStatusError,), (ServerTimeout,), (ServerUnreachable,), (ValueError,)
            )
        else:
            import openai

            # One client per judge, shared by every worker thread (its httpx client keeps connections alive and
            # is thread-safe). max_retries=0: the runner retries, with its own budget.
            self._client = openai.OpenAI(
                api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=0
            )
            self._errors = sdk_error_types()
        # The client's resolved URL (OPENAI_BASE_URL included), not the one asked for: where requests really go.
        self.sends_cache_key = self._client is not None and routes_by_cache_key(self._client.base_url)
        self._key_bytes = api_key.encode("utf-8") if api_key and api_key != NO_KEY else b""
        self.reasoning = is_reasoning_model(model)  # also set once a server refuses max_tokens
        self.adapted: list[str] = []  # what this judge changed after a documented 400, for the record

    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _choices(self, response: Completion) -> list[Choice]:
        return response.choices

    def _nothing(self, response: Any, request: JudgeRequest) -> str:
        return f"{self._where()} returned no choices for model {request.model!r}"

    def _usage(self, response: Completion) -> tuple[int, int, int]:
        return response.usage

    def _raw(self, response: Completion) -> Any:
        raw = dict(response.body)  # as the server sent it (the typed SDK path added absent keys as None)
        if self.adapted:  # the request differed from the prompt's options: say how, beside the answer
            raw["geval_adapted"] = list(self.adapted)
        return raw

    def _version(self, response: Completion) -> str | None:
        return response.model

    def _call(self, request: JudgeRequest, n: int, call: int) -> Any:
        """One call; a documented 400 for max_tokens switches to the reasoning options once."""
        bad_request: tuple[type[Exception], ...] = (
            *self._errors.bad_request,
            ServerStatusError,
        )  # _send passes on only 400s of these
        # A repeated call with the same seed would repeat the same replies.
        seed = None if request.seed is None else request.seed + call
        key = request.prefix_key if self.sends_cache_key else None
        try:
            return self._send(chat_body(request, n, self.reasoning, seed, key), request)
        except bad_request as exc:
            if self.reasoning or not _refused(exc, "max_tokens"):
                raise self._status_error(exc, request) from None
        self.reasoning = True  # the server said so: this model reasons, whatever its name
        self.adapted.append("max_tokens -> max_completion_tokens (the server refused max_tokens)")
        try:
            return self._send(chat_body(request, n, True, seed, key), request)
        except bad_request as exc:
            raise self._status_error(exc, request) from None

    def _send(self, body: dict[str, Any], request: JudgeRequest) -> Completion:
        """One chat-completions call, its answer read; every failure but a 400 mapped onto the workbench's
        errors."""
        errors = self._errors
        try:
            return self._post(body)
        except errors.bad_request:
            raise
        except errors.status as exc:
            if isinstance(exc, ServerStatusError) and exc.status_code == 400:
                raise
            raise self._status_error(exc, request) from None
        except errors.timeout:
            raise RetryableJudgeError(f"{self._where()} timed out") from None
        except errors.connection as exc:
            raise UnreachableError(
                f"could not connect to {self._where()}: {redact(str(exc), self._key)}"
            ) from None
        except errors.unusable as exc:  # ValueError: a body that is not JSON, or not a completion
            # A malformed or truncated body is one broken answer, not a broken judge: ask again.
            raise RetryableJudgeError(
                f"{self._where()} gave an unusable answer: {redact(str(exc), self._key)[:300]}"
            ) from None

    def _post(self, body: dict[str, Any]) -> Completion:
        """The request itself, read into a Completion (the SDK's exceptions pass through to `_send`)."""
        if self._plain is not None:
            answer = self._plain(body)
        else:  # the credentials `create` sends (the API key, never an admin key)
            answer = self._client.post("/chat/completions", body=body, cast_to=bytes, options=_BEARER)
        if self._key_bytes and self._key_bytes in answer:  # a server that echoes the key: never stored
            answer = answer.replace(self._key_bytes, b"[redacted key]")
        return completion_from_json(answer)

    def _status_error(self, exc: Any, request: JudgeRequest) -> JudgeError:
        message = redact(str(getattr(exc, "message", "") or exc), self._key)[:300]
        if exc.status_code == 400 and getattr(exc, "code", None) in UNSUPPORTED:
            return _unsupported(exc, request, message)
        headers = exc.headers if isinstance(exc, ServerStatusError) else exc.response.headers
        return status_error(
            exc.status_code,
            message,
            headers.get("retry-after"),
            request,
            who=self._where(),
            model="model",
            retryable=RETRYABLE_STATUS,
            key_hint=" or ".join(provider_spec("openai").key_variables),
        )


class Completion(NamedTuple):
    """One chat-completion answer: what a judgment needs from it, and the body for audit."""

    choices: list[Choice]
    usage: tuple[
        int, int, int
    ]  # (prompt tokens, completion tokens, of the prompt tokens those read from the cache)
    model: str | None  # the model version the server reported
    body: dict[str, Any]


def completion_from_json(content: bytes | str) -> Completion:
    """A chat-completion body read with json.loads: the choices' text and log-probabilities, usage and model
    and nothing else; ValueError for a body that is not JSON or not shaped like a completion."""
    return completion_from_body(json.loads(content))


def completion_from_body(body: Any) -> Completion:
    """`completion_from_json` of a body already decoded (a batch output line's `response.body`)."""
    if not isinstance(body, dict):
        raise ValueError(f"the answer is JSON but not a chat completion: {str(body)[:100]}")
    try:
        return Completion(
            [_choice(c) for c in (body.get("choices") or [])],
            _usage_of(body.get("usage")),
            body.get("model"),
            body,
        )
    except (AttributeError, KeyError, TypeError) as exc:
        raise ValueError(f"not a chat completion ({type(exc).__name__}: {exc})") from None


def _usage_of(usage: dict[str, Any] | None) -> tuple[int, int, int]:
    """(prompt, completion, cached prompt tokens); cached_tokens sits in prompt_tokens_details, which servers other
    than OpenAI's may leave out or send as null."""
    if not usage:
        return 0, 0, 0
    details = usage.get("prompt_tokens_details") or {}
    return (
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(details.get("cached_tokens") or 0),
    )


def _choice(choice: dict[str, Any]) -> Choice:
    content = (choice.get("logprobs") or {}).get("content")
    positions = None
    if content:
        positions = tuple(
            Position(
                t["token"],
                float(t["logprob"]),
                tuple(TopLogprob(a["token"], float(a["logprob"])) for a in (t.get("top_logprobs") or [])),
            )
            for t in content
        )
    message = choice.get("message")
    return Choice(message["content"] if message and message.get("content") else "", positions)


def _refused(exc: Any, param: str) -> bool:
    """True for the documented 400 refusing `param` (code unsupported_parameter or unsupported_value)."""
    return getattr(exc, "code", None) in UNSUPPORTED and getattr(exc, "param", None) == param


def _unsupported(exc: Any, request: JudgeRequest, message: str) -> JudgeError:
    """A documented refusal of one parameter, as an error that names it and says what to change."""
    param = getattr(exc, "param", None) or "a parameter"
    if param in ("logprobs", "top_logprobs"):
        return LogprobsUnavailableError(f"{NO_LOGPROBS} (model {request.model!r}: {message})", status=400)
    fix = {
        "temperature": "freeze the prompt with temperature 1 (sampling mode)",
        "n": "this model gives one reply per call: use n 1",
        "reasoning_effort": "clear reasoning_effort (this model does not reason)",
    }.get(param, f"this judge cannot take {param!r}")
    return JudgeError(f"model {request.model!r} refused {param!r} ({exc.code}): {message}; {fix}", status=400)


def build(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> OpenAIJudge:
    """The registry's builder: the key from `api_key` or the spec's variable (OPENAI_API_KEY); a local server
    needs none."""
    variables = provider_spec("openai").key_variables
    key = api_key or env_key(*variables)
    if not key and is_custom_server(settings.base_url):
        key = NO_KEY  # local OpenAI-compatible servers (llama.cpp, vLLM, Ollama) need none
    key = require_key(key, variables, "openai")
    return OpenAIJudge(settings.model, key, base_url=settings.base_url, timeout=timeout)
