"""Suggested edits: the designer's reply read by hand, the diff and the motivating items, and the embedded local
judge as designer end to end (its suggestions are noise: that it runs and never changes a prompt by itself is
what is tested)."""

from __future__ import annotations

from runner_helpers import dimension

from geval_core.diagnostics.suggest import SUGGEST_VERSION, parse_suggestion, suggest_edits, suggestion_prompt
from geval_core.types import Choice, JudgeReply, JudgeSettings, Usage

DISPUTED = [
    {
        "item_id": "d1-a",
        "human": 1.0,
        "score": 4.2,
        "fields": {"document": "A long article.", "summary": "Jumps."},
    },
    {
        "item_id": "d2-b",
        "human": 5.0,
        "score": 2.1,
        "fields": {"document": "Another.", "summary": "Flows well."},
    },
]


class Designer:
    """A designer model that answers every request with one text, recording the request."""

    provider, primes = "scripted", False

    def __init__(self, text: str) -> None:
        self.text, self.requests = text, []

    def judge(self, request):
        self.requests.append(request)
        return JudgeReply((Choice(self.text),), "designer-1", Usage(10, 20))


def test_a_reply_is_read_line_by_line_and_only_scale_points_count():
    dim = dimension()
    reply = (
        "DEFINITION: How well the sentences hang together.\nANCHOR 5: One clear account.\n"
        "ANCHOR 9: off the scale\nanchor 1 : Fragments.\nREASON: jumps missed (items: d1-a, zz)\n"
    )
    parsed = parse_suggestion(reply, dim)
    assert parsed["definition"] == "How well the sentences hang together."
    assert parsed["anchors"] == {5: "One clear account.", 1: "Fragments."}
    assert parsed["reasons"] == [{"change": "jumps missed", "items": ["d1-a", "zz"]}]
    assert parsed["problem"] is None
    assert parse_suggestion("I think it is fine.", dim)["problem"].startswith(
        "the designer model's reply has no"
    )


def test_suggested_edits_come_as_a_diff_with_the_items_shown_and_change_nothing_stored():
    dim = dimension()
    designer = Designer(
        "DEFINITION: Sentences that follow one another.\nANCHOR 1: No order at all.\n"
        "REASON: people punish jumps (items: d1-a, not-shown)"
    )
    found = suggest_edits(dim, DISPUTED, designer, JudgeSettings(provider="scripted", model="designer-1"))
    assert found["version"] == SUGGEST_VERSION and found["prompt"] == suggestion_prompt(dim, DISPUTED)
    assert designer.requests[0].messages[0]["content"] == found["prompt"]  # the prompt shown is the one sent
    assert (
        "[d1-a] people 1, judge 4.20" in found["prompt"] and "[d2-b] people 5, judge 2.10" in found["prompt"]
    )
    assert f"-Definition: {dim.definition.strip()}" in found["diff"]
    assert "+Definition: Sentences that follow one another." in found["diff"]
    assert any(line.startswith("+") and "No order at all." in line for line in found["diff"])
    assert found["reasons"] == [
        {"change": "people punish jumps", "items": ["d1-a"]}
    ]  # only items it was shown
    assert found["dimension"]["anchors"]["2"] == dim.anchors[2]  # what the reply did not give stays
    assert dim.definition != found["dimension"]["definition"]  # the prompt itself is untouched


def test_the_local_judge_as_designer_end_to_end(local_judge):
    dim = dimension()
    found = suggest_edits(dim, DISPUTED, local_judge, JudgeSettings(provider="local"))
    assert found["model_version"].startswith("SmolLM2")
    assert found["raw"].startswith("DEFINITION:")  # the local judge continues the primed reply
    if found["problem"] is None:
        assert found["diff"] and found["dimension"]["scale"] == dim.to_dict()["scale"]
    else:
        assert found["dimension"] == dim.to_dict()  # nothing read: nothing changed
