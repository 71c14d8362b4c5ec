"""A scripted judge for fast unit and AppTest tests: no model, fully predictable replies.

The product registers no provider for it: the tests' plugin (tests/scripted_app_judge.py) does.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

from ..types import Choice, JudgeReply, JudgeRequest, Position, TopLogprob, Usage

Distribution = dict[str, float]  # token -> probability at the rating position


def default_script(request: JudgeRequest) -> Distribution:
    """A distribution that depends on the prompt text, so different items get different scores."""
    ratings = request.ratings or (1, 2, 3, 4, 5)
    prompt = "".join(m["content"] for m in request.messages)
    digest = hashlib.sha256(prompt.encode()).digest()
    weights = [1 + digest[i % len(digest)] for i in range(len(ratings))]
    total = sum(weights) / 0.9  # leave 10% on a non-rating token
    dist = {str(r): w / total for r, w in zip(ratings, weights, strict=True)}
    dist["The"] = 0.1
    return dist


class ScriptedJudge:
    """Answers from a function of the request; records every request it saw."""

    provider = "scripted"
    primes = False

    def __init__(
        self, script: Callable[[JudgeRequest], Distribution] | None = None, model_version: str = "scripted-1"
    ) -> None:
        self.script = script or default_script
        self.model_version = model_version
        self.requests: list[JudgeRequest] = []

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Reply with the scripted distribution's top token at the rating position."""
        self.requests.append(request)
        dist = self.script(request)
        ranked = sorted(dist.items(), key=lambda kv: -kv[1])
        top = tuple(
            TopLogprob(tok, math.log(p)) for tok, p in ranked[: max(request.top_logprobs, 1)] if p > 0
        )
        best_token, best_p = ranked[0]
        position = Position(best_token, math.log(best_p), top if request.logprobs else ())
        choices = tuple(
            Choice(best_token, (position,) if request.logprobs else None) for _ in range(request.n)
        )
        prompt_tokens = sum(len(m["content"].split()) for m in request.messages)
        return JudgeReply(
            choices,
            self.model_version,
            Usage(prompt_tokens, request.n),
            0.0,
            {"scripted": True, "distribution": dist},
        )
