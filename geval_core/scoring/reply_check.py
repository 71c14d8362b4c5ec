"""Replies that cannot be: log-probabilities no real distribution has, refused before anything is scored.

Scoring is lenient on purpose (it skips NaN and clips a logprob a hair above 0), so a reply whose numbers
are impossible would otherwise come out as a plausible-looking score. The runner checks every reply right
after the judge returns (inside its retry loop) and `score_item` does the same, so such a reply is asked
again and, if it stays impossible, the item carries an error naming what the judge sent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..errors import InvalidReplyError
from ..types import JudgeReply, Position
from . import rating_of

# APIs round log-probabilities; a value this close above 0 (or a mass this close above 1) is rounding.
ROUNDING = 1e-6

__all__ = ["ROUNDING", "check_reply", "reply_problem"]


def check_reply(reply: JudgeReply, ratings: Iterable[int] = ()) -> None:
    """InvalidReplyError naming the first impossible log-probability (or rating mass) in the reply."""
    problem = reply_problem(reply, ratings)
    if problem is not None:
        raise InvalidReplyError(f"the judge sent impossible log-probabilities: {problem}")


def reply_problem(reply: JudgeReply, ratings: Iterable[int] = ()) -> str | None:
    """Where and what is impossible ("position 1: log-probability nan for token '3'"), or None."""
    allowed = frozenset(ratings)
    several = len(reply.choices) > 1
    for c, choice in enumerate(reply.choices, 1):
        for p, position in enumerate(choice.positions or (), 1):
            problem = _position_problem(position, allowed)
            if problem is not None:
                return f"{f'choice {c}, ' if several else ''}position {p}: {problem}"
    return None


def _position_problem(position: Position, allowed: frozenset[int]) -> str | None:
    """A NaN, infinite or positive log-probability, or more than all the probability on the ratings."""
    best: dict[str, float] = {}
    for token, logprob in [(position.token, position.logprob), *((t.token, t.logprob) for t in position.top)]:
        value = float(logprob)
        if math.isnan(value) or math.isinf(value) or value > ROUNDING:
            return f"log-probability {value} for token {token!r}"
        # The chosen token is usually listed among the alternatives too: one token, counted once.
        best[token] = max(value, best.get(token, -math.inf))
    if allowed:
        mass = sum(math.exp(lp) for token, lp in best.items() if rating_of(token) in allowed)
        if mass > 1.0 + ROUNDING:
            return f"the allowed ratings carry probability {mass:.6g} in all (more than 1)"
    return None
