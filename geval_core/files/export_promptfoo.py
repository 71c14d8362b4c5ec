"""The promptfoo export: an assert-set holding one llm-rubric assertion whose rubricPrompt is the rendered G-Eval
prompt; the set's threshold is the pass rule (0 without one).

promptfoo renders assertion fields as Nunjucks with the environment in reach and hands strings starting
`file:` or `package:` to its loaders, so every string from the prompt is written as text that prints itself.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..prompts import FORM_HEADER
from ..types import ExportedJudge, FrozenPrompt
from .export_common import (
    comment_block,
    judge_losses,
    one_line,
    output_field,
    pass_rule,
    provenance,
    rendered_with,
    scale_share,
    share_formula,
)

# promptfoo hands a string that starts with one of these to a file or package loader (which may run it).
PROMPTFOO_LOADER_PREFIXES = ("file:", "package:")
# A model name promptfoo can take into a provider id as it is (no template, no path, no loader prefix).
_PLAIN_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")
# promptfoo 0.123.1's OpenAI chat provider sends reasoning_effort only for the models it takes as reasoning
# models by name (openai isReasoningModel) and for gpt-oss; for any other model it drops the setting.
_PROMPTFOO_REASONING = re.compile(r"(?:ft:)?(?:gpt-5|o1|o3|o4)|.*(?:deep-research|gpt-oss|gpt-6-astra)")
SCORE_DECIMALS = 4  # the rubric asks for the 0-1 score with this many decimals


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


def promptfoo_provider(prompt: FrozenPrompt, facts: ExportedJudge) -> str | None:
    """The grader's provider id, only for an OpenAI model whose name is plain (never a template or a path)."""
    judge = prompt.dimension.judge
    plain = facts.openai_model and _PLAIN_MODEL.fullmatch(judge.model or "")
    return f"openai:chat:{judge.model}" if plain else None


def promptfoo_threshold(prompt: FrozenPrompt, pass_at: float) -> float:
    """The pass rating as llm-rubric's 0-1 score, rounded down to SCORE_DECIMALS.

    Rounding down keeps a rating exactly at the rule passing when the judge writes its share rounded
    (2/3 as 0.6667 against 0.6666...).
    """
    factor = 10**SCORE_DECIMALS
    return math.floor(round(scale_share(prompt, pass_at) * factor, 6)) / factor


def verdict_instruction(prompt: FrozenPrompt) -> str:
    """What the rubric asks for after the form: a reason and the rating as a 0-1 score, never a pass verdict
    (a judge's own 'pass' would be a rule the frozen prompt does not have)."""
    dim = prompt.dimension
    return (
        f'\n\nReply with only a JSON object: {{"reason": "<one sentence>", "score": S}}, where S is your '
        f"{dim.name} rating on the {dim.scale} scale mapped to 0-1 as (rating - {dim.scale.min}) / "
        f"{dim.scale.max - dim.scale.min}, written with {SCORE_DECIMALS} decimals."
    )


def provider_config(prompt: FrozenPrompt) -> dict[str, Any]:
    """The provider config promptfoo passes to the OpenAI API: temperature, seed, reasoning_effort when set."""
    judge = prompt.dimension.judge
    config: dict[str, Any] = {"temperature": judge.temperature}
    if judge.seed is not None:
        config["seed"] = judge.seed
    if judge.reasoning_effort:  # one of REASONING_EFFORTS; promptfoo renders this field as a template too
        config["reasoning_effort"] = promptfoo_text(judge.reasoning_effort)
    return config


def promptfoo_losses(prompt: FrozenPrompt, provider: str | None) -> list[str]:
    """Everything of this frozen prompt the promptfoo assertion does not carry."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    output = output_field(prompt)
    weighting = ["the probability weighting: llm-rubric reads the one score the judge states in a JSON reply"]
    lost = [
        *(weighting if judge.mode != "sampling" else []),
        *judge_losses(prompt, "promptfoo"),
        f"the form ending ({FORM_HEADER} ... - {one_line(dim.name)}:): llm-rubric needs a JSON verdict, "
        "so a JSON instruction follows the form",
        f"the item's {one_line(output)} is promptfoo's output; the other inputs are test vars "
        f"({', '.join(map(one_line, dim.inputs[:-1])) or 'none'})",
    ]
    if provider is None:
        lost.append(
            f"the frozen judge {judge.judge_id}: no provider is named; set provider to the grader of your "
            f"choice, with temperature {judge.temperature}"
            + (f", seed {judge.seed}" if judge.seed is not None else "")
            + (f" and reasoning_effort {judge.reasoning_effort}" if judge.reasoning_effort else "")
        )
    elif judge.reasoning_effort and not _PROMPTFOO_REASONING.match(judge.model):
        lost.append(
            f"reasoning_effort={judge.reasoning_effort}: written to the provider config, but promptfoo "
            f"0.123.1 sends it only for models it takes as reasoning models (gpt-5*, o1*, o3*, o4*) or "
            f"gpt-oss; for {judge.model} it is dropped"
        )
    return lost


# promptfoo 0.123.1 ANDs an assertion's own threshold with any "pass" the judge writes (a missing one counts as
# true), so a judge adding an unasked "pass": false would fail items the rule passes; an assert-set's threshold
# alone decides (its score against the threshold), so the rule sits there, around the one llm-rubric.
SET_NOTE = (
    "set on an assert-set around the llm-rubric, whose threshold alone decides: promptfoo ANDs an "
    'assertion\'s own threshold with any "pass" the judge writes, so a judge adding an unasked '
    '"pass": false would fail items the threshold passes.'
)


def promptfoo_rule(prompt: FrozenPrompt, pass_at: float | None) -> list[str]:
    """The comment lines saying the pass rule as promptfoo applies it."""
    if pass_at is None:
        return pass_rule(
            prompt,
            None,
            "",
            "threshold is 0, " + SET_NOTE + " So promptfoo passes every item, one "
            "whose reply it cannot read too (it scores 0; its component result "
            "says why): read the score (namedScores).",
        )
    how = (
        f"threshold = {share_formula(prompt, pass_at)} = {promptfoo_threshold(prompt, pass_at)!r} on the 0-1 "
        f"score the rubric asks for (rounded down to {SCORE_DECIMALS} decimals), " + SET_NOTE + " An item "
        "passes when its score >= threshold; a reply promptfoo cannot read scores 0."
    )
    return pass_rule(prompt, pass_at, how, "")


def set_threshold(prompt: FrozenPrompt, pass_at: float | None) -> float | int:
    """The assert-set's threshold: the rule's 0-1 share, or 0 (every item passes) without a rule."""
    return 0 if pass_at is None else promptfoo_threshold(prompt, pass_at)


def promptfoo_assertion(prompt: FrozenPrompt, pass_at: float | None = None, *, facts: ExportedJudge) -> str:
    """A YAML assert-set holding one llm-rubric assertion whose rubricPrompt is the rendered G-Eval prompt."""
    dim = prompt.dimension
    output = output_field(prompt)
    rubric_prompt = rendered_with(
        prompt, nunjucks_text, lambda f: "{{ " + ("output" if f == output else f) + " }}"
    )
    rubric_prompt = unloadable(rubric_prompt) + nunjucks_text(verdict_instruction(prompt))
    provider = promptfoo_provider(prompt, facts)
    rubric: dict[str, Any] = {
        "type": "llm-rubric",
        "metric": promptfoo_text(dim.name),
        "value": promptfoo_text(dim.definition.strip()),
        "rubricPrompt": rubric_prompt,
    }
    if provider:
        rubric["provider"] = {"id": provider, "config": provider_config(prompt)}
    fields = {"type": "assert-set", "threshold": set_threshold(prompt, pass_at), "assert": [rubric]}
    head = provenance(
        prompt, "promptfoo", promptfoo_losses(prompt, provider), promptfoo_rule(prompt, pass_at)
    )
    head.append(
        "One assertion (an assert-set holding the llm-rubric): put it under a test's `assert:` list (or "
        "defaultTest.assert)."
    )
    return comment_block(head) + yaml_mapping(fields)


def yaml_mapping(fields: dict[str, Any], indent: str = "") -> str:
    """Block YAML of a mapping (of mappings, and lists of mappings) whose scalars are JSON literals."""
    out = []
    for key, value in fields.items():
        if isinstance(value, dict):
            out.append(f"{indent}{key}:\n{yaml_mapping(value, indent + '  ')}")
        elif isinstance(value, list):  # each entry a mapping: its first key follows the "- "
            out.append(f"{indent}{key}:\n")
            out.extend(
                f"{indent}  - " + yaml_mapping(entry, indent + "    ")[len(indent) + 4 :] for entry in value
            )
        else:
            out.append(f"{indent}{key}: {yaml_scalar(value)}\n")
    return "".join(out)


# Characters YAML must not see raw in a double-quoted scalar: non-printables, and NEL/LS/PS (line breaks).
_YAML_UNSAFE = re.compile("[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def yaml_scalar(value: Any) -> str:
    """A JSON literal (a valid YAML double-quoted scalar) with every character YAML would misread escaped."""
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(value, ensure_ascii=False))
