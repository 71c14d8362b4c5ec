"""Property tests (hypothesis) for the weighted and sampled scores."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geval_core.scoring.weighted import parse_reply, position_score, sampled_score, weighted_score
from geval_core.types import Position, Scale, TopLogprob

MARKERS = ("", " ", "▁", "Ġ")
WORDS = ("The", " summary", "Score", ".", "\n", "five", "3.", "-")


@st.composite
def scales(draw) -> Scale:
    low = draw(st.integers(0, 3))
    return Scale(low, low + draw(st.integers(1, 9)))


@st.composite
def alternatives(draw) -> list[tuple[str, float]]:
    """Distinct tokens (digits with tokenizer markers, or words) whose probabilities sum to at most 1."""
    tokens = draw(
        st.lists(
            st.one_of(
                st.builds(lambda m, d: f"{m}{d}", st.sampled_from(MARKERS), st.integers(0, 14)),
                st.sampled_from(WORDS),
            ),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    weights = draw(st.lists(st.floats(0.001, 1.0), min_size=len(tokens), max_size=len(tokens)))
    total = draw(st.floats(0.01, 1.0)) / sum(weights)
    return [(t, math.log(w * total)) for t, w in zip(tokens, weights, strict=True)]


@settings(max_examples=300, deadline=None)
@given(alternatives(), scales(), st.booleans())
def test_score_is_inside_the_scale_or_null(alts, scale, renormalize):
    w = weighted_score(alts, scale, renormalize)
    if w.valid_mass == 0:
        assert w.score is None and w.raw_score is None and w.top_rating is None
    else:
        assert scale.min <= w.score <= scale.max if renormalize else 0 <= w.score <= scale.max
        assert w.top_rating in scale
        assert sum(w.distribution.values()) == pytest.approx(1.0 if renormalize else w.valid_mass)
    assert set(w.distribution) == set(scale.points)


@settings(max_examples=300, deadline=None)
@given(alternatives(), scales(), st.lists(st.tuples(st.sampled_from(WORDS), st.floats(-30, 0)), max_size=5))
def test_renormalised_score_ignores_added_non_rating_alternatives(alts, scale, extra):
    seen = {t for t, _ in alts}
    added = alts + [(t, lp) for t, lp in extra if t not in seen]
    before, after = weighted_score(alts, scale), weighted_score(added, scale)
    assert (before.score is None) == (after.score is None)
    if before.score is not None:
        assert after.score == pytest.approx(before.score, rel=1e-12)
        assert after.valid_mass == pytest.approx(before.valid_mass, rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(alternatives(), scales())
def test_raw_is_at_most_renormalised_on_positive_scales(alts, scale):
    w = weighted_score(alts, scale)
    if w.score is not None:
        assert w.raw_score <= w.score + 1e-9
        assert w.raw_score == pytest.approx(w.score * w.valid_mass, rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.data(), alternatives(), scales())
def test_order_of_alternatives_is_irrelevant(data, alts, scale):
    shuffled = data.draw(st.permutations(alts))
    a, b = weighted_score(alts, scale), weighted_score(shuffled, scale)
    assert (a.score is None) == (b.score is None)
    if a.score is not None:
        assert b.score == pytest.approx(a.score, rel=1e-12) and b.top_rating == a.top_rating
        assert b.distribution == pytest.approx(a.distribution, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.001, 1.0), min_size=10, max_size=10), st.floats(0.05, 1.0))
def test_split_ten_scores_like_the_whole_token(weights, p_one_or_ten):
    """A 1-10 distribution told with a "10" token equals the same one told as "1" then "0"."""
    p = [w / sum(weights) for w in weights]  # p[0] = rating 1 ... p[9] = rating 10
    scale = Scale(1, 10)
    whole = weighted_score([(str(r), math.log(p[r - 1])) for r in scale.points], scale)
    head = p[0] + p[9]
    first = Position(
        "1",
        math.log(head),
        tuple(
            [TopLogprob("1", math.log(head))] + [TopLogprob(str(r), math.log(p[r - 1])) for r in range(2, 10)]
        ),
    )
    second = Position(
        "0",
        math.log(p[9] / head),
        (TopLogprob("0", math.log(p[9] / head)), TopLogprob(".", math.log(p[0] / head))),
    )
    split, index, ambiguous = position_score([first, second], scale)
    assert (index, ambiguous) == (0, False)
    assert split.score == pytest.approx(whole.score, rel=1e-9)
    assert split.raw_distribution == pytest.approx(whole.raw_distribution, rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=8),
            st.integers(-3, 12).map(str),
            st.floats(-1, 12, allow_nan=False).map(lambda v: f"{v:.2f}"),
        ),
        max_size=10,
    ),
    scales(),
    st.sampled_from(["mean", "median", "mode", "first"]),
)
def test_sampled_score_is_inside_the_scale_or_null(replies, scale, reducer):
    s = sampled_score(replies, scale, reducer)
    assert s.parsed + s.unparsed == len(replies)
    if s.parsed == 0:
        assert s.score is None
    else:
        assert scale.min <= s.score <= scale.max
        assert sum(s.distribution.values()) == pytest.approx(1.0)
        assert s.differs == (len(set(s.values)) > 1)


@given(st.text(max_size=20))
def test_parse_reply_never_crashes_and_returns_the_leading_number(text):
    value = parse_reply(text)
    if value is not None:
        assert text.lstrip()[:1] in "+-0123456789"
