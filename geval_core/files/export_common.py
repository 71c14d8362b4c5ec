"""What every export to another judge tool shares: the provenance header, the rendered prompt with its inputs
as the tool's variables, the pass rule (a rating on the prompt's scale) and the settings no tool carries.

Every value from the prompt is written as a literal of the target language (Python repr, JSON strings,
which YAML reads as double-quoted scalars), and comment lines are made single-line first: a name or a step
can never become code, YAML structure or a template expression.
"""

from __future__ import annotations

import math
import re

from ..errors import InputError
from ..prompts import placeholders, render, template_of
from ..types import FrozenPrompt

_SENTINEL = "\x00geval-input-{}\x00"  # stands in for an input while the fixed text is escaped


def one_line(text: str) -> str:
    """Text safe inside a one-line comment: line breaks and control characters become spaces."""
    return re.sub(r"[\x00-\x1f\x7f\u2028\u2029\x85]+", " ", str(text))


def provenance(
    prompt: FrozenPrompt, tool: str, lost: list[str], rule: list[str], heading: str | None = None
) -> list[str]:
    """The comment lines every export starts with: its source, what the tool cannot reproduce (under `heading`,
    by default that its scores are not the frozen metric's), the pass rule."""
    judge = prompt.dimension.judge
    effort = f", reasoning_effort={judge.reasoning_effort}" if judge.reasoning_effort else ""
    lines = [
        f"{tool} export of the frozen G-Eval prompt {one_line(prompt.label)!r} (G-Eval Workbench).",
        f"Content hash (the prompt's identity; name and version are labels): {prompt.id}",
        f"Frozen judge: {one_line(judge.judge_id)}, mode {judge.mode}, n={judge.n}, "
        f"temperature={judge.temperature}{effort}.",
        heading or f"What {tool} cannot reproduce, so its scores are not the frozen metric's:",
    ]
    return lines + [f"- {one_line(item)}" for item in lost] + rule


def comment_block(lines: list[str]) -> str:
    """Lines as '# ' comments (each made single-line by the caller)."""
    return "".join(f"# {line}\n" for line in lines)


def output_field(prompt: FrozenPrompt) -> str:
    """The input that holds what is judged: the last one."""
    return prompt.dimension.inputs[-1]


def shows_definition(prompt: FrozenPrompt) -> bool:
    """Whether the frozen template puts the dimension's definition in front of the judge."""
    return "definition" in placeholders(template_of(prompt.dimension))


def rendered_with(prompt: FrozenPrompt, escape, slot) -> str:
    """The rendered prompt with the fixed text passed through `escape` and each input as `slot(name)`."""
    inputs = prompt.dimension.inputs
    odd = [f for f in inputs if not f.isidentifier()]
    if (
        odd
    ):  # a frozen prompt's inputs are template placeholders, so identifiers; never write others into code
        raise InputError(f"input field {odd[0]!r} is not a plain name; it cannot be a template variable")
    text = render(prompt, {name: _SENTINEL.format(n) for n, name in enumerate(inputs)})
    parts = re.split("(\x00geval-input-\\d+\x00)", text)
    out = []
    for part in parts:
        found = re.fullmatch("\x00geval-input-(\\d+)\x00", part)
        out.append(slot(inputs[int(found.group(1))]) if found else escape(part))
    return "".join(out)


# --- the pass rule -------------------------------------------------------------------------------------------
def check_pass_at(prompt: FrozenPrompt, pass_at: float | None) -> None:
    """InputError unless `pass_at` is None or a rating within the prompt's scale (both ends included)."""
    scale = prompt.dimension.scale
    if pass_at is not None and not (math.isfinite(pass_at) and scale.min <= pass_at <= scale.max):
        raise InputError(
            f"{pass_at:g} lies outside the prompt's {scale} scale; give a rating from {scale.min} "
            f"to {scale.max}",
            field="pass_at",
        )


def scale_share(prompt: FrozenPrompt, rating: float) -> float:
    """A rating on the prompt's scale as the tools' 0-1 reading: (rating - min) / (max - min)."""
    scale = prompt.dimension.scale
    span = scale.max - scale.min
    return (rating - scale.min) / span if span else 0.0


def pass_rule(prompt: FrozenPrompt, pass_at: float | None, how: str, without: str) -> list[str]:
    """Comment lines saying the pass rule and how the tool applies it (`how`), or that there is none
    (`without`: what the tool then does)."""
    if pass_at is None:
        return [one_line(f"No pass rule is set (set one when exporting: {SET_PASS_AT}): {without}")]
    return [
        one_line(
            f"Pass rule (pass at {pass_at:g}, set when exporting: {SET_PASS_AT}): an item passes when its "
            f"{prompt.dimension.name} rating is at least {pass_at:g} on the {prompt.dimension.scale} scale; {how}"
        )
    ]


# Files are exported from the CLI and from the app alike: the comment names both controls.
SET_PASS_AT = "--pass-at RATING in the CLI, 'Pass at' on the Library page"


def share_formula(prompt: FrozenPrompt, pass_at: float) -> str:
    """'(3.5 - 1) / 4': the hand computation of a rating's 0-1 share, for the comments."""
    scale = prompt.dimension.scale
    return f"({pass_at:g} - {scale.min}) / {scale.max - scale.min}"


# --- settings no tool carries --------------------------------------------------------------------------------
def judge_losses(prompt: FrozenPrompt, tool: str) -> list[str]:
    """The frozen judge settings none of the tools reproduces, stated for this prompt."""
    judge = prompt.dimension.judge
    lost = []
    if judge.mode in ("logprobs", "auto"):
        floor = f"{judge.valid_mass_floor * 100:g}%"
        lost.append(
            f"the valid-mass floor ({floor}): the workbench gives no score when less than {floor} of the "
            f"probability is on the allowed ratings; {tool} scores every reply it can read"
        )
    if judge.mode == "auto":
        lost.append(
            f"auto mode: the workbench falls back to sampling n={judge.n} replies where the server gives "
            f"no log-probabilities; {tool} has no such fallback"
        )
    if judge.mode != "logprobs" and judge.n > 1:
        lost.append(
            f"sampling n={judge.n}: the frozen score averages {judge.n} replies per item; {tool} reads "
            "one reply per item"
        )
    lost.append(
        f"max_tokens={judge.max_tokens}: the frozen reply budget for one rating is not carried; {tool} "
        "lets its judge write a longer verdict"
    )
    return lost
