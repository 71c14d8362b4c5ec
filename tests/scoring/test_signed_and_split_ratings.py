"""Ratings with signs and several digits read along the reply's tokens: "-", "1" is -1 and "1", "0" is 10,
on -2..2, -1..1, 0..1, 0..10, 1..10 and -10..10, for judges whose tokenizer splits them and judges with whole
tokens; each expected distribution is worked out by hand from the listed probabilities."""

from __future__ import annotations

import math

import pytest

from geval_core.scoring.weighted import position_score, score_reply
from geval_core.types import Choice, JudgeReply, Position, Scale, TopLogprob, Usage


def pos(chosen: str, alternatives: dict[str, float]) -> Position:
    """One generated token and the API's top alternatives at it (probabilities, logged here)."""
    return Position(
        chosen,
        math.log(alternatives[chosen]),
        tuple(TopLogprob(t, math.log(p)) for t, p in alternatives.items()),
    )


def scored(positions: list[Position], scale: Scale):
    weighted, index, ambiguous = position_score(positions, scale)
    return weighted, index, ambiguous


def expected_score(distribution: dict[int, float]) -> float:
    mass = sum(distribution.values())
    return sum(r * p for r, p in distribution.items()) / mass


def test_the_worked_example_on_minus_two_to_two():
    # First position "-" 0.6, "1" 0.3, "2" 0.1; after "-": "1" 0.7, "2" 0.3.
    weighted, index, ambiguous = scored(
        [pos("-", {"-": 0.6, "1": 0.3, "2": 0.1}), pos("1", {"1": 0.7, "2": 0.3}), pos("\n", {"\n": 1.0})],
        Scale(-2, 2),
    )
    assert index == 0 and not ambiguous
    assert weighted.raw_distribution == pytest.approx({-2: 0.18, -1: 0.42, 0: 0.0, 1: 0.3, 2: 0.1})
    assert weighted.score == pytest.approx(-0.28) and weighted.valid_mass == pytest.approx(1.0)


def test_a_judge_that_writes_minus_then_one_scores_minus_one_not_plus_one():
    """The sign flip: "-" then "1" with full confidence once scored +1.30 with valid mass 1.0."""
    positions = [pos("-", {"-": 0.98, "1": 0.02}), pos("1", {"1": 0.99, "2": 0.01})]
    weighted, _, _ = scored(positions, Scale(-2, 2))
    assert weighted.distribution == pytest.approx({-2: 0.0098, -1: 0.9702, 0: 0.0, 1: 0.02, 2: 0.0})
    assert weighted.score == pytest.approx(-2 * 0.0098 - 0.9702 + 0.02)
    reply = JudgeReply((Choice("-1", tuple(positions)),), "m", Usage(1, 2))
    assert score_reply(reply, Scale(-2, 2), "sampling").score == -1  # sampling mode always read signs


@pytest.mark.parametrize(
    ("scale", "alternatives", "distribution"),
    [
        (Scale(-1, 1), {"-1": 0.5, "0": 0.3, "1": 0.2}, {-1: 0.5, 0: 0.3, 1: 0.2}),  # whole signed tokens
        (Scale(0, 1), {"1": 0.75, "0": 0.2, "The": 0.05}, {0: 0.2, 1: 0.75}),
        (
            Scale(1, 10),
            {"9": 0.5, "10": 0.4, "1": 0.1},
            {1: 0.1, 9: 0.5, 10: 0.4},
        ),  # "10" is one token: "1" is 1
    ],
)
def test_single_token_judges(scale, alternatives, distribution):
    weighted, _, ambiguous = scored([pos(max(alternatives, key=alternatives.get), alternatives)], scale)
    full = {r: distribution.get(r, 0.0) for r in scale.points}
    assert weighted.raw_distribution == pytest.approx(full) and not ambiguous
    assert weighted.score == pytest.approx(expected_score(full))
    assert weighted.valid_mass == pytest.approx(sum(distribution.values()))


def test_a_split_ten_on_zero_to_ten():
    # "1" 0.5 (chosen), "7" 0.3, "The" 0.2; after "1": "0" 0.6, a newline 0.4 (the rating was 1).
    weighted, _, ambiguous = scored(
        [pos("1", {"1": 0.5, "7": 0.3, "The": 0.2}), pos("0", {"0": 0.6, "\n": 0.4})], Scale(0, 10)
    )
    assert {r: p for r, p in weighted.raw_distribution.items() if p} == pytest.approx(
        {1: 0.2, 7: 0.3, 10: 0.3}
    )
    assert weighted.valid_mass == pytest.approx(0.8) and weighted.score == pytest.approx(
        (0.2 + 2.1 + 3.0) / 0.8
    )
    assert not ambiguous


def test_a_split_ten_on_one_to_ten_with_a_one_alternative_is_flagged():
    # The reply is "9"; its "1" alternative may begin "10" and the tokenizer shows no whole "10".
    weighted, _, ambiguous = scored([pos("9", {"9": 0.9, "1": 0.1})], Scale(1, 10))
    assert weighted.raw_distribution[1] == pytest.approx(0.1) and ambiguous


def test_three_tokens_minus_ten_on_minus_ten_to_ten():
    # "-" 0.8 then "1" 0.9 then "0" 0.5: p(-10) = 0.36, p(-1) = 0.8*0.9*0.5 = 0.36, p(-2) from "2" 0.1 = 0.08.
    positions = [
        pos("-", {"-": 0.8, "5": 0.2}),
        pos("1", {"1": 0.9, "2": 0.1}),
        pos("0", {"0": 0.5, ".": 0.5}),
    ]
    weighted, _, ambiguous = scored(positions, Scale(-10, 10))
    assert {r: p for r, p in weighted.raw_distribution.items() if p} == pytest.approx(
        {-10: 0.36, -1: 0.36, -2: 0.08, 5: 0.2}
    )
    assert not ambiguous and weighted.valid_mass == pytest.approx(1.0)


def test_a_minus_alternative_whose_continuation_is_not_shown_is_counted_not_dropped():
    # The reply is "1"; 0.2 went to "-", and the API shows nothing after a token it did not choose.
    weighted, _, ambiguous = scored([pos("1", {"1": 0.7, "-": 0.2, "0": 0.1})], Scale(-2, 2))
    assert weighted.raw_distribution == pytest.approx({-2: 0.0, -1: 0.0, 0: 0.1, 1: 0.7, 2: 0.0})
    assert weighted.valid_mass == pytest.approx(0.8) and ambiguous  # 0.2 unresolved: flagged, never scored


def test_a_reply_that_stops_inside_a_rating_is_flagged():
    assert position_score([pos("-", {"-": 0.9, "1": 0.1})], Scale(-2, 2))[1:] == (0, True)
    assert position_score([pos("1", {"1": 0.9, "9": 0.1})], Scale(1, 10))[1:] == (0, True)


def test_a_bullet_dash_is_not_a_minus_sign():
    positions = [
        pos("-", {"-": 1.0}),
        pos(" Coherence", {" Coherence": 1.0}),
        pos(":", {":": 1.0}),
        pos(" -", {" -": 0.7, " 1": 0.3}),
        pos("2", {"2": 1.0}),
    ]
    weighted, index, _ = scored(positions, Scale(-2, 2))
    assert index == 3
    assert weighted.raw_distribution == pytest.approx({-2: 0.7, -1: 0.0, 0: 0.0, 1: 0.3, 2: 0.0})


def test_probabilities_never_exceed_what_the_paths_carry():
    """However the alternatives are drawn, the allowed ratings hold at most the probability of the paths."""
    import random

    rng = random.Random(5)
    pieces = ["-", "1", "2", "0", "5", "10", "-1", "The", "\n", " "]
    for _ in range(3000):
        scale = rng.choice([Scale(-2, 2), Scale(-10, 10), Scale(0, 10), Scale(1, 10), Scale(1, 5)])
        positions = []
        for _ in range(rng.randint(1, 3)):
            keys = rng.sample(pieces, rng.randint(1, 5))
            weights = [rng.random() for _ in keys]
            total = sum(weights) / rng.uniform(0.6, 1.0)  # up to 40 % left out of the list
            positions.append(pos(keys[0], {k: w / total for k, w in zip(keys, weights, strict=True)}))
        weighted, _, _ = scored(positions, scale)
        assert 0.0 <= weighted.valid_mass <= 1.0 + 1e-9
        if weighted.score is not None:
            assert scale.min - 1e-9 <= weighted.score <= scale.max + 1e-9
