"""Replies of reasoning models served by compatible servers (DeepSeek-R1, Qwen3): the rating is read after
the <think> block, in sampling mode from the text and in logprobs mode from the tokens; hand-built replies."""

from __future__ import annotations

import math

import pytest

from geval_core.scoring.weighted import (
    final_text,
    parse_reply,
    position_score,
    sampled_score,
    score_reply,
)
from geval_core.types import Choice, JudgeReply, Position, Scale, TopLogprob

FIVE, TEN = Scale(1, 5), Scale(1, 10)


def pos(token: str, *alternatives: tuple[str, float]) -> Position:
    """A position whose chosen token has the first alternative's probability (1 without alternatives)."""
    top = tuple(TopLogprob(t, math.log(p)) for t, p in alternatives)
    return Position(token, top[0].logprob if top else 0.0, top)


def tokens(*texts: str) -> list[Position]:
    return [pos(t) for t in texts]


# ---- sampling: the text after the closing tag -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("<think>\nThe summary repeats 2 facts and has 3 errors.\n</think>\n\n4", 4),
        ("<think>1. read 2. compare</think>3", 3),
        ("  <think>hmm</think>  5 - well structured", 5),
        ("Okay, step 1: the summary is short.\n</think>\n\n2", 2),  # the template opened the block
        ("4", 4),  # no block: unchanged
    ],
)
def test_sampling_reads_the_rating_after_the_think_block(text, value):
    assert parse_reply(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "<think>\nThe rating is 4 because",  # cut off while thinking: the 4 is no rating
        "<think>",
        "<think>5</think>",  # nothing after the block
        "<think>hmm</think>The rating is 4",  # strict as ever after the block
    ],
)
def test_sampling_finds_no_rating_in_an_unclosed_or_empty_answer(text):
    assert parse_reply(text) is None


def test_final_text_and_the_sampled_score_count_unclosed_replies_as_unparsed():
    assert final_text("<think>a</think>\n3") == "\n3" and final_text("<think>a 3") is None
    assert final_text("plain 3") == "plain 3"
    s = sampled_score(["<think>x 1</think>4", "<think>y</think> 2", "<think>still 5"], FIVE)
    assert (s.score, s.parsed, s.unparsed, s.values) == (3.0, 2, 1, [4, 2])


# ---- logprobs: the rating position after the closing tag ------------------------------------------


def test_logprobs_skips_digits_inside_the_think_block():
    positions = [
        *tokens("<think>", "\n", "Step", " 1", ":", " read", ".", " I", " give", " 2", "</think>", "\n\n"),
        pos("4", ("4", 0.7), ("3", 0.2), ("The", 0.1)),
    ]
    assert position_score(positions, FIVE)[1:] == (12, False)
    weighted, index, _ = position_score(positions, FIVE)
    assert index == 12
    assert weighted.score == pytest.approx((4 * 0.7 + 3 * 0.2) / 0.9)
    assert weighted.valid_mass == pytest.approx(0.9)


def test_logprobs_handles_a_closing_tag_split_over_tokens_and_a_template_opened_block():
    split = [
        *tokens("<", "think", ">", "3", " ok", "</", "think", ">", "\n"),
        pos("5", ("5", 0.6), ("4", 0.4)),
    ]
    assert position_score(split, FIVE)[1:] == (9, False)
    assert position_score(split, FIVE)[0].score == pytest.approx(5 * 0.6 + 4 * 0.4)
    opened = [*tokens("1", ".", " read", "\n", "</think>", "\n"), pos("2", ("2", 0.5), ("1", 0.5))]
    assert position_score(opened, FIVE)[1:] == (6, False)
    assert position_score(opened, FIVE)[0].score == pytest.approx(1.5)


def test_logprobs_unclosed_think_block_has_no_rating_position():
    positions = [*tokens("<think>", "\n", "I", " would", " say"), pos("4", ("4", 0.9), ("3", 0.1))]
    assert position_score(positions, FIVE)[1:] == (None, False)
    assert position_score(positions, FIVE)[0].score is None
    ended = tokens("<think>", "4", "</think>")  # the block closes and the reply ends: nothing to score
    assert position_score(ended, FIVE)[1:] == (None, False)


def test_logprobs_joins_a_split_ten_after_the_think_block():
    positions = [
        *tokens("<think>", " 10", " maybe", "</think>"),
        pos("1", ("1", 0.8), ("9", 0.2)),
        pos("0", ("0", 1.0)),
    ]
    weighted, index, ambiguous = position_score(positions, TEN)
    assert (index, ambiguous) == (4, False)
    assert weighted.score == pytest.approx(10 * 0.8 + 9 * 0.2)


def test_score_reply_in_both_modes_with_hand_built_r1_replies():
    think = tokens("<think>", "The", " summary", " rates", " 1", "</think>", "\n\n")
    rated = Choice("<think>The summary rates 1</think>\n\n3", (*think, pos("3", ("3", 0.5), ("4", 0.5))))
    unclosed = Choice(
        "<think>The summary rates 1", tuple(tokens("<think>", "The", " summary", " rates", " 1"))
    )
    reply = JudgeReply((rated, unclosed), "deepseek-r1")
    scored = score_reply(reply, FIVE, "logprobs")
    assert (scored.score, scored.parsed, scored.unparsed) == (pytest.approx(3.5), 1, 1)
    sampled = score_reply(reply, FIVE, "sampling")
    assert (sampled.score, sampled.parsed, sampled.unparsed) == (3, 1, 1)


def test_generated_steps_leave_the_thinking_out():
    from geval_core.errors import JudgeError
    from geval_core.prompts.steps import generate_steps
    from geval_core.providers.scripted import ScriptedJudge
    from tests.runner_helpers import dimension

    class Thinker(ScriptedJudge):
        def __init__(self, text):
            super().__init__()
            self.text = text

        def judge(self, request):
            return JudgeReply((Choice(self.text),), "thinker-1")

    thought = (
        "<think>1. Guess the answer. 2. Skip reading.</think>\n1. Read the summary.\n2. Check the order."
    )
    steps, version = generate_steps(dimension(), Thinker(thought))
    assert steps == ["Read the summary.", "Check the order."] and version == "thinker-1"
    with pytest.raises(JudgeError, match="inside its <think> block"):
        generate_steps(dimension(), Thinker("<think>1. Read it. 2. Think more"))
