"""The OpenAI Evals export: the arguments of `client.evals.create`, a custom data source whose item schema is
the prompt's inputs and one score_model grader with the rendered prompt, the scale as its range."""

from __future__ import annotations

import json
from typing import Any

from ..types import FrozenPrompt
from .export_common import judge_losses, output_field, pass_rule, provenance, rendered_with

USAGE = ("Use: data = json.load(open(PATH)); client.evals.create(**{k: data[k] for k in ('name', 'metadata', "
         "'data_source_config', 'testing_criteria')})")


def openai_template_text(text: str) -> str:
    """Literal text for an OpenAI Evals template: a '{{' would open a template string, so it is split."""
    return text.replace("{{", "{ {")


def item_schema(prompt: FrozenPrompt) -> dict[str, Any]:
    """The JSON schema of one data-source row: every input of the prompt, a required string."""
    inputs = list(prompt.dimension.inputs)
    return {"type": "object", "properties": {name: {"type": "string"} for name in inputs}, "required": inputs}


def sampling_params(prompt: FrozenPrompt) -> dict[str, Any]:
    """The grader's sampling_params: the frozen temperature, and seed and reasoning_effort when set."""
    judge = prompt.dimension.judge
    params: dict[str, Any] = {"temperature": judge.temperature}
    if judge.seed is not None:
        params["seed"] = judge.seed
    if judge.reasoning_effort:
        params["reasoning_effort"] = judge.reasoning_effort
    return params


def openai_losses(prompt: FrozenPrompt) -> list[str]:
    """Everything of this frozen prompt the score_model grader does not carry."""
    judge = prompt.dimension.judge
    weighting = ["the probability weighting: the score_model grader reads the score the model states"]
    lost = [*(weighting if judge.mode != "sampling" else []), *judge_losses(prompt, "the score_model grader"),
            f"top_logprobs={judge.top_logprobs}: the grader asks for no log-probabilities",
            "the form ending: the grader reads its score from its own structured reply, not from a rating "
            "written after the form",
            f"grading generated output: replace {{{{item.{output_field(prompt)}}}}} with {{{{sample.output_text}}}} "
            "and set include_sample_schema to true"]
    if "{{" in rendered_with(prompt, str, lambda _: "\x00"):  # the fixed text alone, inputs kept apart
        lost.append("literal '{{' in the prompt's fixed text is written as '{ {' (it would open a template string)")
    if judge.provider != "openai":
        lost.append(f"the frozen judge {judge.judge_id}: the Evals API runs OpenAI models; model names it anyway")
    return lost


def openai_grader(prompt: FrozenPrompt, pass_at: float | None = None) -> str:
    """JSON for `client.evals.create`: the data source's item schema and one score_model grader."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    content = rendered_with(prompt, openai_template_text, lambda f: "{{item." + f + "}}")
    grader = {"type": "score_model", "name": f"{dim.name} ({prompt.label} {prompt.id[:12]})",
              "model": judge.model, "input": [{"role": "user", "content": content}],
              "range": [dim.scale.min, dim.scale.max], "sampling_params": sampling_params(prompt)}
    if pass_at is not None:  # the grader's score lies on `range`, the prompt's own scale: no mapping
        grader["pass_threshold"] = pass_at
    rule = pass_rule(prompt, pass_at, f"pass_threshold = {pass_at!r} on the grader's range, the same scale.",
                     "no pass_threshold is written (the Evals API does not document what passes without one).")
    comment = [*provenance(prompt, "OpenAI Evals", openai_losses(prompt), rule), USAGE]
    data = {"comment": comment, "content_hash": prompt.id, "name": f"{dim.name} ({prompt.label})",
            "metadata": {"content_hash": prompt.id},
            "data_source_config": {"type": "custom", "item_schema": item_schema(prompt),
                                   "include_sample_schema": False},
            "testing_criteria": [grader]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
