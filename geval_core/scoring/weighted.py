"""G-Eval scores from a judge's reply: the probability-weighted score (Eq. 1) and the sampled score.

Logprobs mode reads the top alternatives at the rating position and weights every allowed rating
by its probability. Sampling mode parses n replies strictly and reduces them (mean by default).
Nothing here knows about providers or storage; `score_reply` is the one entry point the runner uses.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..errors import LogprobsUnavailableError
from ..judgment import ItemScore
from ..types import JudgeReply, Position, Scale, TopLogprob
from .think import MARKERS as _MARKERS
from .think import answer_start, final_text

REDUCERS = ("mean", "median", "mode", "first")
# An alternative that could begin a longer rating (the "1" of "10") counts as undecidable only when it
# carries at least this much probability; below it the effect on the score is negligible.
AMBIGUOUS_MASS = 0.01
_NUMBER = re.compile(r"\s*([+-]?[0-9]+(?:\.[0-9]+)?)")  # ASCII digits only: strict

Alternative = tuple[str, float]


def _strip(token: str) -> str:
    return token.strip().strip(_MARKERS).strip()


def rating_of(token: str) -> int | None:
    """The integer a token stands for (" 3", "3", "▁3" -> 3), or None if it is not all digits."""
    text = _strip(token)
    return int(text) if text.isascii() and text.isdigit() else None


@dataclass(frozen=True)
class WeightedScore:
    """The probability-weighted score at one rating position."""

    score: float | None  # renormalised when renormalize=True, else the raw sum
    raw_score: float | None  # sum of p(r)*r without renormalising
    distribution: dict[int, float]  # every allowed rating
    raw_distribution: dict[int, float]
    valid_mass: float  # sum of p over the allowed ratings
    top_rating: int | None  # the allowed rating with the highest probability


def _pairs(top_logprobs: Iterable[TopLogprob | Alternative]) -> dict[str, float]:
    """Token -> logprob; a token listed twice is one alternative reported twice, so keep the larger."""
    best: dict[str, float] = {}
    for alt in top_logprobs:
        token, logprob = (alt.token, alt.logprob) if isinstance(alt, TopLogprob) else alt
        logprob = float(logprob)
        if math.isnan(logprob):
            continue
        best[token] = max(logprob, best.get(token, -math.inf))
    return best


def weighted_score(top_logprobs: Iterable[TopLogprob | Alternative], scale: Scale,
                   renormalize: bool = True) -> WeightedScore:
    """Eq. 1 of G-Eval: sum of p(r)*r over the allowed ratings at the rating position."""
    raw = {r: 0.0 for r in scale.points}
    for token, logprob in _pairs(top_logprobs).items():
        rating = rating_of(token)
        if rating in raw:
            # Rounding in the API can give logprobs a hair above 0; p cannot exceed 1.
            raw[rating] += math.exp(min(logprob, 0.0))
    mass = sum(raw.values())
    if mass <= 0.0:
        zeros = dict.fromkeys(scale.points, 0.0)
        return WeightedScore(None, None, zeros, dict(zeros), 0.0, None)
    raw_score = sum(r * p for r, p in raw.items())
    renormalised = {r: p / mass for r, p in raw.items()}
    score = _clip(raw_score / mass, scale) if renormalize else raw_score
    top = max(raw, key=lambda r: (raw[r], -r))  # ties go to the lower rating, deterministically
    return WeightedScore(score, raw_score, renormalised if renormalize else dict(raw), raw, mass, top)


def _clip(value: float, scale: Scale) -> float:
    # Float division can land a hair outside the scale (5*p/p); the score is a convex combination.
    return min(max(value, float(scale.min)), float(scale.max))


# ---- the rating position -------------------------------------------------------------------------

def _alternatives(position: Position) -> dict[str, float]:
    """The chosen token and its top alternatives (the chosen one may be missing from `top`)."""
    return _pairs([*position.top, (position.token, position.logprob)])


def _prefixes(scale: Scale) -> set[str]:
    """Proper prefixes of the allowed ratings: {"1"} for 1-10, where "1" may begin "10"."""
    return {str(r)[:k] for r in scale.points if r >= 0 for k in range(1, len(str(r)))}


def _find_index(positions: Sequence[Position], scale: Scale) -> int | None:
    start = answer_start(positions)
    if start is None:
        return None  # still thinking when the reply stopped: whatever digit is in there is no rating
    for i in range(start, len(positions)):
        first = _strip(positions[i].token)[:1]
        if first.isascii() and first.isdigit():  # "٣" or "²" is not a rating the scale can hold
            return i
    # A primed judge may put most mass on a word yet still rate at the first position.
    for i in range(start, len(positions)):
        if any(rating_of(t) in scale for t in _alternatives(positions[i])):
            return i
    return None


def _combine(positions: Sequence[Position], i: int, scale: Scale) -> tuple[dict[str, float], bool]:
    """Rating text -> probability at position i, joining split multi-digit ratings; and the ambiguous flag."""
    probs: dict[str, float] = {}
    for token, logprob in _alternatives(positions[i]).items():
        key = _strip(token)
        probs[key] = probs.get(key, 0.0) + math.exp(min(logprob, 0.0))
    prefixes = _prefixes(scale)
    if not prefixes:
        return probs, False
    whole = any(len(k) > 1 and rating_of(k) in scale for k in probs)  # tokenizer has "10" as one token
    chosen = _strip(positions[i].token)
    undecided = sum(p for k, p in probs.items() if k in prefixes and k != chosen)
    ambiguous = not whole and undecided >= AMBIGUOUS_MASS
    if chosen not in prefixes:
        return probs, ambiguous
    if i + 1 >= len(positions):
        return probs, True  # the reply stops after "1": cut off or finished, and p("10") is unknown
    # The next position is conditioned on the chosen prefix, so it splits that prefix's mass.
    p_prefix = probs.pop(chosen)
    digits: dict[str, float] = {}
    for token, logprob in _alternatives(positions[i + 1]).items():
        key = _strip(token)
        if key.isascii() and key.isdigit():
            digits[key] = digits.get(key, 0.0) + math.exp(min(logprob, 0.0))
    for key, p in digits.items():
        probs[chosen + key] = probs.get(chosen + key, 0.0) + p_prefix * p
        ambiguous = ambiguous or (chosen + key in prefixes and p_prefix * p >= AMBIGUOUS_MASS)
    rest = max(0.0, 1.0 - sum(digits.values()))
    probs[chosen] = probs.get(chosen, 0.0) + p_prefix * rest
    return probs, ambiguous


def find_rating_position(positions: Sequence[Position], scale: Scale) -> tuple[int | None, bool]:
    """Index of the rating position and whether its rating is ambiguous (multi-digit scales).

    The rating position is the first generated token that starts a number; failing that, the first
    position whose alternatives include an allowed rating (a primed judge); None if there is neither.
    A rating split over two tokens ("1", "0") is joined with the next position; the flag is set when
    that cannot be decided (the reply stops after "1", or a "1" alternative of a non-"1" reply carries
    mass and the tokenizer shows no whole "10" token). Ratings needing three or more tokens are flagged.
    Tokens inside a reasoning model's <think> block are skipped; an unclosed block gives no position.
    """
    index = _find_index(positions, scale)
    if index is None:
        return None, False
    return index, _combine(positions, index, scale)[1]


def position_score(positions: Sequence[Position], scale: Scale,
                   renormalize: bool = True) -> tuple[WeightedScore, int | None, bool]:
    """Weighted score of one reply's token list: (score, rating position, ambiguous)."""
    index = _find_index(positions, scale)
    if index is None:
        return weighted_score((), scale, renormalize), None, False
    probs, ambiguous = _combine(positions, index, scale)
    alts = [(k, math.log(p)) for k, p in probs.items() if p > 0.0]
    return weighted_score(alts, scale, renormalize), index, ambiguous


# ---- sampling ------------------------------------------------------------------------------------

def parse_reply(text: str) -> float | None:
    """Strict parse: the number a reply starts with ("4", " 3.5 - good"), else None ("Score: 4", "4th").

    A reasoning model's <think> block is skipped first; a reply that never closes it has no rating.
    """
    text = final_text(text)
    if text is None:
        return None
    match = _NUMBER.match(text)
    if not match:
        return None
    after = text[match.end():match.end() + 1]
    if after and (after.isalnum() or after == "_" or (after == "." and text[match.end() + 1:][:1].isdigit())):
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


@dataclass(frozen=True)
class SampledScore:
    """The reduced score of n sampled replies."""

    score: float | None
    distribution: dict[float, float]  # parsed value -> share of the parsed replies
    parsed: int
    unparsed: int  # replies that did not parse or fell outside the scale
    differs: bool  # the parsed values are not all the same
    values: list[float] = field(default_factory=list)  # parsed values, reply order


def _reduce(values: list[float], reducer: str) -> float:
    if reducer == "mean":
        return statistics.fmean(values)
    if reducer == "median":
        return float(statistics.median(values))
    if reducer == "mode":
        return float(statistics.multimode(values)[0])  # ties: the value that came first
    return float(values[0])


def sampled_score(replies: Iterable[str], scale: Scale, reducer: str = "mean") -> SampledScore:
    """Parse every reply strictly, drop unparsed and out-of-scale values, reduce the rest."""
    if reducer not in REDUCERS:
        raise ValueError(f"reducer must be one of {', '.join(REDUCERS)}, got {reducer!r}")
    texts = list(replies)
    values = [v for v in map(parse_reply, texts) if v is not None and scale.min <= v <= scale.max]
    if not values:
        return SampledScore(None, {}, 0, len(texts), False, [])
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    distribution = {v: counts[v] / len(values) for v in sorted(counts)}
    return SampledScore(_reduce(values, reducer), distribution, len(values), len(texts) - len(values),
                        len(counts) > 1, values)


# ---- one reply -> one item score -----------------------------------------------------------------



def _has_positions(reply: JudgeReply) -> bool:
    return any(c.positions for c in reply.choices)


def _logprobs_item(reply: JudgeReply, scale: Scale) -> ItemScore:
    """Mean over the choices that have a rating position (n=1: that choice's weighted score)."""
    scored = []
    for choice in reply.choices:
        if choice.positions:
            weighted, _, ambiguous = position_score(choice.positions, scale)
            if weighted.score is not None:
                scored.append((weighted, ambiguous))
    texts = reply.texts
    if not scored:
        return ItemScore(None, None, None, None, dict.fromkeys(scale.points, 0.0), 0.0, None, texts, 0,
                         len(texts), False, "logprobs", False)
    k = len(scored)
    dist = {r: sum(w.distribution[r] for w, _ in scored) / k for r in scale.points}
    tops = [w.top_rating for w, _ in scored]
    return ItemScore(
        score=statistics.fmean(w.score for w, _ in scored),
        raw_score=statistics.fmean(w.raw_score for w, _ in scored),
        top_rating=tops[0], first_rating=None, distribution=dist,
        valid_mass=statistics.fmean(w.valid_mass for w, _ in scored), parsed_share=None,
        replies=texts, parsed=k, unparsed=len(texts) - k,
        ambiguous=any(a for _, a in scored), mode="logprobs", differs=len(set(tops)) > 1,
    )


def _sampling_item(reply: JudgeReply, scale: Scale, reducer: str) -> ItemScore:
    texts = reply.texts
    sampled = sampled_score(texts, scale, reducer)
    # Shares per allowed rating for display; a decimal reply counts at its nearest point (halves up).
    dist = dict.fromkeys(scale.points, 0.0)
    for value, share in sampled.distribution.items():
        dist[min(max(math.floor(value + 0.5), scale.min), scale.max)] += share
    first = sampled.values[0] if sampled.values else None
    return ItemScore(sampled.score, None, None, first, dist, None, sampled.parsed / len(texts) if texts else 0.0,
                     texts, sampled.parsed, sampled.unparsed, False, "sampling", sampled.differs)


def score_reply(reply: JudgeReply, scale: Scale, mode: str = "logprobs", reducer: str = "mean") -> ItemScore:
    """Score one judge reply. mode: logprobs | sampling | auto (logprobs when the reply has them).

    In logprobs mode with several choices, the score is the mean of the weighted scores of the choices
    that have a rating position (their distributions are averaged the same way).
    """
    if mode == "auto":
        mode = "logprobs" if _has_positions(reply) else "sampling"
    if mode == "logprobs":
        if not _has_positions(reply):
            raise LogprobsUnavailableError(
                f"the judge ({reply.model_version}) returned no log-probabilities; "
                "use sampling mode (n replies at a non-zero temperature) or mode 'auto'")
        return _logprobs_item(reply, scale)
    if mode == "sampling":
        return _sampling_item(reply, scale, reducer)
    raise ValueError(f"mode must be logprobs, sampling or auto, got {mode!r}")
