"""Scores from a judge's reply: Eq. 1 over the rating's log-probabilities, sampled replies, think blocks and
the sanity check of a reply's numbers. Pure: nothing here knows about providers or storage."""

from ..judgment import ItemScore
from .weighted import (
    REDUCERS,
    SampledScore,
    WeightedScore,
    parse_reply,
    position_score,
    rating_of,
    sampled_score,
    score_reply,
    weighted_score,
)

__all__ = [
    "REDUCERS",
    "ItemScore",
    "SampledScore",
    "WeightedScore",
    "parse_reply",
    "position_score",
    "rating_of",
    "sampled_score",
    "score_reply",
    "weighted_score",
]
