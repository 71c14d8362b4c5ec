"""The DeepEval export of a three-input prompt measured by real DeepEval against a loopback judge: the prompt DeepEval
sends shows the source as Context, never as "Expected Output" (a reference answer), and its score is the judge's.

DeepEval's import pulls a large tree, so it is never a dependency: GEVAL_DEEPEVAL_PYTHON names a Python that has
it (e.g. `python3 -m venv /tmp/deepeval && /tmp/deepeval/bin/pip install deepeval==4.3.1`)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace

import pytest
from faultserver import FaultServer

from geval_core.files.tool_exports import deepeval_fields
from geval_core.prompts import content_hash
from geval_core.providers.exports import export_for_tool
from geval_core.types import Dimension, FrozenPrompt, JudgeSettings, Scale

DEEPEVAL_PYTHON = os.environ.get("GEVAL_DEEPEVAL_PYTHON")
MEASURE = """\
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("metric", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
case = module.make_test_case(**json.loads(sys.argv[2]))
module.metric.measure(case)
print(json.dumps([module.metric.score, module.metric.reason]))
"""


def three_inputs() -> FrozenPrompt:
    """A faithfulness prompt: the question, the source document, the judged answer."""
    dim = Dimension(
        name="Faithfulness",
        definition="Whether the answer keeps to the document.",
        scale=Scale(1, 5),
        anchors={p: f"anchor {p}" for p in range(1, 6)},
        inputs=("question", "document", "answer"),
        steps=("Read the document.", "Check the answer against it."),
        judge=JudgeSettings(provider="openai", model="fault-model-2024-01-01"),
    )
    return FrozenPrompt(content_hash(dim), "faithfulness", 1, dim, "2026-01-01")


def test_no_input_is_mapped_to_expected_output():
    for inputs in [("a", "b"), ("a", "b", "c"), ("a", "b", "c", "d")]:
        prompt = replace(three_inputs(), dimension=replace(three_inputs().dimension, inputs=inputs))
        assert "EXPECTED_OUTPUT" not in deepeval_fields(prompt).values()
    assert deepeval_fields(three_inputs()) == {
        "question": "INPUT",
        "document": "CONTEXT",
        "answer": "ACTUAL_OUTPUT",
    }


@pytest.mark.skipif(not DEEPEVAL_PYTHON, reason="GEVAL_DEEPEVAL_PYTHON (a Python with deepeval) not set")
def test_real_deepeval_shows_the_source_as_context_not_expected_output(tmp_path):
    (tmp_path / "metric.py").write_text(export_for_tool(three_inputs(), "deepeval"), encoding="utf-8")
    (tmp_path / "measure.py").write_text(MEASURE, encoding="utf-8")
    item = {"question": "Who sat?", "document": "The cat sat on the mat.\nIt purred.", "answer": "The cat."}
    verdict = json.dumps({"reason": "keeps to it", "score": 4})
    with FaultServer(distribution={verdict: 1.0}) as judge:
        env = {
            **os.environ,
            "OPENAI_API_KEY": "sk-loopback",
            "OPENAI_BASE_URL": judge.base_url,
            "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
            "HOME": str(tmp_path),
        }
        done = subprocess.run(
            [DEEPEVAL_PYTHON, "measure.py", "metric.py", json.dumps(item)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        bodies = [body for _, body in judge.log]
    assert done.returncode == 0, done.stderr[-3000:]
    score, reason = json.loads(done.stdout.strip().splitlines()[-1])
    assert score == 0.75 and reason == "keeps to it"  # rating 4 on 1-5: (4 - 1) / 4
    [body] = bodies  # the frozen steps are given: one call, the evaluation itself
    content = body["messages"][-1]["content"]
    sent = content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
    assert "Expected Output" not in sent
    assert (
        "Input:\nWho sat? \n\nContext:\n['The cat sat on the mat.\\nIt purred.'] \n\nActual Output:\nThe cat."
        in sent
    )
    assert "Parameters:\nInput, Context, and Actual Output" in sent
