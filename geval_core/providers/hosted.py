"""The skeleton every hosted judge shares: ask for n replies, check logprobs, build one JudgeReply.

An adapter (OpenAI, Gemini) only says how to make one call and how to read its response; the loop
that tops up servers ignoring n, the logprobs check, usage, timing and the audit payload live here.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..errors import LogprobsUnavailableError, RetryableJudgeError
from ..types import Choice, JudgeReply, JudgeRequest, Usage
from ..urls import check_base_url
from .common import NO_KEY, gather_choices
from .registry import key_variable


def without_key(reply: JudgeReply, key: str | None) -> JudgeReply:
    """The reply with the key taken out of every text, token and raw field (a server may echo it back)."""
    if not key or key == NO_KEY:
        return reply
    data = reply.to_dict()
    text = json.dumps(data, ensure_ascii=False)
    if key not in text:
        return reply  # the usual case: one search, no copy
    return JudgeReply.from_dict(json.loads(text.replace(json.dumps(key)[1:-1], "[redacted key]")))


class HostedJudge:
    """Base of the API judges; subclasses implement the five `_` hooks below."""

    provider = "hosted"
    primes = False  # a chat API cannot start the assistant turn with given text
    scrubs_answers = False  # True: the subclass takes the key out of each answer's bytes before reading it

    def __init__(self, model: str, api_key: str, base_url: str | None = None) -> None:
        self.model = model
        # Never a key inside the URL, whoever built this judge.
        self.base_url = check_base_url(base_url, key_variable(self.provider))
        self._key = api_key  # kept only to scrub it from error messages
        self.gave_logprobs = False  # this judge has answered with log-probabilities before

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Ask for n replies; a server that returns fewer is asked again until n are in."""
        start = time.perf_counter()
        responses, choices = gather_choices(
            request.n,
            lambda missing, call: self._call(request, missing, call),
            self._choices,
            lambda response: self._nothing(response, request),
        )
        if request.logprobs and not any(c.positions for c in choices):
            if self.gave_logprobs:  # it did before: this one answer lost them, so ask again
                raise RetryableJudgeError(
                    f"model {request.model!r} at {self._where()} sent a reply without "
                    "the log-probabilities its earlier replies had"
                )
            raise LogprobsUnavailableError(
                f"model {request.model!r} at {self._where()} returned no log-probabilities; "
                "use --mode sampling (n replies at a temperature above 0) for this judge"
            )
        self.gave_logprobs |= request.logprobs
        usage = Usage(*map(sum, zip(*(self._usage(r) for r in responses), strict=True)))
        raw = [self._raw(r) for r in responses]
        reply = JudgeReply(
            tuple(choices),
            self._version(responses[0]) or request.model,
            usage,
            time.perf_counter() - start,
            raw[0] if len(raw) == 1 else {"responses": raw},
        )
        return reply if self.scrubs_answers else without_key(reply, self._key)

    # --- hooks ---------------------------------------------------------------------------------------
    def _call(self, request: JudgeRequest, n: int, call: int) -> Any:
        """One API call asking for n replies, every failure mapped onto the workbench's errors."""
        raise NotImplementedError

    def _choices(self, response: Any) -> list[Choice]:
        """The replies in a response, in the neutral shape."""
        raise NotImplementedError

    def _nothing(self, response: Any, request: JudgeRequest) -> str:
        """Why a response holds no reply at all."""
        return f"{self._where()} returned no replies for model {request.model!r}"

    def _usage(self, response: Any) -> tuple[int, ...]:
        """(input tokens, output tokens, of the input those read from the server's cache) of one response."""
        raise NotImplementedError

    def _raw(self, response: Any) -> Any:
        """The response as JSON, for audit."""
        raise NotImplementedError

    def _version(self, response: Any) -> str | None:
        """The model version the API reported."""
        raise NotImplementedError

    def _where(self) -> str:
        """Who answers, for messages."""
        return self.base_url or self.provider
