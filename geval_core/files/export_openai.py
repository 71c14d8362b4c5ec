"""The OpenAI grader export: one score_model grader for OpenAI's graders API.

openai 3.63 marks every `client.evals.*` method deprecated (OpenAI scheduled the Evals API's shutdown for
November 30, 2026); the grader objects live on, undeprecated, in `client.fine_tuning.alpha.graders.run` /
`.validate` and as the grader of a reinforcement fine-tuning job. So the file holds the grader itself: the
rendered prompt as its message, the scale as its range, the item's inputs as `{{item.NAME}}` and the judged
output as `{{sample.output_text}}` (what `run(model_sample=...)` and fine-tuning fill in).
"""

from __future__ import annotations

import json
from typing import Any

from ..types import ExportedJudge, FrozenPrompt
from .export_common import judge_losses, output_field, pass_rule, provenance, rendered_with

USAGE = (
    "Use: data = json.load(open(PATH)); result = client.fine_tuning.alpha.graders.run(grader=data['grader'], "
    "item={{{item}}}, model_sample=<the {output}>); result.reward is the score on the grader's range "
    "(client.fine_tuning.alpha.graders.validate(grader=data['grader']) checks it; a reinforcement "
    "fine-tuning job takes it as method.reinforcement.grader)."
)
SAMPLE = (
    "{{sample.output_text}}"  # the judged text: run()'s model_sample, or the sampled output in fine-tuning
)


def openai_template_text(text: str) -> str:
    """Literal text for an OpenAI grader template: a '{{' would open a template string, so it is split."""
    return text.replace("{{", "{ {")


def item_fields(prompt: FrozenPrompt) -> list[str]:
    """The inputs the grader reads from `item`: every input but the judged output (that is the sample)."""
    return list(prompt.dimension.inputs[:-1])


def sampling_params(prompt: FrozenPrompt) -> dict[str, Any]:
    """The grader's sampling_params: the frozen temperature, and seed and reasoning_effort when set."""
    judge = prompt.dimension.judge
    params: dict[str, Any] = {"temperature": judge.temperature}
    if judge.seed is not None:
        params["seed"] = judge.seed
    if judge.reasoning_effort:
        params["reasoning_effort"] = judge.reasoning_effort
    return params


def openai_losses(prompt: FrozenPrompt, facts: ExportedJudge) -> list[str]:
    """Everything of this frozen prompt the score_model grader does not carry."""
    judge = prompt.dimension.judge
    weighting = ["the probability weighting: the score_model grader reads the score the model states"]
    lost = [
        *(weighting if judge.mode != "sampling" else []),
        *judge_losses(prompt, "the score_model grader"),
        f"top_logprobs={judge.top_logprobs}: the grader asks for no log-probabilities",
        "the form ending: the grader reads its score from its own structured reply, not from a rating "
        "written after the form",
    ]
    if "{{" in rendered_with(prompt, str, lambda _: "\x00"):  # the fixed text alone, inputs kept apart
        lost.append(
            "literal '{{' in the prompt's fixed text is written as '{ {' (it would open a template string)"
        )
    if not facts.openai_model:
        lost.append(
            f"the frozen judge {judge.judge_id}: the graders API runs OpenAI models; model names it anyway"
        )
    return lost


def openai_rule(prompt: FrozenPrompt, pass_at: float | None) -> list[str]:
    """The comment lines saying the pass rule: the graders API returns a reward and applies no threshold."""
    return pass_rule(
        prompt,
        pass_at,
        f"the graders API applies no threshold, so pass_threshold = {pass_at!r} is "
        "written beside the grader: an item passes when result.reward >= "
        "pass_threshold (the reward lies on the grader's range, the same scale).",
        "the graders API returns a reward on the grader's range and applies no threshold; read the reward.",
    )


def openai_grader(prompt: FrozenPrompt, pass_at: float | None = None, *, facts: ExportedJudge) -> str:
    """JSON holding one score_model grader for `client.fine_tuning.alpha.graders.run` (and fine-tuning)."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    output = output_field(prompt)
    content = rendered_with(
        prompt, openai_template_text, lambda f: SAMPLE if f == output else "{{item." + f + "}}"
    )
    grader = {
        "type": "score_model",
        "name": f"{dim.name} ({prompt.label} {prompt.id[:12]})",
        "model": judge.model,
        "input": [{"role": "user", "content": content}],
        "range": [dim.scale.min, dim.scale.max],
        "sampling_params": sampling_params(prompt),
    }
    item = ", ".join(f"'{name}': ..." for name in item_fields(prompt))
    comment = [
        *provenance(prompt, "OpenAI grader", openai_losses(prompt, facts), openai_rule(prompt, pass_at)),
        USAGE.format(item=item, output=output),
    ]
    data: dict[str, Any] = {
        "comment": comment,
        "content_hash": prompt.id,
        "item_fields": item_fields(prompt),
        "grader": grader,
    }
    if pass_at is not None:  # the reward lies on `range`, the prompt's own scale: no mapping
        data["pass_threshold"] = pass_at
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
