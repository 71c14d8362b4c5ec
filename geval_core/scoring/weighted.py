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
    """The integer a token spells (" 3", "3", "▁3" -> 3; "-1" -> -1), or None: ASCII digits, one leading minus."""
    text = _strip(token)
    digits = text[1:] if text.startswith("-") else text
    return int(text) if digits.isascii() and digits.isdigit() else None


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


def weighted_score(
    top_logprobs: Iterable[TopLogprob | Alternative], scale: Scale, renormalize: bool = True
) -> WeightedScore:
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


def _spellings(scale: Scale) -> dict[str, int]:
    """Each allowed rating's text ("-2" ... "10") -> the rating."""
    return {str(r): r for r in scale.points}


def _extends(text: str, spellings: dict[str, int]) -> bool:
    """Whether `text` is a proper prefix of an allowed rating ("-" of "-1", "1" of "10")."""
    return any(spelled != text and spelled.startswith(text) for spelled in spellings)


def _starts_number(positions: Sequence[Position], i: int) -> bool:
    """A digit, or a minus followed by a digit (in the same token or the next one): never a bullet's dash."""
    text = _strip(positions[i].token)
    if text[:1].isascii() and text[:1].isdigit():
        return True
    if text == "-" and i + 1 < len(positions):
        following = _strip(positions[i + 1].token)[:1]
        return following.isascii() and following.isdigit()
    return text[:1] == "-" and text[1:2].isascii() and text[1:2].isdigit()


def _find_index(positions: Sequence[Position], scale: Scale) -> int | None:
    start = answer_start(positions)
    if start is None:
        return None  # still thinking when the reply stopped: whatever digit is in there is no rating
    for i in range(start, len(positions)):
        if _starts_number(positions, i):  # "٣" or "²" is not a rating the scale can hold
            return i
    # A primed judge may put most mass on a word yet still rate at the first position.
    for i in range(start, len(positions)):
        if any(
            rating_of(t) in scale or _extends(_strip(t), _spellings(scale))
            for t in _alternatives(positions[i])
        ):
            return i
    return None


@dataclass
class _Paths:
    """What the token paths from the rating position spell: p(rating), and the mass no path resolves."""

    ratings: dict[int, float]
    unresolved: float = 0.0  # e.g. a "-" alternative whose continuation the API does not show
    undecided: float = 0.0  # a "1" alternative that may begin "10" (the tokenizer shows no whole "10")
    cut_off: bool = False  # the reply ends inside a rating ("1" of "10", or "-")


def _stripped(position: Position) -> dict[str, float]:
    probs: dict[str, float] = {}
    for token, logprob in _alternatives(position).items():
        key = _strip(token)
        probs[key] = probs.get(key, 0.0) + math.exp(min(logprob, 0.0))  # rounding can put a logprob above 0
    return probs


def _walk(
    positions: Sequence[Position],
    i: int,
    prefix: str,
    mass: float,
    spellings: dict[str, int],
    whole: bool,
    paths: _Paths,
) -> None:
    """Spread `mass` (the probability of the text `prefix` before position i) over the ratings it can become.

    The API lists the top alternatives at each position, conditioned on the tokens actually chosen before it:
    the chosen path is followed as far as it goes; the other branches end where the list does.
    """
    probs, chosen = _stripped(positions[i]), _strip(positions[i].token)
    for key, p in probs.items():
        text, share = prefix + key, mass * p
        piece = key.isascii() and key.isdigit() if prefix else (rating_of(key) is not None or key == "-")
        if not piece:  # a word, a space, a newline: the number ended (or never began) before it
            if prefix in spellings:
                paths.ratings[spellings[prefix]] += share
            continue
        if text in spellings and not _extends(text, spellings):
            paths.ratings[spellings[text]] += share
        elif _extends(text, spellings) and key == chosen and i + 1 < len(positions):
            _walk(positions, i + 1, text, share, spellings, whole, paths)
        elif text in spellings:  # a rating that might go on ("1" of "10"), its continuation not shown
            paths.ratings[spellings[text]] += share
            if key == chosen:
                paths.cut_off = True
            elif not whole:
                paths.undecided += share
        elif _extends(text, spellings):
            paths.unresolved += share
            paths.cut_off = paths.cut_off or key == chosen
    if prefix:  # what the list leaves out after a prefix: the end of a rating when the prefix is one
        rest = mass * max(0.0, 1.0 - sum(probs.values()))
        if prefix in spellings:
            paths.ratings[spellings[prefix]] += rest
        else:
            paths.unresolved += rest


def _combine(positions: Sequence[Position], i: int, scale: Scale) -> tuple[dict[int, float], bool, float]:
    """p(rating) from position i, the ambiguous flag, and the probability the paths could not resolve."""
    spellings = _spellings(scale)
    first = _stripped(positions[i])
    whole = any(len(k) > 1 and k in spellings and not k.startswith("-") for k in first)  # "10" is one token
    paths = _Paths(dict.fromkeys(scale.points, 0.0))
    _walk(positions, i, "", 1.0, spellings, whole, paths)
    ambiguous = paths.cut_off or paths.undecided >= AMBIGUOUS_MASS or paths.unresolved >= AMBIGUOUS_MASS
    return paths.ratings, ambiguous, paths.unresolved


def position_score(
    positions: Sequence[Position], scale: Scale, renormalize: bool = True
) -> tuple[WeightedScore, int | None, bool]:
    """Weighted score of one reply's token list: (score, index of the rating position, ambiguous).

    The rating position is the first generated token that starts a number (a digit, or a minus before a
    digit); failing that, the first position whose alternatives include an allowed rating or the start of
    one (a primed judge); None if there is neither. A rating spelled over several tokens ("-", "1"; "1",
    "0") is read along the reply's tokens; `ambiguous` is set when that cannot be decided (the reply stops
    inside a rating, a "1" alternative of another reply carries mass and the tokenizer shows no whole "10",
    or a branch the API does not show holds mass). Tokens inside a <think> block are skipped.
    """
    index = _find_index(positions, scale)
    if index is None:
        return weighted_score((), scale, renormalize), None, False
    probs, ambiguous, _ = _combine(positions, index, scale)
    alts = [(str(r), math.log(p)) for r, p in probs.items() if p > 0.0]
    return weighted_score(alts, scale, renormalize), index, ambiguous


# ---- sampling ------------------------------------------------------------------------------------


def parse_reply(text: str) -> float | None:
    """Strict parse: the number a reply starts with ("4", " 3.5 - good"), else None ("Score: 4", "4th").

    A reasoning model's <think> block is skipped first; a reply that never closes it has no rating.
    """
    final = final_text(text)
    if final is None:
        return None
    match = _NUMBER.match(final)
    if not match:
        return None
    after = final[match.end() : match.end() + 1]
    if after and (
        after.isalnum() or after == "_" or (after == "." and final[match.end() + 1 :][:1].isdigit())
    ):
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
    return SampledScore(
        _reduce(values, reducer), distribution, len(values), len(texts) - len(values), len(counts) > 1, values
    )


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
        return ItemScore(
            None,
            None,
            None,
            None,
            dict.fromkeys(scale.points, 0.0),
            0.0,
            None,
            texts,
            0,
            len(texts),
            False,
            "logprobs",
            False,
        )
    k = len(scored)
    dist = {r: sum(w.distribution[r] for w, _ in scored) / k for r in scale.points}
    tops = [w.top_rating for w, _ in scored]
    scores = [w.score for w, _ in scored if w.score is not None]  # every one: unscored choices are left out
    raw_scores = [w.raw_score for w, _ in scored if w.raw_score is not None]  # None only beside a None score
    return ItemScore(
        score=statistics.fmean(scores),
        raw_score=statistics.fmean(raw_scores),
        top_rating=tops[0],
        first_rating=None,
        distribution=dist,
        valid_mass=statistics.fmean(w.valid_mass for w, _ in scored),
        parsed_share=None,
        replies=texts,
        parsed=k,
        unparsed=len(texts) - k,
        ambiguous=any(a for _, a in scored),
        mode="logprobs",
        differs=len(set(tops)) > 1,
    )


def _sampling_item(reply: JudgeReply, scale: Scale, reducer: str) -> ItemScore:
    texts = reply.texts
    sampled = sampled_score(texts, scale, reducer)
    # Shares per allowed rating for display; a decimal reply counts at its nearest point (halves up).
    dist = dict.fromkeys(scale.points, 0.0)
    for value, share in sampled.distribution.items():
        dist[min(max(math.floor(value + 0.5), scale.min), scale.max)] += share
    first = sampled.values[0] if sampled.values else None
    return ItemScore(
        sampled.score,
        None,
        None,
        first,
        dist,
        None,
        sampled.parsed / len(texts) if texts else 0.0,
        texts,
        sampled.parsed,
        sampled.unparsed,
        False,
        "sampling",
        sampled.differs,
    )


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
                "use sampling mode (n replies at a non-zero temperature) or mode 'auto'"
            )
        return _logprobs_item(reply, scale)
    if mode == "sampling":
        return _sampling_item(reply, scale, reducer)
    raise ValueError(f"mode must be logprobs, sampling or auto, got {mode!r}")
