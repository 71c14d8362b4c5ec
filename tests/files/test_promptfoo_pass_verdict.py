"""The promptfoo export's pass rule in real promptfoo 0.123.1 when the judge writes a "pass" it was not asked for:
promptfoo ANDs such a verdict with an assertion's own threshold, so the export puts its threshold on an assert-set
(0 without a rule) and the rule alone decides. 12 items, one promptfoo run per rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_promptfoo_real import promptfoo_eval, rated_prompt

from geval_core.providers.exports import export_for_tool

# The judge's 0-1 score for each of 12 items (ratings 1-5 as (r - 1) / 4, and some in between); every reply also
# says "pass": false, unasked.
SCORES = [0.0, 0.25, 0.5, 0.6, 0.625, 0.75, 1.0, 0.0, 0.3333, 0.875, 0.5, 1.0]


def verdicts(body: dict) -> dict[str, float]:
    """The grader's one reply for the item named in its prompt: its score, and an unasked "pass": false."""
    prompt = body["messages"][-1]["content"]
    index = next(i for i in range(len(SCORES)) if f"summary number {i}." in prompt)
    return {json.dumps({"reason": "stated", "score": SCORES[index], "pass": False}): 1.0}


def config_of(assertion_text: str) -> str:
    """A promptfoo config of 12 tests (one per item) sharing the export as defaultTest's one assertion."""
    indented = "".join(
        ("    - " if i == 0 else "      ") + line + "\n" for i, line in enumerate(assertion_text.splitlines())
    )
    tests = "".join(
        f"  - vars:\n      document: 'Document {i}.'\n      summary: 'summary number {i}.'\n"
        for i in range(len(SCORES))
    )
    return (
        "prompts:\n  - '{{ summary }}'\nproviders:\n  - echo\ndefaultTest:\n  assert:\n"
        + indented
        + "tests:\n"
        + tests
    )


def run_items(tmp_path: Path, assertion_text: str) -> list[dict]:
    """promptfoo eval of the 12 items against the loopback grader: one result per item, in item order."""
    _, requests, results = promptfoo_eval(tmp_path, config_of(assertion_text), verdicts)
    assert len(requests) == len(SCORES)  # one grader call per item
    return results


def test_without_a_rule_every_item_passes_though_the_judge_says_pass_false(tmp_path):
    prompt = rated_prompt("gpt-4o-mini-2024-07-18", None)
    text = export_for_tool(prompt, "promptfoo")
    assert "threshold: 0\n" in text and "threshold is 0" in text
    results = run_items(tmp_path, text)
    assert [r["success"] for r in results] == [True] * 12
    assert [r["namedScores"]["Coherence"] for r in results] == SCORES  # the judge's scores, unchanged
    # The llm-rubric itself took the unasked verdict: without the assert-set's threshold every item would fail.
    assert all(r["gradingResult"]["componentResults"][1]["pass"] is False for r in results)


@pytest.mark.parametrize("pass_at", [3.5])
def test_with_a_rule_the_rule_alone_decides(tmp_path, pass_at):
    prompt = rated_prompt("gpt-4o-mini-2024-07-18", None)
    results = run_items(tmp_path, export_for_tool(prompt, "promptfoo", pass_at=pass_at))
    threshold = (pass_at - 1) / 4  # 0.625
    assert [r["success"] for r in results] == [score >= threshold for score in SCORES]
    assert sum(r["success"] for r in results) == 5
