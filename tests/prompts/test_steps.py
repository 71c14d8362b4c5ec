"""Evaluation-steps generation: parsing judge replies, generation, and the drift check."""

from __future__ import annotations

import pytest
from runner_helpers import dimension

from geval_core.errors import GEvalError, JudgeError
from geval_core.prompts.steps import PRIMER, drift, generate_steps, parse_steps, similarity, steps_prompt
from geval_core.types import Choice, JudgeReply, JudgeRequest, JudgeSettings, Usage

DIM = dimension(
    JudgeSettings(provider="openai", model="gpt-test"),
    name="Relevance",
    definition="Selection of important content from the source.",
    anchors={1: "Misses the main points.", 3: "Some key points.", 5: "Every key point, nothing else."},
    steps=(),
)


class TextJudge:
    """Answers each request with the next scripted text; records the requests."""

    provider = "scripted"

    def __init__(self, *texts: str, primes: bool = False, output_tokens: int = 20) -> None:
        self.texts, self.primes, self.output_tokens = list(texts), primes, output_tokens
        self.requests: list[JudgeRequest] = []

    def judge(self, request: JudgeRequest) -> JudgeReply:
        self.requests.append(request)
        return JudgeReply((Choice(self.texts.pop(0)),), "writer-2024-05-01", Usage(50, self.output_tokens))


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        (
            "1. Read the source.\n2. Read the summary.\n3. Assign a score.",
            ["Read the source.", "Read the summary.", "Assign a score."],
        ),
        (
            "Sure! Here are the steps:\n\n1) Read the source\n2) Compare\n\nThese steps keep it consistent.",
            ["Read the source", "Compare"],
        ),
        (
            "**Step 1:** Read the source carefully.\n**Step 2:** List its key points.\nStep 3: Rate it 1-5.",
            ["Read the source carefully.", "List its key points.", "Rate it 1-5."],
        ),
        ("Evaluation steps:\n- Read it\n- Compare it\n* Rate it", ["Read it", "Compare it", "Rate it"]),
        (
            "1. Read the source. 2. Find the key points. 3. Rate relevance.",
            ["Read the source.", "Find the key points.", "Rate relevance."],
        ),
        (
            "1. Read the source\n   and the summary.\n   - note the topic\n2. Rate.\n1. Read the source\n2. Rate.",
            ["Read the source and the summary. note the topic", "Rate."],
        ),
        (
            "1.\nRead the source\n2. Weigh it on a 1.5 point basis",
            ["Read the source", "Weigh it on a 1.5 point basis"],
        ),
        ("(1) Read.\n(2) **Check** the `facts`.\n(3) Check the facts.", ["Read.", "Check the facts."]),
        (
            "1. Read the source.\n\nThis matters because sources vary.\n\n2. Rate it.",
            ["Read the source.", "Rate it."],
        ),
    ],
)
def test_parse_steps_handles_numbering_bullets_and_stray_prose(text, steps):
    assert parse_steps(text) == steps


@pytest.mark.parametrize("text", ["Just some prose about relevance.", "", "1. \n2. ...", "1. 42\n2. !!"])
def test_parse_steps_refuses_unusable_replies(text):
    with pytest.raises(JudgeError, match="could not find numbered evaluation steps"):
        parse_steps(text)


def test_steps_prompt_carries_the_definition_and_every_anchor():
    (message,) = steps_prompt(DIM)
    assert message["role"] == "user"
    text = message["content"]
    assert "Relevance (1-5) - Selection of important content from the source." in text
    assert "- 5: Every key point, nothing else.\n- 4\n- 3: Some key points." in text
    assert "a document and a summary" in text and "numbered steps" in text


def test_generate_steps_asks_once_and_returns_the_writer_version():
    judge = TextJudge("Steps:\n1. Read the source.\n2. Rate relevance.")
    steps, version = generate_steps(DIM, judge)
    assert steps == ["Read the source.", "Rate relevance."] and version == "writer-2024-05-01"
    (request,) = judge.requests
    assert (request.model, request.logprobs, request.max_tokens, request.n) == ("gpt-test", False, 256, 1)
    assert request.assistant_prefix == PRIMER and request.messages == steps_prompt(DIM)


def test_generate_steps_restores_the_primer_for_priming_judges():
    judge = TextJudge(" Read the source.\n2. Rate relevance.", primes=True)
    assert generate_steps(DIM, judge, model="other", temperature=0.3)[0] == [
        "Read the source.",
        "Rate relevance.",
    ]
    assert judge.requests[0].model == "other" and judge.requests[0].temperature == 0.3


def test_generate_steps_drops_a_step_cut_off_by_max_tokens():
    cut = TextJudge("1. Read the source.\n2. Rate relevance.\n3. Then compare the", output_tokens=16)
    assert generate_steps(DIM, cut, max_tokens=16)[0] == ["Read the source.", "Rate relevance."]
    rambling = TextJudge(
        "1. Read the source.\n2. Rate relevance.\n\nHere is some code: def f", output_tokens=16
    )
    assert generate_steps(DIM, rambling, max_tokens=16)[0] == ["Read the source.", "Rate relevance."]
    whole = TextJudge("1. Read the source.\n2. Rate relevance.", output_tokens=9)
    assert generate_steps(DIM, whole, max_tokens=16)[0] == ["Read the source.", "Rate relevance."]


def test_similarity_is_difflibs_ratio_by_hand():
    assert similarity(["abcd"], ["abcd"]) == 1.0
    assert similarity(["abcd"], ["abce"]) == pytest.approx(2 * 3 / 8)  # 3 matching of 8 characters
    assert similarity(["ab"], ["cd"]) == 0.0
    assert similarity(["ab", "cd"], ["ab"]) == pytest.approx(2 * 2 / 7)  # "ab\ncd" vs "ab"


def test_drift_reports_every_pair_and_the_mean():
    judge = TextJudge("1. abcd", "1. abcd", "1. abce")
    report = drift(DIM, judge, k=3, seed=5)
    assert report.steps == [["abcd"], ["abcd"], ["abce"]]
    assert [(p["a"], p["b"]) for p in report.pairs] == [(0, 1), (0, 2), (1, 2)]
    assert [p["similarity"] for p in report.pairs] == pytest.approx([1.0, 0.75, 0.75])
    assert report.mean_similarity == pytest.approx(2.5 / 3)
    assert [r.seed for r in judge.requests] == [5, 6, 7] and all(r.temperature == 0.7 for r in judge.requests)
    assert report.to_dict()["model_version"] == "writer-2024-05-01" and report.failures == []


def test_drift_reports_each_generation_as_it_ends_failed_ones_too():
    done: list[tuple[int, int]] = []
    drift(
        DIM,
        TextJudge("1. abcd", "no steps here", "1. abcd"),
        k=3,
        on_generation=lambda d, k: done.append((d, k)),
    )
    assert done == [(1, 3), (2, 3), (3, 3)]  # what the Design page's progress counts


def test_drift_counts_unusable_generations_and_needs_two_good_ones():
    report = drift(DIM, TextJudge("1. abcd", "no steps here", "1. abcd"), k=3)
    assert len(report.failures) == 1 and report.mean_similarity == 1.0 and len(report.pairs) == 1
    with pytest.raises(JudgeError, match="only 1 of 2"):
        drift(DIM, TextJudge("1. abcd", "nothing"), k=2)
    with pytest.raises(GEvalError, match="at least 2"):
        drift(DIM, TextJudge(), k=1)


@pytest.mark.slow
def test_generate_steps_with_the_local_model(local_judge):
    dim = dimension(
        definition="How well the summary's sentences follow from one another.",
        anchors={1: "Disconnected.", 5: "One well-ordered account."},
        steps=(),
    )
    steps, version = generate_steps(dim, local_judge, model="smollm2", max_tokens=96)
    assert steps and all(sum(c.isalpha() for c in s) >= 3 for s in steps)
    assert len(set(steps)) == len(steps)
    assert "SmolLM2-135M-Instruct" in version
