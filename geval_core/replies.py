"""JudgeReply <-> plain dict, so replies can sit in the library's judge cache as JSON."""

from __future__ import annotations

import json
from typing import Any

from .types import Choice, JudgeReply, Position, TopLogprob, Usage


def _position_to_list(position: Position) -> list[Any]:
    # Compact lists, not dicts: a cached reply with 20 alternatives per position stays small.
    return [position.token, position.logprob, [[t.token, t.logprob] for t in position.top]]


def _position_from_list(data: list[Any]) -> Position:
    token, logprob, top = data
    return Position(token, float(logprob), tuple(TopLogprob(t, float(lp)) for t, lp in top))


def _json_safe(value: Any) -> Any:
    """The value if it survives a JSON round trip, else None (raw payloads are for audit only)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


def reply_to_dict(reply: JudgeReply, keep_raw: bool = False) -> dict[str, Any]:
    """A JSON-ready dict of a reply (the raw provider payload only when keep_raw)."""
    return {
        "choices": [
            {
                "text": c.text,
                "positions": None if c.positions is None else [_position_to_list(p) for p in c.positions],
            }
            for c in reply.choices
        ],
        "model_version": reply.model_version,
        "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
        "latency_s": reply.latency_s,
        "raw": _json_safe(reply.raw) if keep_raw else None,
    }


def reply_from_dict(data: dict[str, Any]) -> JudgeReply:
    """Rebuild a reply from `reply_to_dict` output."""
    choices = tuple(
        Choice(
            c["text"],
            None if c.get("positions") is None else tuple(_position_from_list(p) for p in c["positions"]),
        )
        for c in data["choices"]
    )
    usage = data.get("usage") or {}
    return JudgeReply(
        choices,
        data.get("model_version", ""),
        Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        float(data.get("latency_s", 0.0)),
        data.get("raw"),
    )


def merge_replies(replies: list[JudgeReply]) -> JudgeReply:
    """One reply holding every choice of several (replica requests of one item), usage summed."""
    if len(replies) == 1:
        return replies[0]
    return JudgeReply(
        tuple(c for r in replies for c in r.choices),
        replies[0].model_version,
        Usage(sum(r.usage.input_tokens for r in replies), sum(r.usage.output_tokens for r in replies)),
        sum(r.latency_s for r in replies),
        None,
    )
