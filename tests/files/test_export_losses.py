"""What the tool exports carry and what they say they lose, read the way each tool reads its file (DeepEval's
Python through ast, promptfoo's YAML, OpenAI's JSON): the pass rule mapped by hand, reasoning_effort present
exactly when set, one loss note for each setting this prompt has and none for settings it lacks, the DeepEval
definition and list fields, and the CLI's --pass-at checks."""

from __future__ import annotations

import ast
import enum
import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from needs import require_module

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.files.export_common import SET_PASS_AT
from geval_core.files.tool_exports import DEEPEVAL_LOGPROB_MODELS
from geval_core.prompts import content_hash
from geval_core.providers.exports import export_for_tool
from geval_core.types import Dimension, FrozenPrompt, JudgeSettings, Scale
from prompt_library import Library

TOOLS = ("deepeval", "promptfoo", "openai-grader")


def prompt_with(
    scale: Scale | None = None, inputs: tuple[str, ...] = ("document", "summary"), template: str = "", **judge
) -> FrozenPrompt:
    """A plain frozen prompt (no braces anywhere) with the judge settings given."""
    scale = scale or Scale(1, 5)
    settings = {"provider": "openai", "model": "gpt-4o-2024-08-06", **judge}
    dim = Dimension(
        name="Coherence",
        definition="How well the summary hangs together.",
        scale=scale,
        anchors={p: f"anchor {p}" for p in scale.points},
        inputs=inputs,
        steps=("Read the document.", "Check the summary."),
        template=template,
        judge=JudgeSettings(**settings),
    )
    return FrozenPrompt(content_hash(dim), "coherence", 1, dim, "2026-01-01")


def yaml_of(text: str) -> dict:
    return require_module("yaml", "PyYAML comes with the local extra (llm)").safe_load(text)


def rubric_of(text: str) -> dict:
    """The promptfoo export's llm-rubric: the one assertion of its assert-set."""
    data = yaml_of(text)
    assert data["type"] == "assert-set"
    [rubric] = data["assert"]
    return rubric


def deepeval_values(text: str) -> tuple[dict, dict]:
    """The file's upper-case constants (literals) and the GEval call's keyword nodes."""
    tree = ast.parse(text)
    compile(tree, "metric.py", "exec")
    values = {
        t.targets[0].id: ast.literal_eval(t.value)
        for t in tree.body
        if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name) and t.targets[0].id.isupper()
    }
    [call] = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "GEval"]
    return values, {k.arg: k.value for k in call.keywords}


def loss_lines(text: str, fmt: str) -> list[str]:
    """The '- ...' lines of the file's 'cannot reproduce' list."""
    lines = (
        json.loads(text)["comment"]
        if fmt == "openai-grader"
        else [line[2:] for line in text.splitlines() if line.startswith("# ")]
    )
    return [line[2:] for line in lines if line.startswith("- ")]


# A loss note's opening words -> the setting it is about.
NOTE_KEYS = {
    "the valid-mass floor": "floor",
    "auto mode": "auto",
    "sampling n=": "n",
    "reasoning_effort=": "effort",
    "seed=": "seed",
    "temperature=": "temperature",
}


def noted(text: str, fmt: str) -> set[str]:
    """Which of NOTE_KEYS' settings the file's loss list names."""
    return {
        key for line in loss_lines(text, fmt) for start, key in NOTE_KEYS.items() if line.startswith(start)
    }


# --- the pass rule -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scale", "pass_at", "share", "formula"),
    [
        (Scale(1, 5), 3.5, 0.625, "(3.5 - 1) / 4"),
        (Scale(0, 10), 7, 0.7, "(7 - 0) / 10"),
        (Scale(1, 4), 3, 2 / 3, "(3 - 1) / 3"),
        (Scale(1, 5), 1, 0.0, "(1 - 1) / 4"),
        (Scale(1, 5), 5, 1.0, "(5 - 1) / 4"),
    ],
)
def test_deepeval_threshold_is_the_rating_on_deepevals_0_1_score(scale, pass_at, share, formula):
    text = export_for_tool(prompt_with(scale), "deepeval", pass_at=pass_at)
    values, keywords = deepeval_values(text)
    assert (
        values["THRESHOLD"] == share
    )  # DeepEval reports (score - min) / (max - min) over the rubric's range
    assert isinstance(keywords["threshold"], ast.Name) and keywords["threshold"].id == "THRESHOLD"
    assert f"THRESHOLD = {formula} = {share!r}" in text
    assert f"Pass rule (pass at {pass_at:g}, set when exporting: {SET_PASS_AT})" in text


def test_deepeval_outside_its_rubric_range_maps_the_rating_linearly_and_says_so():
    text = export_for_tool(prompt_with(Scale(0, 20)), "deepeval", pass_at=15)
    values, _ = deepeval_values(text)
    assert values["THRESHOLD"] == 0.75 and values["RUBRIC"] == []
    assert "DeepEval rates 0-10 here and reports score / 10" in text


@pytest.mark.parametrize(
    ("scale", "pass_at", "threshold"),
    [
        (Scale(1, 5), 3.5, 0.625),
        (Scale(1, 4), 3, 0.6666),
        (Scale(1, 5), 5, 1.0),
        (Scale(1, 5), 1, 0.0),
        (Scale(0, 10), 7, 0.7),
        (Scale(1, 7), 4.2, 0.5333),
    ],
)
def test_promptfoo_threshold_is_the_rating_as_the_rubrics_0_1_score_rounded_down(scale, pass_at, threshold):
    prompt = prompt_with(scale)
    text = export_for_tool(prompt, "promptfoo", pass_at=pass_at)
    data, rubric = yaml_of(text), rubric_of(text)
    assert data["threshold"] == threshold  # (pass_at - min) / span, floored at 4 decimals, on the assert-set
    assert "threshold" not in rubric  # llm-rubric would AND its own threshold with a "pass" the judge sends
    assert (
        f"(rating - {scale.min}) / {scale.max - scale.min}, written with 4 decimals" in rubric["rubricPrompt"]
    )
    assert (
        '"pass"' not in rubric["rubricPrompt"]
    )  # the threshold alone decides; the judge is asked for no verdict


def test_openai_pass_threshold_is_the_rating_itself_on_the_graders_range():
    data = json.loads(export_for_tool(prompt_with(), "openai-grader", pass_at=3.5))
    assert data["pass_threshold"] == 3.5 and data["grader"]["range"] == [1, 5]
    assert any("pass_threshold = 3.5 is written beside the grader" in c for c in data["comment"])


def test_the_pass_rule_comment_names_the_clis_flag_and_the_apps_control():
    assert SET_PASS_AT == "--pass-at RATING in the CLI, 'Pass at' on the Library page"
    for pass_at in (None, 3.5):
        for fmt in TOOLS:
            text = export_for_tool(prompt_with(), fmt, pass_at=pass_at)
            assert SET_PASS_AT in text and "export with --pass-at" not in text


def test_without_pass_at_every_file_says_no_pass_rule_is_set_and_sets_none():
    prompt = prompt_with()
    texts = {fmt: export_for_tool(prompt, fmt) for fmt in TOOLS}
    for text in texts.values():
        assert f"No pass rule is set (set one when exporting: {SET_PASS_AT})" in text
    values, _ = deepeval_values(texts["deepeval"])
    assert values["THRESHOLD"] == 0.0  # not GEval's default 0.5, a rule the frozen prompt does not have
    promptfoo = yaml_of(texts["promptfoo"])
    assert promptfoo["threshold"] == 0 and '"pass"' not in rubric_of(texts["promptfoo"])["rubricPrompt"]
    assert "threshold is 0" in texts["promptfoo"] and "So promptfoo passes every item" in texts["promptfoo"]
    assert "pass_threshold" not in json.loads(texts["openai-grader"])


@pytest.mark.parametrize("fmt", TOOLS)
@pytest.mark.parametrize("pass_at", [0.5, 5.01, float("nan"), float("inf"), -1])
def test_a_pass_rating_outside_the_scale_is_refused(fmt, pass_at):
    with pytest.raises(InputError, match="outside the prompt's 1-5 scale") as info:
        export_for_tool(prompt_with(), fmt, pass_at=pass_at)
    assert info.value.field == "pass_at"


def test_the_json_export_takes_no_pass_rule():
    with pytest.raises(InputError, match="carries no pass rule"):
        export_for_tool(prompt_with(), "json", pass_at=3)


# --- reasoning_effort ----------------------------------------------------------------------------------------
def test_reasoning_effort_is_carried_where_the_tool_takes_it_and_absent_when_unset():
    effort = prompt_with(model="gpt-5-mini-2025-08-07", reasoning_effort="low", seed=3)
    plain = prompt_with(model="gpt-5-mini-2025-08-07")
    grader = json.loads(export_for_tool(effort, "openai-grader"))["grader"]
    assert grader["sampling_params"] == {"temperature": 0.0, "seed": 3, "reasoning_effort": "low"}
    assert rubric_of(export_for_tool(effort, "promptfoo"))["provider"] == {
        "id": "openai:chat:gpt-5-mini-2025-08-07",
        "config": {"temperature": 0.0, "seed": 3, "reasoning_effort": "low"},
    }
    assert (
        "reasoning_effort"
        not in json.loads(export_for_tool(plain, "openai-grader"))["grader"]["sampling_params"]
    )
    assert rubric_of(export_for_tool(plain, "promptfoo"))["provider"]["config"] == {"temperature": 0.0}
    for fmt in TOOLS:
        assert "reasoning_effort" not in export_for_tool(plain, fmt)
    assert "effort" in noted(export_for_tool(effort, "deepeval"), "deepeval")  # a model name alone sends none
    assert "effort" not in noted(
        export_for_tool(effort, "promptfoo"), "promptfoo"
    )  # gpt-5*: promptfoo sends it
    assert "effort" not in noted(export_for_tool(effort, "openai-grader"), "openai-grader")


def test_promptfoo_says_it_drops_reasoning_effort_for_a_model_it_does_not_take_as_reasoning():
    text = export_for_tool(prompt_with(model="qwen2.5-7b-instruct", reasoning_effort="high"), "promptfoo")
    assert rubric_of(text)["provider"]["config"]["reasoning_effort"] == "high"  # written; promptfoo decides
    [note] = [line for line in loss_lines(text, "promptfoo") if line.startswith("reasoning_effort=")]
    assert note.endswith("for qwen2.5-7b-instruct it is dropped")


def test_promptfoo_without_a_provider_names_the_settings_to_set():
    text = export_for_tool(
        prompt_with(
            provider="local", model="smollm2-135m-instruct", reasoning_effort="low", seed=9, temperature=0.3
        ),
        "promptfoo",
    )
    assert "provider" not in rubric_of(text)
    assert (
        "set provider to the grader of your choice, with temperature 0.3, seed 9 and reasoning_effort low"
        in text
    )


# --- loss notes for exactly the settings this prompt has --------------------------------------------------------
@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ({}, {"floor"}),
        ({"mode": "logprobs", "n": 5}, {"floor"}),  # n is unused in logprobs mode: nothing lost
        ({"mode": "sampling", "n": 5, "temperature": 0.7}, {"n"}),
        ({"mode": "sampling", "n": 1, "temperature": 0.7}, set()),
        ({"mode": "auto", "n": 3}, {"floor", "auto", "n"}),
    ],
)
@pytest.mark.parametrize("fmt", TOOLS)
def test_each_judge_setting_the_tools_cannot_carry_has_one_note(fmt, judge, expected):
    text = export_for_tool(prompt_with(**judge), fmt)
    deepeval_only = {"temperature"} if fmt == "deepeval" and judge.get("temperature") else set()
    assert noted(text, fmt) == expected | deepeval_only
    assert sum(line.startswith("max_tokens=5:") for line in loss_lines(text, fmt)) == 1


def test_the_valid_mass_floor_note_names_this_prompts_floor():
    text = export_for_tool(prompt_with(valid_mass_floor=0.25), "promptfoo")
    assert (
        "the valid-mass floor (25%): the workbench gives no score when less than 25% of the probability is on "
        "the allowed ratings"
    ) in text


def test_deepeval_notes_seed_and_temperature_only_when_set():
    assert noted(export_for_tool(prompt_with(seed=7, temperature=0.5), "deepeval"), "deepeval") == {
        "floor",
        "seed",
        "temperature",
    }
    for fmt in ("promptfoo", "openai-grader"):  # both carry temperature and seed
        assert noted(export_for_tool(prompt_with(seed=7, temperature=0.5), fmt), fmt) == {"floor"}


@pytest.mark.parametrize(
    ("provider", "model", "says"),
    [
        (
            "openai",
            "gpt-4o-2024-08-06",
            "the probability weighting, in part: DeepEval weights its stated score",
        ),
        (
            "openai",
            "Qwen/Qwen2.5-7B-Instruct",
            "the probability weighting is lost for Qwen/Qwen2.5-7B-Instruct",
        ),
        ("openai", "gpt-5-mini", "the probability weighting is lost for gpt-5-mini"),
        ("local", "smollm2-135m-instruct", "the probability weighting is lost for a model you set"),
    ],
)
def test_deepeval_says_whether_it_weights_for_this_model(provider, model, says):
    [first, *_] = loss_lines(
        export_for_tool(prompt_with(provider=provider, model=model), "deepeval"), "deepeval"
    )
    assert first.startswith(says)
    assert ("gpt-4o-2024-08-06" in DEEPEVAL_LOGPROB_MODELS) and ("gpt-5-mini" not in DEEPEVAL_LOGPROB_MODELS)


def test_in_sampling_mode_deepeval_says_it_weights_where_the_frozen_score_does_not():
    listed = loss_lines(export_for_tool(prompt_with(mode="sampling"), "deepeval"), "deepeval")
    assert listed[0].startswith(
        "sampling mode: the frozen score weights no probabilities, but DeepEval weights"
    )
    other = loss_lines(
        export_for_tool(prompt_with(mode="sampling", model="qwen2.5-7b"), "deepeval"), "deepeval"
    )
    assert not any("weight" in line for line in other)
    for fmt in ("promptfoo", "openai-grader"):
        assert not any(
            "weighting" in line
            for line in loss_lines(export_for_tool(prompt_with(mode="sampling"), fmt), fmt)
        )


def test_openai_notes_literal_braces_only_when_the_fixed_text_has_them():
    plain = prompt_with()
    braced = replace(plain, dimension=replace(plain.dimension, definition="Keep {{ and }} apart."))
    assert not any(
        "'{ {'" in line for line in loss_lines(export_for_tool(plain, "openai-grader"), "openai-grader")
    )
    assert any(
        "'{ {'" in line for line in loss_lines(export_for_tool(braced, "openai-grader"), "openai-grader")
    )


# --- DeepEval: the definition, the fields ---------------------------------------------------------------------
def test_deepeval_sends_the_definition_as_the_first_evaluation_step():
    prompt = prompt_with()
    values, keywords = deepeval_values(export_for_tool(prompt, "deepeval"))
    assert values["CRITERIA"] == "Coherence (1-5) - How well the summary hangs together."
    assert values["EVALUATION_STEPS"] == list(prompt.dimension.steps)
    sent = keywords["evaluation_steps"]  # [CRITERIA, *EVALUATION_STEPS]
    assert isinstance(sent, ast.List) and [type(e) for e in sent.elts] == [ast.Name, ast.Starred]
    assert sent.elts[0].id == "CRITERIA" and sent.elts[1].value.id == "EVALUATION_STEPS"
    assert "criteria" not in keywords  # an uploaded metric with criteria would drop the steps


def test_deepeval_leaves_out_a_definition_the_frozen_template_does_not_show():
    template = "Rate {{name}} ({{scale}}).\n{{steps}}\n{{document}}\n{{summary}}\n- {{name}}:"
    text = export_for_tool(prompt_with(template=template), "deepeval")
    values, keywords = deepeval_values(text)
    assert "CRITERIA" not in values and keywords["evaluation_steps"].id == "EVALUATION_STEPS"
    assert "the definition: the frozen template does not show it" in text


class SingleTurnParams(enum.Enum):
    """DeepEval 4.1.10's test-case field names and attribute names (deepeval/test_case/llm_test_case.py)."""

    INPUT = "input"
    ACTUAL_OUTPUT = "actual_output"
    EXPECTED_OUTPUT = "expected_output"
    CONTEXT = "context"
    RETRIEVAL_CONTEXT = "retrieval_context"


def make_test_case_of(text: str):
    """The file's make_test_case compiled with its constants, DeepEval's field enum and a dict for LLMTestCase
    (DeepEval itself is not installed: nothing else of the file runs)."""
    tree = ast.parse(text)
    kept = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign)
        and n.targets[0].id in ("INPUT_FIELDS", "LIST_FIELDS")
        or isinstance(n, ast.FunctionDef)
        and n.name == "make_test_case"
    ]
    namespace = {"_Params": SingleTurnParams, "LLMTestCase": lambda **fields: fields}
    exec(compile(ast.Module(body=kept, type_ignores=[]), "metric.py", "exec"), namespace)
    return namespace["make_test_case"]


@pytest.mark.parametrize(
    ("inputs", "fields"),
    [
        (("document", "summary"), {"document": "INPUT", "summary": "ACTUAL_OUTPUT"}),
        # Never EXPECTED_OUTPUT: DeepEval shows it as a reference answer; a source goes to CONTEXT.
        (
            ("question", "document", "answer"),
            {"question": "INPUT", "document": "CONTEXT", "answer": "ACTUAL_OUTPUT"},
        ),
        (
            ("question", "context", "retrieved", "answer"),
            {
                "question": "INPUT",
                "context": "CONTEXT",
                "retrieved": "RETRIEVAL_CONTEXT",
                "answer": "ACTUAL_OUTPUT",
            },
        ),
    ],
)
def test_deepeval_fields_take_input_first_and_list_fields_get_a_list(inputs, fields):
    text = export_for_tool(prompt_with(inputs=inputs), "deepeval")
    values, _ = deepeval_values(text)
    assert values["INPUT_FIELDS"] == fields
    case = make_test_case_of(text)(**{name: f"text of {name}\nline 2" for name in inputs})
    for name, field in fields.items():
        value = case[SingleTurnParams[field].value]
        assert value == (
            [f"text of {name}\nline 2"]
            if field in ("CONTEXT", "RETRIEVAL_CONTEXT")
            else f"text of {name}\nline 2"
        )
    listed = [line for line in loss_lines(text, "deepeval") if "into list fields" in line]
    assert bool(listed) == (len(inputs) > 2)
    if len(inputs) == 4:
        assert listed[0].startswith("context, retrieved go into list fields")


def test_deepeval_names_the_inputs_it_has_no_field_for():
    text = export_for_tool(
        prompt_with(inputs=("question", "reference", "context", "retrieved", "answer")), "deepeval"
    )
    values, _ = deepeval_values(text)
    assert (
        "retrieved" not in values["INPUT_FIELDS"] and "EXPECTED_OUTPUT" not in values["INPUT_FIELDS"].values()
    )
    assert "inputs beyond 4: DeepEval has no field for them" in text


def test_deepeval_make_test_case_fills_the_required_input_and_names_a_missing_one():
    make = make_test_case_of(export_for_tool(prompt_with(inputs=("summary",)), "deepeval"))
    assert make(summary="s") == {"actual_output": "s", "input": ""}  # LLMTestCase requires `input`
    with pytest.raises(TypeError, match="missing: summary"):
        make(document="d")


# --- the command line ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cli") / "cli.db")
    Library(path).close()  # the shipped coherence prompt, scale 1-5
    return path


def test_cli_pass_at_reaches_each_export(db):
    runner = CliRunner()
    out = runner.invoke(
        cli, ["prompts", "export", "coherence", "--format", "promptfoo", "--pass-at", "3.5", "--db", db]
    )
    assert out.exit_code == 0, out.output
    assert yaml_of(out.output)["threshold"] == 0.625
    out = runner.invoke(
        cli, ["prompts", "export", "coherence", "--format", "openai-grader", "--pass-at", "4", "--db", db]
    )
    assert out.exit_code == 0 and json.loads(out.output)["pass_threshold"] == 4
    out = runner.invoke(
        cli, ["prompts", "export", "coherence", "--format", "deepeval", "--pass-at", "2", "--db", db]
    )
    assert out.exit_code == 0 and deepeval_values(out.output)[0]["THRESHOLD"] == 0.25


@pytest.mark.parametrize("value", ["7", "0.5", "nan", "-inf"])
def test_cli_pass_at_outside_the_scale_is_a_usage_error_naming_the_option(db, value):
    out = CliRunner().invoke(
        cli, ["prompts", "export", "coherence", "--format", "promptfoo", "--pass-at", value, "--db", db]
    )
    assert out.exit_code == 2
    assert "--pass-at" in out.output and "outside coherence@1's 1-5 scale" in out.output
    assert "Traceback" not in out.output


def test_cli_pass_at_with_the_json_export_is_a_usage_error(db):
    out = CliRunner().invoke(cli, ["prompts", "export", "coherence", "--pass-at", "3", "--db", db])
    assert (
        out.exit_code == 2
        and "--pass-at goes with --format deepeval, promptfoo, openai-grader or inspect" in out.output
    )
