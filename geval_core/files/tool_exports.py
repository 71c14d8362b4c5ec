"""Exports other judge tools load: a DeepEval GEval metric, a promptfoo llm-rubric assertion, an OpenAI
Evals score_model grader. Each names the frozen prompt (hash) it came from and what the tool cannot reproduce.

Every value from the prompt is written as a literal of the target language (Python repr, JSON strings,
which YAML reads as double-quoted scalars), and comment lines are made single-line first: a name or a step
can never become code, YAML structure or a template expression.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..prompts import FORM_HEADER, render
from ..types import FrozenPrompt
from .prompt_files import export_filename, export_prompt


@dataclass(frozen=True)
class ExportFormat:
    """One export format: how it is named to people, the file name's suffix, its MIME type, its writer."""

    label: str
    suffix: str
    mime: str
    write: Callable[[FrozenPrompt, dict[str, Any] | None], str]


def _json_export(prompt: FrozenPrompt, agreement: dict[str, Any] | None) -> str:
    return json.dumps(export_prompt(prompt, agreement, tool_filename(prompt, "json")), indent=2,
                      ensure_ascii=False) + "\n"


# DeepEval's test-case fields, in the order the prompt's inputs take them (the last input is the output).
DEEPEVAL_FIELDS = ("INPUT", "CONTEXT", "EXPECTED_OUTPUT", "RETRIEVAL_CONTEXT")
_SENTINEL = "\x00geval-input-{}\x00"  # stands in for an input while the fixed text is escaped


def tool_export(prompt: FrozenPrompt, fmt: str, agreement: dict[str, Any] | None = None) -> str:
    """The export of `prompt` in one of FORMATS, as text ready to write to a file."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}", field="format")
    return EXPORT_FORMATS[fmt].write(prompt, agreement)


def tool_filename(prompt: FrozenPrompt, fmt: str) -> str:
    """name@version plus the format's suffix (a file name, never a path)."""
    return export_filename(prompt).removesuffix(".json") + EXPORT_FORMATS[fmt].suffix


def one_line(text: str) -> str:
    """Text safe inside a one-line comment: line breaks and control characters become spaces."""
    return re.sub(r"[\x00-\x1f\x7f\u2028\u2029\x85]+", " ", str(text))


def provenance(prompt: FrozenPrompt, tool: str, lost: list[str]) -> list[str]:
    """The comment lines every export starts with: where it came from, what the tool cannot reproduce."""
    judge = prompt.dimension.judge
    lines = [f"{tool} export of the frozen G-Eval prompt {one_line(prompt.label)!r} (G-Eval Workbench).",
             f"Content hash (the prompt's identity; name and version are labels): {prompt.id}",
             f"Frozen judge: {one_line(judge.judge_id)}, mode {judge.mode}, n={judge.n}, "
             f"temperature={judge.temperature}.",
             f"What {tool} cannot reproduce, so its scores are not the frozen metric's:"]
    return lines + [f"- {one_line(item)}" for item in lost]


def _comment(lines: list[str]) -> str:
    return "".join(f"# {line}\n" for line in lines)


def _output_field(prompt: FrozenPrompt) -> str:
    return prompt.dimension.inputs[-1]


def rendered_with(prompt: FrozenPrompt, escape, slot) -> str:
    """The rendered prompt with the fixed text passed through `escape` and each input as `slot(name)`."""
    inputs = prompt.dimension.inputs
    odd = [f for f in inputs if not f.isidentifier()]
    if odd:  # a frozen prompt's inputs are template placeholders, so identifiers; never write others into code
        raise InputError(f"input field {odd[0]!r} is not a plain name; it cannot be a template variable")
    text = render(prompt, {name: _SENTINEL.format(n) for n, name in enumerate(inputs)})
    parts = re.split("(\x00geval-input-\\d+\x00)", text)
    out = []
    for part in parts:
        found = re.fullmatch("\x00geval-input-(\\d+)\x00", part)
        out.append(slot(inputs[int(found.group(1))]) if found else escape(part))
    return "".join(out)


# --- DeepEval ------------------------------------------------------------------------------------------------
DEEPEVAL_TEMPLATE = '''\
{comment}"""A DeepEval GEval metric with the frozen evaluation steps: DeepEval uses them as given, never regenerating."""

from deepeval.metrics import GEval
from deepeval.metrics.g_eval import Rubric

try:  # DeepEval 3.x names the test-case fields SingleTurnParams; 1.x-2.x LLMTestCaseParams
    from deepeval.test_case import SingleTurnParams as _Params
except ImportError:
    from deepeval.test_case import LLMTestCaseParams as _Params

CONTENT_HASH = {hash}
EVALUATION_STEPS = {steps}
# Each input of the frozen prompt and the DeepEval test-case field that carries it.
INPUT_FIELDS = {fields}
RUBRIC = {rubric}  # (rating, what it means), from the frozen anchors

metric = GEval(
    name={name},
    evaluation_steps=EVALUATION_STEPS,
    rubric=[Rubric(score_range=(point, point), expected_outcome=text) for point, text in RUBRIC] or None,
    evaluation_params=[getattr(_Params, field) for field in INPUT_FIELDS.values()],
    model={model},
)
'''


def deepeval_fields(prompt: FrozenPrompt) -> dict[str, str]:
    """Input -> DeepEval test-case field: the last input is ACTUAL_OUTPUT, the others INPUT, CONTEXT, ..."""
    *others, output = prompt.dimension.inputs
    return {**dict(zip(others, DEEPEVAL_FIELDS, strict=False)), output: "ACTUAL_OUTPUT"}


def deepeval_metric(prompt: FrozenPrompt) -> str:
    """A Python file defining `metric`, a DeepEval GEval with the frozen steps, rubric and inputs."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    fields = deepeval_fields(prompt)
    fits = dim.scale.min >= 0 and dim.scale.max <= 10  # DeepEval's rubric ranges lie within 0-10
    rubric = [(p, dim.anchors.get(p, "")) for p in dim.scale.points] if fits else []
    lost = ["logprob weighting over the frozen scale: DeepEval weights its own 0-10 scale and reports 0-1",
            "the frozen template: DeepEval writes its own prompt around the steps and the test-case fields",
            f"decoding: n={judge.n}, temperature={judge.temperature}, top_logprobs={judge.top_logprobs}",
            "field names: DeepEval shows the inputs as " + ", ".join(f"{k} -> {v}" for k, v in fields.items())]
    if len(fields) < len(dim.inputs):
        lost.append(f"inputs beyond {len(DEEPEVAL_FIELDS) + 1}: DeepEval has no field for them")
    if not fits:
        lost.append(f"the anchors: the scale {dim.scale} lies outside DeepEval's 0-10 rubric ranges")
    model = judge.model if judge.provider == "openai" and judge.model else None
    if model is None:
        lost.append(f"the frozen judge {judge.judge_id}: set model= to a DeepEval model of your choice")
    return DEEPEVAL_TEMPLATE.format(
        comment=_comment(provenance(prompt, "DeepEval", lost)), hash=repr(prompt.id),
        steps=_py_list(list(dim.steps)), fields=repr(fields), rubric=_py_list(rubric),
        name=repr(dim.name), model=repr(model))


def _py_list(values: list) -> str:
    if not values:
        return "[]"
    return "[\n" + "".join(f"    {value!r},\n" for value in values) + "]"


# --- promptfoo -----------------------------------------------------------------------------------------------
# promptfoo hands a string that starts with one of these to a file or package loader (which may run it).
PROMPTFOO_LOADER_PREFIXES = ("file:", "package:")
# A model name promptfoo can take into a provider id as it is (no template, no path, no loader prefix).
_PLAIN_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")


def nunjucks_text(text: str) -> str:
    """Literal text for a nunjucks template (promptfoo's): every opening brace, and the '#' of every '#}'
    (nunjucks' lexer refuses a stray comment end), as an expression printing it."""
    return text.replace("{", "{{ '{' }}").replace("#}", "{{ '#' }}}")


def unloadable(template: str) -> str:
    """The template with a leading loader prefix's first character written as an expression printing it.

    The string then no longer starts with the prefix, so promptfoo renders it instead of loading a file.
    """
    if template.lower().startswith(PROMPTFOO_LOADER_PREFIXES):
        return "{{ " + json.dumps(template[0]) + " }}" + template[1:]
    return template


def promptfoo_text(text: str) -> str:
    """A string promptfoo renders as Nunjucks that shows `text` as written and never reaches a loader."""
    return unloadable(nunjucks_text(text))


def promptfoo_assertion(prompt: FrozenPrompt) -> str:
    """A YAML llm-rubric assertion whose rubricPrompt is the rendered G-Eval prompt."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    output = _output_field(prompt)
    span = dim.scale.max - dim.scale.min
    verdict = (f"\n\nReply with only a JSON object: {{\"reason\": \"<one sentence>\", \"score\": S, \"pass\": "
               f"true or false}}, where S is your {dim.name} rating on the {dim.scale} scale mapped to 0-1 as "
               f"(rating - {dim.scale.min}) / {span}.")
    rubric_prompt = rendered_with(prompt, nunjucks_text,
                                  lambda f: "{{ " + ("output" if f == output else f) + " }}")
    rubric_prompt = unloadable(rubric_prompt) + nunjucks_text(verdict)
    lost = ["logprob weighting: llm-rubric reads one stated score from a JSON reply",
            f"the form ending ({FORM_HEADER} ... - {one_line(dim.name)}:): llm-rubric needs a JSON verdict, "
            "so a JSON instruction follows the form",
            f"decoding: n={judge.n} replies, top_logprobs={judge.top_logprobs}",
            f"the item's {one_line(output)} is promptfoo's output; the other inputs are test vars "
            f"({', '.join(map(one_line, dim.inputs[:-1])) or 'none'})"]
    plain = judge.provider == "openai" and _PLAIN_MODEL.fullmatch(judge.model or "")
    provider = f"openai:chat:{judge.model}" if plain else None
    if provider is None:
        lost.append(f"the frozen judge {judge.judge_id}: set provider to the grader of your choice")
    fields: dict[str, Any] = {"type": "llm-rubric", "metric": promptfoo_text(dim.name),
                              "value": promptfoo_text(dim.definition.strip()), "rubricPrompt": rubric_prompt}
    if provider:
        fields["provider"] = {"id": provider, "config": {"temperature": judge.temperature}}
    head = provenance(prompt, "promptfoo", lost) + [
        "One assertion: put it under a test's `assert:` list (or defaultTest.assert)."]
    return _comment(head) + _yaml_mapping(fields)


def _yaml_mapping(fields: dict[str, Any], indent: str = "") -> str:
    """Block YAML of a mapping whose scalars are JSON literals (double-quoted YAML scalars)."""
    out = []
    for key, value in fields.items():
        if isinstance(value, dict):
            out.append(f"{indent}{key}:\n{_yaml_mapping(value, indent + '  ')}")
        else:
            out.append(f"{indent}{key}: {yaml_scalar(value)}\n")
    return "".join(out)


# Characters YAML must not see raw in a double-quoted scalar: non-printables, and NEL/LS/PS (line breaks).
_YAML_UNSAFE = re.compile("[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def yaml_scalar(value: Any) -> str:
    """A JSON literal (a valid YAML double-quoted scalar) with every character YAML would misread escaped."""
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(value, ensure_ascii=False))


# --- OpenAI Evals --------------------------------------------------------------------------------------------
def openai_template_text(text: str) -> str:
    """Literal text for an OpenAI Evals template: a '{{' would open a template string, so it is split."""
    return text.replace("{{", "{ {")


def openai_grader(prompt: FrozenPrompt) -> str:
    """JSON for `client.evals.create(testing_criteria=...)`: one score_model grader with the rendered prompt."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    content = rendered_with(prompt, openai_template_text, lambda f: "{{item." + f + "}}")
    lost = ["logprob weighting: the score_model grader reads the score the model states",
            f"n={judge.n} sampled replies and top_logprobs={judge.top_logprobs}",
            "literal '{{' in the prompt's fixed text is written as '{ {' (it would open a template string)",
            f"grading generated output: replace {{{{item.{_output_field(prompt)}}}}} with {{{{sample.output_text}}}}"]
    if judge.provider != "openai":
        lost.append(f"the frozen judge {judge.judge_id}: the Evals API runs OpenAI models; model names it anyway")
    params: dict[str, Any] = {"temperature": judge.temperature}
    if judge.seed is not None:
        params["seed"] = judge.seed
    grader = {"type": "score_model", "name": f"{dim.name} ({prompt.label} {prompt.id[:12]})",
              "model": judge.model, "input": [{"role": "user", "content": content}],
              "range": [dim.scale.min, dim.scale.max], "sampling_params": params}
    data = {"comment": provenance(prompt, "OpenAI Evals", lost), "content_hash": prompt.id,
            "testing_criteria": [grader]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# Every format, stated once: the CLI's --format choices and the Library page's radio read this table.
EXPORT_FORMATS = {
    "json": ExportFormat("JSON (this workbench, hash-checked)", ".json", "application/json", _json_export),
    "deepeval": ExportFormat("DeepEval metric (.py)", ".deepeval.py", "text/x-python",
                             lambda prompt, _: deepeval_metric(prompt)),
    "promptfoo": ExportFormat("promptfoo assertion (.yaml)", ".promptfoo.yaml", "application/yaml",
                              lambda prompt, _: promptfoo_assertion(prompt)),
    "openai-grader": ExportFormat("OpenAI Evals grader (.json)", ".openai-grader.json", "application/json",
                                  lambda prompt, _: openai_grader(prompt)),
}
FORMATS = tuple(EXPORT_FORMATS)
