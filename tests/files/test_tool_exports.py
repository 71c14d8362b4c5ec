"""Exports other judge tools load (DeepEval, promptfoo, an OpenAI grader, Inspect AI), checked the way each tool reads them,
with hostile names and texts that must stay data; the CLI's --format and the Library page's choices."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from dataclasses import replace

import pytest
from app_support import open_page, use_temp_library
from click.testing import CliRunner
from needs import require_module

from geval_core.cli import cli
from geval_core.files.tool_exports import FORMATS, promptfoo_text, tool_filename
from geval_core.prompts import content_hash
from geval_core.providers.exports import export_for_tool
from geval_core.types import Dimension, FrozenPrompt, JudgeSettings, Scale
from prompt_library import Library

HOSTILE = "Co'he\"rence\n# x {{ evil }} {% raw %}{#\u2028\x85 '''\"\"\" \\ ${x} `id`"
# DeepEval's import pulls a large tree; a test run may point here at a venv that has it (never a dependency).
DEEPEVAL_PYTHON = os.environ.get("GEVAL_DEEPEVAL_PYTHON")


def frozen(name: str = HOSTILE, provider: str = "openai", scale: Scale | None = None) -> FrozenPrompt:
    scale = scale or Scale(1, 5)
    dim = Dimension(
        name=name,
        definition=f"Definition {{{{x}}}} {name}",
        scale=scale,
        anchors={p: f"anchor {p}: {name}" for p in scale.points},
        inputs=("document", "summary"),
        steps=(f"Read the document. {name}", "Check the summary."),
        judge=JudgeSettings(provider=provider, model="gpt-4o-2024-08-06", seed=7),
    )
    return FrozenPrompt(content_hash(dim), "coherence", 2, dim, "2025-01-01")


def test_deepeval_file_compiles_with_the_frozen_steps_definition_rubric_and_params_as_literals():
    prompt = frozen()
    text = export_for_tool(prompt, "deepeval")
    tree = ast.parse(text)  # compiles: nothing in the name or steps escaped a literal
    values = {
        t.targets[0].id: ast.literal_eval(t.value)
        for t in tree.body
        if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name) and t.targets[0].id.isupper()
    }
    assert values["EVALUATION_STEPS"] == list(prompt.dimension.steps)
    assert values["RUBRIC"] == [(p, f"anchor {p}: {HOSTILE}") for p in range(1, 6)]
    assert values["INPUT_FIELDS"] == {"document": "INPUT", "summary": "ACTUAL_OUTPUT"}
    assert values["CONTENT_HASH"] == prompt.id
    assert values["CRITERIA"] == f"{HOSTILE} (1-5) - {prompt.dimension.definition}"
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert any(prompt.id in line for line in comments)
    assert any("cannot reproduce" in line for line in comments)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "GEval"]
    keywords = {k.arg: k.value for k in calls[0].keywords}
    assert ast.literal_eval(keywords["name"]) == HOSTILE
    assert ast.literal_eval(keywords["model"]) == "gpt-4o-2024-08-06"


def test_deepeval_outside_its_rubric_range_and_without_an_openai_judge_says_so():
    text = export_for_tool(frozen("Fluency", provider="local", scale=Scale(0, 20)), "deepeval")
    assert "RUBRIC = []" in text and "model=None" in text
    assert "outside DeepEval's 0-10 rubric ranges" in text and "set model=" in text


@pytest.mark.skipif(not DEEPEVAL_PYTHON, reason="GEVAL_DEEPEVAL_PYTHON (a Python with deepeval) not set")
def test_deepeval_imports_the_metric(tmp_path):
    path = tmp_path / "metric.py"
    path.write_text(export_for_tool(frozen(), "deepeval", pass_at=4), encoding="utf-8")
    script = (
        "import importlib.util, json, sys; s = importlib.util.spec_from_file_location('m', sys.argv[1]); "
        "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); g = m.metric; "
        "print(json.dumps([g.name, g.evaluation_steps, [p.name for p in g.evaluation_params], "
        "[[r.score_range[0], r.expected_outcome] for r in g.rubric], g.threshold]))"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-used", "DEEPEVAL_TELEMETRY_OPT_OUT": "1"}
    done = subprocess.run(
        [DEEPEVAL_PYTHON, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    name, steps, params, rubric, threshold = json.loads(done.stdout.strip().splitlines()[-1])
    dim = frozen().dimension
    assert name == HOSTILE and steps == [f"{HOSTILE} (1-5) - {dim.definition}", *dim.steps]
    assert params == ["INPUT", "ACTUAL_OUTPUT"] and rubric[4] == [5, f"anchor 5: {HOSTILE}"]
    assert threshold == 0.75  # (4 - 1) / 4


def test_promptfoo_assertion_parses_as_one_llm_rubric_with_the_rendered_prompt():
    yaml = require_module("yaml", "PyYAML comes with the local extra (llm)")
    prompt = frozen()
    text = export_for_tool(prompt, "promptfoo")
    wrapper = yaml.safe_load(text)
    assert wrapper["type"] == "assert-set" and wrapper["threshold"] == 0  # no pass rule: every item passes
    [data] = wrapper["assert"]
    assert set(data) == {"type", "metric", "value", "rubricPrompt", "provider"}
    assert data["type"] == "llm-rubric" and data["metric"] == promptfoo_text(HOSTILE)
    assert data["provider"] == {
        "id": "openai:chat:gpt-4o-2024-08-06",
        "config": {"temperature": 0.0, "seed": 7},
    }
    rubric = data["rubricPrompt"]
    assert "{{ document }}" in rubric and "{{ output }}" in rubric
    # Outside the two variables every brace is printed by an expression: no template syntax from the prompt.
    rest = rubric.replace("{{ document }}", "").replace("{{ output }}", "").replace("{{ '{' }}", "")
    assert "{" not in rest.replace("{{ '#' }}", "")
    assert rest.count("Read the document.") == 1
    assert all(line.startswith("#") for line in text.splitlines()[:5]) and prompt.id in text


def test_openai_grader_has_the_documented_score_model_shape():
    prompt = frozen()
    data = json.loads(export_for_tool(prompt, "openai-grader"))
    grader = data["grader"]
    assert data["content_hash"] == prompt.id and any("cannot reproduce" in c for c in data["comment"])
    assert set(data) == {"comment", "content_hash", "item_fields", "grader"}  # no pass rule asked
    assert set(grader) == {"type", "name", "model", "input", "range", "sampling_params"}
    assert grader["type"] == "score_model" and grader["range"] == [1, 5]
    assert grader["model"] == "gpt-4o-2024-08-06"
    assert grader["sampling_params"] == {"temperature": 0.0, "seed": 7}
    [message] = grader["input"]
    assert message["role"] == "user"
    content = message["content"]
    assert "{{item.document}}" in content and "{{sample.output_text}}" in content
    assert content.count("{{") == 2  # the prompt's own '{{' cannot open a template string
    assert HOSTILE.replace("{{", "{ {") in content


def test_every_format_has_its_own_file_name():
    names = {tool_filename(frozen("Coherence"), f) for f in FORMATS}
    assert names == {
        "coherence@2.json",
        "coherence@2.deepeval.py",
        "coherence@2.promptfoo.yaml",
        "coherence@2.openai-grader.json",
        "coherence@2.inspect.py",
    }


def test_cli_export_formats_to_stdout_and_file(tmp_path):
    db = str(tmp_path / "cli.db")
    Library(db).close()
    out = tmp_path / "m.py"
    done = CliRunner().invoke(
        cli, ["prompts", "export", "coherence", "--format", "deepeval", "-o", str(out), "--db", db]
    )
    assert done.exit_code == 0, done.output
    ast.parse(out.read_text(encoding="utf-8"))
    done = CliRunner().invoke(
        cli, ["prompts", "export", "coherence", "--format", "openai-grader", "--db", db]
    )
    assert done.exit_code == 0 and json.loads(done.output)["grader"]["type"] == "score_model"
    refused = CliRunner().invoke(
        cli, ["prompts", "export", "coherence", "--format", "promptfoo", "--snippet", "--db", db]
    )
    assert refused.exit_code == 2 and "--format json only" in refused.output


def test_library_page_offers_every_format(tmp_path, monkeypatch, downloads):
    lib_path = use_temp_library(tmp_path, monkeypatch)
    at = open_page("library")
    prompt = Library(lib_path).get_prompt("coherence")
    for fmt in ("deepeval", "promptfoo", "openai-grader"):
        at.radio(key="lib_format").set_value(fmt).run()
        assert not at.exception and not at.error
        assert downloads(at, "Download") == export_for_tool(prompt, fmt)
    at.number_input(key=f"lib_pass_at_{prompt.id[:12]}").set_value(3.5).run()  # the pass rule, as --pass-at
    assert not at.exception and downloads(at, "Download") == export_for_tool(
        prompt, "openai-grader", pass_at=3.5
    )
    at.radio(key="lib_format").set_value("json").run()
    assert json.loads(downloads(at, "Download export"))["content_hash"] == prompt.id


def test_a_changed_prompt_changes_the_named_hash():
    a, b = frozen("Coherence"), frozen("Coherence")
    b = replace(b, id=content_hash(replace(b.dimension, definition="other")))
    assert a.id in export_for_tool(a, "promptfoo") and b.id in export_for_tool(b, "promptfoo")


@pytest.mark.parametrize("model", ["gpt-4o{{ env.OPENAI_API_KEY }}", "{% raw %}", "gpt 4o", ""])
def test_promptfoo_names_no_provider_whose_model_is_not_a_plain_name(model):
    yaml = require_module("yaml", "PyYAML comes with the local extra (llm)")
    prompt = frozen("Coherence")
    prompt = replace(
        prompt, dimension=replace(prompt.dimension, judge=replace(prompt.dimension.judge, model=model))
    )
    text = export_for_tool(prompt, "promptfoo")
    assert "provider" not in yaml.safe_load(text) and "set provider to the grader of your choice" in text
