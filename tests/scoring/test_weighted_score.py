"""Weighted and sampled G-Eval scores, the rating position, multi-digit ratings, score_reply."""

from __future__ import annotations

import math

import pytest

from geval_core import score_reply, weighted_score
from geval_core.errors import LogprobsUnavailableError
from geval_core.providers.scripted import ScriptedJudge
from geval_core.scoring.weighted import (
    parse_reply,
    position_score,
    rating_of,
    sampled_score,
)
from geval_core.types import Choice, JudgeReply, JudgeRequest, Position, Scale, TopLogprob

L = math.log
FIVE, TEN = Scale(1, 5), Scale(1, 10)
SEED = [("3", L(0.6)), ("4", L(0.3)), ("2", L(0.05)), ("The", L(0.05))]


def pos(token: str, top: dict[str, float]) -> Position:
    """A position whose chosen token is `token`, with alternatives given as probabilities."""
    return Position(
        token, L(top[token]) if top.get(token) else -5.0, tuple(TopLogprob(t, L(p)) for t, p in top.items())
    )


# ---- weighted_score ------------------------------------------------------------------------------


def test_seed_example_renormalised_raw_and_valid_mass():
    w = weighted_score(SEED, FIVE)
    assert w.score == pytest.approx(3.1 / 0.95) and round(w.score, 2) == 3.26
    assert w.raw_score == pytest.approx(3.10) and w.valid_mass == pytest.approx(0.95)
    assert w.distribution == pytest.approx({1: 0.0, 2: 0.05 / 0.95, 3: 0.6 / 0.95, 4: 0.3 / 0.95, 5: 0.0})
    assert w.raw_distribution == pytest.approx({1: 0.0, 2: 0.05, 3: 0.6, 4: 0.3, 5: 0.0})
    assert w.top_rating == 3


def test_seed_example_without_renormalising_gives_the_raw_sum():
    w = weighted_score(SEED, FIVE, renormalize=False)
    assert w.score == pytest.approx(3.10) and w.raw_score == pytest.approx(3.10)
    assert w.distribution == pytest.approx({1: 0.0, 2: 0.05, 3: 0.6, 4: 0.3, 5: 0.0})


def test_top_logprob_objects_and_pairs_give_the_same_score():
    objects = [TopLogprob(t, lp) for t, lp in SEED]
    assert weighted_score(objects, FIVE).score == pytest.approx(weighted_score(SEED, FIVE).score)


def test_spellings_of_one_rating_are_summed():
    w = weighted_score(
        [(" 4", L(0.2)), ("4", L(0.2)), ("▁4", L(0.1)), ("Ġ2", L(0.25)), ("2\n", L(0.25))], FIVE
    )
    assert w.raw_distribution == pytest.approx({1: 0, 2: 0.5, 3: 0, 4: 0.5, 5: 0})
    assert w.score == pytest.approx(3.0)
    assert w.top_rating == 2  # equal mass on 2 and 4: the lower rating, deterministically


def test_logprob_of_exactly_zero_is_a_valid_certain_rating():
    w = weighted_score([("5", 0.0)], FIVE)
    assert (w.score, w.raw_score, w.valid_mass, w.top_rating) == (5.0, 5.0, 1.0, 5)


def test_no_valid_mass_gives_null_never_zero():
    w = weighted_score([("The", L(0.7)), ("7", L(0.2)), ("0", L(0.1)), ("3", -math.inf)], FIVE)
    assert w.score is None and w.raw_score is None and w.top_rating is None
    assert w.valid_mass == 0.0 and w.distribution == dict.fromkeys(range(1, 6), 0.0)
    assert weighted_score([], FIVE).score is None


def test_ratings_outside_the_scale_are_not_valid():
    w = weighted_score([("3", L(0.5)), ("6", L(0.4)), ("0", L(0.1))], FIVE)
    assert w.score == 3.0 and w.valid_mass == pytest.approx(0.5) and w.raw_score == pytest.approx(1.5)


def test_a_token_reported_twice_counts_once():
    assert weighted_score([("3", L(0.5)), ("3", L(0.5)), ("4", L(0.5))], FIVE).valid_mass == pytest.approx(
        1.0
    )


@pytest.mark.parametrize(
    ("token", "rating"),
    [
        ("3", 3),
        (" 3", 3),
        ("▁3", 3),
        ("Ġ10", 10),
        ("Ċ2", 2),
        ("05", 5),
        ("3.", None),
        ("three", None),
        ("", None),
        ("٣", None),
        ("-1", -1),
        ("-", None),
        ("--1", None),
        ("- 1", None),
        ("3/5", None),
    ],
)
def test_rating_of(token, rating):
    assert rating_of(token) == rating


# ---- rating position and multi-digit ratings -----------------------------------------------------


def test_rating_position_is_the_first_token_that_starts_a_number():
    positions = [
        pos("-", {"-": 0.9}),
        pos(" Coherence", {" Coherence": 1.0}),
        pos(":", {":": 1.0}),
        pos(" 4", {" 4": 0.7, " 3": 0.3}),
    ]
    assert position_score(positions, FIVE)[1:] == (3, False)
    score, index, ambiguous = position_score(positions, FIVE)
    assert (index, ambiguous) == (3, False) and score.score == pytest.approx(3.7)


def test_primed_reply_starting_with_a_word_uses_the_first_position_with_ratings():
    positions = [pos("The", {"The": 0.5, "4": 0.3, "2": 0.2}), pos(" summary", {" summary": 1.0})]
    assert position_score(positions, FIVE)[1:] == (0, False)
    assert position_score(positions, FIVE)[0].score == pytest.approx((1.2 + 0.4) / 0.5)


def test_reply_without_any_rating_has_no_position():
    positions = [pos("Good", {"Good": 0.9, "Bad": 0.1})]
    assert position_score(positions, FIVE)[1:] == (None, False)
    assert position_score(positions, FIVE)[0].score is None


def test_ten_as_one_token():
    positions = [pos("10", {"10": 0.7, "9": 0.2, "8": 0.1})]
    assert position_score(positions, TEN)[1:] == (0, False)
    assert position_score(positions, TEN)[0].score == pytest.approx(9.6)


def test_split_ten_is_joined_with_the_next_position():
    positions = [pos("1", {"1": 0.8, "9": 0.2}), pos("0", {"0": 0.9, ".": 0.1})]
    w, index, ambiguous = position_score(positions, TEN)
    assert (index, ambiguous) == (0, False)
    # p(10) = 0.8 * 0.9, p(1) = 0.8 * 0.1, p(9) = 0.2
    assert w.raw_distribution[10] == pytest.approx(0.72) and w.raw_distribution[1] == pytest.approx(0.08)
    assert w.score == pytest.approx(0.72 * 10 + 0.08 + 0.2 * 9)


def test_one_followed_by_punctuation_keeps_a_little_mass_on_ten():
    positions = [pos("1", {"1": 0.6, "2": 0.4}), pos(".", {".": 0.95, "0": 0.05})]
    w, _, ambiguous = position_score(positions, TEN)
    assert not ambiguous
    assert w.raw_distribution == pytest.approx(
        {**dict.fromkeys(range(1, 11), 0.0), 1: 0.57, 2: 0.4, 10: 0.03}
    )


def test_reply_ending_after_one_is_ambiguous():
    positions = [pos("1", {"1": 0.9, "2": 0.1})]
    assert position_score(positions, TEN)[1:] == (0, True)
    assert position_score(positions, TEN)[0].raw_distribution[1] == pytest.approx(0.9)


def test_split_tokenizer_one_alternative_of_another_reply_is_ambiguous():
    positions = [pos("8", {"8": 0.6, "1": 0.3, "7": 0.1}), pos(".", {".": 1.0})]
    assert position_score(positions, TEN)[1:] == (0, True)
    # A tokenizer that has "10" as a token shows "1" means one: decidable.
    whole = [pos("8", {"8": 0.6, "1": 0.2, "10": 0.2}), pos(".", {".": 1.0})]
    assert position_score(whole, TEN)[1:] == (0, False)
    # Negligible "1" mass is not worth a flag.
    tiny = [pos("8", {"8": 0.995, "1": 0.005}), pos(".", {".": 1.0})]
    assert position_score(tiny, TEN)[1:] == (0, False)


def test_single_digit_scales_are_never_ambiguous():
    positions = [pos("1", {"1": 0.9, "2": 0.1})]
    assert position_score(positions, FIVE)[1:] == (0, False)


# ---- sampling ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        (" 3.5 - mostly fine", 3.5),
        ("2.", 2),
        ("5/5", 5),
        ("4.0", 4),
        ("Score: 4", None),
        ("4th", None),
        ("3.5x", None),
        ("", None),
        ("- Coherence: 3", None),
        ("10", 10),
        ("-1", -1),
        ("٣", None),
        ("\n 4\n", 4),
    ],
)
def test_parse_reply_is_strict(text, value):
    assert parse_reply(text) == value


REPLIES = ["3", " 4", "4.5", "Score: 2", "7", "", "4th", "2."]


@pytest.mark.parametrize(
    ("reducer", "expected"),
    [
        ("mean", (3 + 4 + 4.5 + 2) / 4),
        ("median", 3.5),
        ("mode", 3.0),
        ("first", 3.0),
    ],
)
def test_sampled_score_reducers(reducer, expected):
    s = sampled_score(REPLIES, FIVE, reducer)
    assert s.score == pytest.approx(expected)
    assert (s.parsed, s.unparsed, s.differs, s.values) == (4, 4, True, [3, 4, 4.5, 2])
    assert s.distribution == {2: 0.25, 3: 0.25, 4: 0.25, 4.5: 0.25}


def test_sampled_mode_takes_the_most_common_value_and_the_first_on_a_tie():
    assert sampled_score(["2", "4", "4", "5"], FIVE, "mode").score == 4.0
    assert sampled_score(["4", "2", "2", "4"], FIVE, "mode").score == 4.0


def test_sampled_score_without_parsed_replies_is_null():
    s = sampled_score(["great", "9", "Score: 3"], FIVE)
    assert s.score is None and (s.parsed, s.unparsed, s.differs) == (0, 3, False)


def test_sampled_identical_replies_do_not_differ():
    s = sampled_score(["4", "4 ", " 4"], FIVE)
    assert s.score == 4.0 and not s.differs and s.distribution == {4: 1.0}


def test_unknown_reducer_is_refused():
    with pytest.raises(ValueError, match="reducer"):
        sampled_score(["3"], FIVE, "max")


# ---- score_reply ---------------------------------------------------------------------------------


def request(logprobs: bool = True, n: int = 1) -> JudgeRequest:
    return JudgeRequest(
        ({"role": "user", "content": "rate"},), "m", logprobs=logprobs, n=n, ratings=(1, 2, 3, 4, 5)
    )


def test_score_reply_logprobs_from_a_scripted_judge():
    judge = ScriptedJudge(lambda r: {"3": 0.6, "4": 0.3, "2": 0.05, "The": 0.05})
    item = score_reply(judge.judge(request()), FIVE, "logprobs")
    assert item.score == pytest.approx(3.1 / 0.95) and item.raw_score == pytest.approx(3.1)
    assert item.top_rating == 3 and item.valid_mass == pytest.approx(0.95) and item.parsed_share is None
    assert (item.mode, item.parsed, item.unparsed, item.replies, item.ambiguous) == (
        "logprobs",
        1,
        0,
        ["3"],
        False,
    )
    assert set(item.to_dict()) == {
        "score",
        "raw_score",
        "top_rating",
        "first_rating",
        "distribution",
        "valid_mass",
        "parsed_share",
        "replies",
        "parsed",
        "unparsed",
        "ambiguous",
        "mode",
        "differs",
    }
    assert item.to_dict()["distribution"][3] == pytest.approx(0.6 / 0.95)


def test_score_reply_logprobs_without_positions_raises():
    judge = ScriptedJudge(lambda r: {"4": 1.0})
    with pytest.raises(LogprobsUnavailableError, match="sampling"):
        score_reply(judge.judge(request(logprobs=False)), FIVE, "logprobs")


def test_score_reply_auto_falls_back_to_sampling():
    reply = JudgeReply((Choice("4"), Choice("5"), Choice("no idea")), "m")
    item = score_reply(reply, FIVE, "auto")
    assert item.mode == "sampling" and item.score == 4.5 and item.raw_score is None
    assert (item.parsed, item.unparsed, item.first_rating, item.differs) == (2, 1, 4, True)
    assert item.parsed_share == pytest.approx(2 / 3) and item.valid_mass is None and item.top_rating is None
    assert item.distribution == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.5, 5: 0.5}


def test_score_reply_sampling_median_and_decimal_binning():
    reply = JudgeReply((Choice("3.5"), Choice("2"), Choice("5")), "m")
    item = score_reply(reply, FIVE, "sampling", reducer="median")
    assert item.score == 3.5 and item.first_rating == 3.5
    assert item.distribution == pytest.approx({1: 0, 2: 1 / 3, 3: 0, 4: 1 / 3, 5: 1 / 3})


def test_score_reply_logprobs_with_several_choices_averages_the_scored_ones():
    a = Choice("4", (pos("4", {"4": 1.0}),))
    b = Choice("2", (pos("2", {"2": 0.5, "3": 0.5}),))
    unscored = Choice("nothing", (pos("nothing", {"nothing": 1.0}),))
    item = score_reply(JudgeReply((a, b, unscored, Choice("5")), "m"), FIVE, "logprobs")
    assert item.score == pytest.approx((4.0 + 2.5) / 2)
    assert item.distribution == pytest.approx({1: 0, 2: 0.25, 3: 0.25, 4: 0.5, 5: 0})
    assert (item.parsed, item.unparsed, item.top_rating, item.differs) == (2, 2, 4, True)


def test_score_reply_logprobs_with_no_valid_mass_is_null_and_unparsed():
    reply = JudgeReply((Choice("Good", (pos("Good", {"Good": 1.0}),)),), "m")
    item = score_reply(reply, FIVE, "logprobs")
    assert item.score is None and item.top_rating is None and (item.parsed, item.unparsed) == (0, 1)


def test_score_reply_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        score_reply(JudgeReply((Choice("3"),), "m"), FIVE, "guess")


def test_a_non_ascii_digit_does_not_start_the_rating():
    # "²" and "٣" pass str.isdigit but are no rating: the rating position is the next one.
    positions = [pos("²", {"²": 0.9, "x": 0.1}), pos("٣", {"٣": 1.0}), pos(" 4", {" 4": 0.6, " 3": 0.4})]
    assert position_score(positions, FIVE)[1:] == (2, False)
    assert position_score(positions, FIVE)[0].score == pytest.approx(0.6 * 4 + 0.4 * 3)
