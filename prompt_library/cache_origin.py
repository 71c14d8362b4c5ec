"""Whether a judge-cache entry is the reply its origin judgment was scored from, in all that judgment keeps.

An entry's hash is unkeyed: anyone who can write the file can recompute it after an edit. The judgment an
entry names is row-hashed and covered by its run's digest (and by a signature), so an entry is replayed only
when it reproduces that judgment: the same texts, model version and token counts, and in logprobs mode the
same rating distribution, valid mass and counts scored again from its log-probabilities. Sampling scores
read the texts alone, so for them the texts and usage are the whole content.
"""

from __future__ import annotations

import math
from typing import Any

from geval_core.errors import GEvalError
from geval_core.scoring import score_reply
from geval_core.types import JudgeReply, Scale

from .base import loads

# The columns of an origin judgment the comparison reads, and its prompt's stored dimension (for the scale).
ORIGIN_SQL = """
SELECT j.replies, j.model_version, j.input_tokens, j.output_tokens, j.fallback, j.mode, j.distribution,
  j.valid_mass, j.ambiguous, j.parsed, j.unparsed, j.error, r.prompt_id, p.dimension
FROM judgments j LEFT JOIN runs r ON r.id = j.run_id LEFT JOIN prompts p ON p.id = r.prompt_id
WHERE j.run_id = ? AND j.item_id = ? ORDER BY j.attempt DESC
"""
ORIGIN_COLUMNS = (
    "replies",
    "model_version",
    "input_tokens",
    "output_tokens",
    "fallback",
    "mode",
    "distribution",
    "valid_mass",
    "ambiguous",
    "parsed",
    "unparsed",
    "error",
    "prompt_id",
    "dimension",
)


def reply_problem(reply: Any, row: dict[str, Any], scale_of: Any) -> str | None:
    """What of a cached reply differs from a stored judgment's record of it (None: nothing does).

    `scale_of(row)` gives the scale of the judgment's prompt (read only for a logprobs judgment).
    """
    if row["error"] is not None:  # only a scored judgment is cached: an errored one vouches for nothing
        return "its origin judgment is an error"
    try:
        parsed = JudgeReply.from_dict(reply)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return "the reply cannot be read"
    if parsed.texts != loads(row["replies"], []):
        return "its texts differ"
    if row["model_version"] is not None and parsed.model_version != row["model_version"]:
        return "its model version differs"
    if not _tokens_agree(parsed, row):
        return "its token counts differ"
    if row["mode"] == "logprobs":
        return _logprobs_problem(parsed, row, scale_of(row))
    return None


def _tokens_agree(reply: JudgeReply, row: dict[str, Any]) -> bool:
    """A judgment's tokens are its reply's usage; after an auto fallback they also hold the refused logprobs
    request's (never cached), so there the reply's own usage can only be less."""
    spent = (reply.usage.input_tokens, reply.usage.output_tokens)
    stored = (row["input_tokens"] or 0, row["output_tokens"] or 0)
    if row["fallback"]:
        return spent[0] <= stored[0] and spent[1] <= stored[1]
    return spent == stored


def _logprobs_problem(reply: JudgeReply, row: dict[str, Any], scale: Scale | None) -> str | None:
    """Score the reply's log-probabilities again and compare with what the judgment stored."""
    if scale is None:
        return "its origin judgment's prompt cannot be read"
    try:
        scored = score_reply(reply, scale, "logprobs")
    except (GEvalError, KeyError, TypeError, ValueError, IndexError):
        return "its log-probabilities cannot be scored"
    stored = {int(k): float(v) for k, v in loads(row["distribution"], {}).items()}
    if not (_same(scored.distribution, stored) and _close(scored.valid_mass, row["valid_mass"])):
        return "its log-probabilities differ (they score another distribution)"
    if (scored.parsed, scored.unparsed, scored.ambiguous) != (
        row["parsed"],
        row["unparsed"],
        bool(row["ambiguous"]),
    ):
        return "its log-probabilities differ (they give other rating positions)"
    return None


def _same(one: dict[int, float], other: dict[int, float]) -> bool:
    return all(_close(one.get(k, 0.0), other.get(k, 0.0)) for k in set(one) | set(other))


def _close(a: float | None, b: float | None) -> bool:
    # Tolerant only of float summation order: a forged probability moves these far more than 1e-9.
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
