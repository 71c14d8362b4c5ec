"""One judge call: the request for an item, its cache key, and bounded retries with backoff."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from .. import prompts
from ..errors import ContextLengthError, JudgeError, RetryableJudgeError, RetryLaterError
from ..scoring.reply_check import check_reply
from ..types import FrozenPrompt, Item, Judge, JudgeReply, JudgeRequest, JudgeSettings
from .cost import estimate_request_tokens
from .pacing import Gate


class Cancelled(Exception):
    """The run was cancelled while this call waited to retry."""


def build_request(
    prompt: FrozenPrompt,
    item: Item,
    settings: JudgeSettings,
    mode: str,
    n: int | None = None,
    seed: int | None = None,
) -> JudgeRequest:
    """The request for one item: logprobs mode asks for top logprobs, sampling mode for n replies."""
    logprobs = mode == "logprobs"
    return JudgeRequest(
        messages=prompts.messages(prompt, item),
        model=settings.model,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        logprobs=logprobs,
        top_logprobs=settings.top_logprobs if logprobs else 0,
        n=settings.n if n is None else n,
        seed=settings.seed if seed is None else seed,
        assistant_prefix=prompts.form_line(prompt),
        ratings=tuple(prompt.dimension.scale.points),
        reasoning_effort=settings.reasoning_effort,
        prefix_key=prefix_key(prompt, item),
    )


def prefix_key(prompt: FrozenPrompt, item: Item) -> str:
    """A short key shared by the requests whose prompts share a prefix: the prompt's id and the item's inputs
    before the judged one (its source document), the grouping feed.shared_prefix_first sends together."""
    digest = hashlib.sha256(prompt.id.encode("utf-8"))
    for name in prompt.dimension.inputs[:-1]:  # sha256 of the texts, no JSON: it is on every request's path
        digest.update(b"\x00" + item.fields.get(name, "").encode("utf-8", "surrogatepass"))
    return "geval-" + digest.hexdigest()[:16]


def context_problem(request: JudgeRequest, window: int | None) -> ContextLengthError | None:
    """Why a request cannot fit in a judge's context of `window` tokens (estimated), or None when it fits."""
    if window is None:
        return None
    needed = estimate_request_tokens(request.messages) + request.max_tokens
    if needed <= window:
        return None
    return ContextLengthError(
        f"the item's prompt is about {needed - request.max_tokens} tokens; with max_tokens="
        f"{request.max_tokens} that is over the judge's context of {window} tokens: shorten "
        "the item's text or use a judge with a longer context"
    )


def server_id(base_url: str | None, provider: str) -> str:
    """Who answers: a base URL as scheme://host[:port]/path (no credentials, query or trailing slash,
    host in lower case), or the provider's name for its own API."""
    if not base_url or not base_url.strip():
        return provider
    parts = urlsplit(base_url.strip())
    host = parts.netloc.rpartition("@")[2].lower()  # user:key@ never reaches the cache (nor its key)
    return f"{parts.scheme.lower()}://{host}{parts.path.rstrip('/')}"


def probe_key(settings: JudgeSettings) -> str:
    """The library setting that holds a judge's probes: provider, model and server."""
    return (
        f"judge_probe:{settings.provider}:{settings.model}@{server_id(settings.base_url, settings.provider)}"
    )


def cache_key(request: JudgeRequest, provider: str, server: str, replica: int = 0) -> str:
    """sha256 of the canonical JSON of everything that decides the answer, the server included.

    `server` comes from `server_id`: the same model name behind another URL may be another model (or
    another quantisation), so its replies are never replayed for this one. The replica index keeps
    separate requests for the samples of one item (batch files) apart.
    """
    payload: dict[str, Any] = {
        "provider": provider,
        "server": server,
        "model": request.model,
        "messages": list(request.messages),
        "options": {
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "logprobs": request.logprobs,
            "top_logprobs": request.top_logprobs,
            "n": request.n,
            "seed": request.seed,
            "assistant_prefix": request.assistant_prefix,
            "ratings": list(request.ratings),
            # Only when set, so cache entries made before the setting existed still answer.
            **({"reasoning_effort": request.reasoning_effort} if request.reasoning_effort else {}),
        },
        "replica": replica,
    }
    return prompts.canonical_hash(payload)


def backoff_delay(attempt: int, base: float, cap: float, retry_after: float | None) -> float:
    """Seconds to wait before retry number `attempt` (1-based).

    Retry-After wins when the server sent one (plus up to 10% so waiting clients do not return in
    lockstep; a wait above the cap never gets here: see `too_long`); otherwise exponential backoff
    with full jitter, capped.
    """
    if retry_after is not None and retry_after >= 0:
        return min(cap, retry_after * random.uniform(1.0, 1.1))
    return random.uniform(0.0, min(cap, base * 2 ** (attempt - 1)))


def too_long(exc: RetryableJudgeError, cap: float) -> RetryLaterError | None:
    """The error that stops the run when the judge asks to wait longer than the run may pause."""
    if exc.retry_after is None or exc.retry_after <= cap:
        return None
    until = time.strftime("%H:%M:%S", time.localtime(time.time() + exc.retry_after))
    return RetryLaterError(
        f"the judge asked to wait {exc.retry_after:.0f} s (until {until}) before the next "
        f"request, longer than the {cap:.0f} s a run pauses ({exc}); run the same command "
        "again then, or allow a longer pause",
        attempts=exc.attempts,
        status=exc.status,
    )


def call_with_retries(
    judge: Judge,
    request: JudgeRequest,
    max_attempts: int = 5,
    cancel: threading.Event | None = None,
    base: float = 0.5,
    cap: float = 30.0,
    gate: Gate | None = None,
    tokens: int = 0,
) -> tuple[JudgeReply, int, float]:
    """judge.judge(request), retried on RetryableJudgeError: (reply, attempts, seconds).

    Runs in a worker thread. Every attempt passes the `gate` (calls in flight, rpm/tpm) and leaves it
    before any backoff. The last retryable error and any other JudgeError propagate with the attempt
    count in `attempts`; anything else a judge raises becomes a JudgeError naming it. A set `cancel`
    ends the waits.
    """
    start = time.perf_counter()
    for attempt in range(1, max_attempts + 1):
        if (cancel is not None and cancel.is_set()) or (gate is not None and not gate.enter(tokens, cancel)):
            raise Cancelled()
        try:
            reply = _attempt(judge, request, attempt, gate)
            return reply, attempt, time.perf_counter() - start
        except RetryableJudgeError as exc:
            stop = too_long(exc, cap)
            if stop is not None:
                raise stop from exc
            if attempt >= max_attempts:
                raise
            delay = backoff_delay(attempt, base, cap, exc.retry_after)
            if cancel is not None and cancel.wait(delay):
                raise Cancelled() from exc
            if cancel is None:
                time.sleep(delay)
    raise AssertionError("unreachable: max_attempts must be at least 1")


def _attempt(judge: Judge, request: JudgeRequest, attempt: int, gate: Gate | None) -> JudgeReply:
    """One call through the gate, every failure a JudgeError carrying the attempt number."""
    throttled = False
    try:
        reply = judge.judge(request)
        check_reply(reply, request.ratings)  # impossible log-probabilities: ask again, never score them
        return reply
    except JudgeError as exc:
        exc.attempts = attempt
        throttled = exc.status == 429
        raise
    except Exception as exc:  # a judge adapter's bug must cost one item, not the run
        raise JudgeError(f"{type(exc).__name__}: {exc}", attempts=attempt) from exc
    finally:
        if gate is not None:
            gate.leave(throttled)
