"""Render a judge prompt from a Dimension and an item: the template, its anchors and steps, the messages."""

from __future__ import annotations

import re

from ..types import Dimension, FrozenPrompt, Item

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# Placeholders filled from the dimension itself; every other placeholder must be an input field.
DIMENSION_FIELDS = ("name", "definition", "scale", "anchors", "steps")
FORM_HEADER = "Evaluation Form (scores ONLY):"

INTRO = (
    "You will be given {what}. Your task is to rate it on one metric.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep this "
    "document open while reviewing, and refer to it as needed."
)


def field_title(field: str) -> str:
    """'source_text' -> 'Source Text'."""
    return field.replace("_", " ").title()


def _with_article(noun: str) -> str:
    """'an agent reply', 'a summary': the article a reader expects (by the first letter; 'a user' stays)."""
    return f"an {noun}" if noun[:1] in "aeio" else f"a {noun}"


def default_template(inputs: tuple[str, ...] | list[str]) -> str:
    """The paper's template shape: fixed criteria and steps first, inputs next, the form last.

    The fixed part comes first so consecutive prompts share a prefix (llama.cpp's KV cache and the
    hosted APIs' prompt caching both reuse it).
    """
    what = " and ".join(_with_article(field_title(f).lower()) for f in inputs) or "a text"
    parts = [
        INTRO.format(what=what),
        "Evaluation Criteria:\n\n{{name}} ({{scale}}) - {{definition}}\n\n{{anchors}}",
        "Evaluation Steps:\n\n{{steps}}",
        "Example:",
        *[f"{field_title(f)}:\n\n{{{{{f}}}}}" for f in inputs],
        f"{FORM_HEADER}\n\n- {{{{name}}}}:",
    ]
    return "\n\n".join(parts)


def template_of(dimension: Dimension) -> str:
    """The dimension's own template, or the default one for its inputs."""
    return dimension.template or default_template(dimension.inputs)


def placeholders(template: str) -> list[str]:
    """Placeholder names in order of first appearance."""
    seen: dict[str, None] = {}
    for match in PLACEHOLDER.finditer(template):
        seen.setdefault(match.group(1), None)
    return list(seen)


def format_anchors(dimension: Dimension) -> str:
    """One line per scale point, highest first, as G-Eval's prompts list them; examples under their point."""
    lines = []
    for point in reversed(dimension.scale.points):
        text = dimension.anchors.get(point, "").strip()
        lines.append(f"- {point}: {text}" if text else f"- {point}")
        for example in (e for e in dimension.examples if e.point == point):
            lines.append(f"  Example rated {point}:")
            lines.extend(
                f"  {field_title(name)}: {' '.join(str(example.fields.get(name, '')).split())}"
                for name in dimension.inputs
            )
    return "\n".join(lines)


def format_steps(dimension: Dimension) -> str:
    """Numbered evaluation steps."""
    return "\n".join(f"{i}. {step}" for i, step in enumerate(dimension.steps, 1))


def _dimension_values(dimension: Dimension) -> dict[str, str]:
    return {
        "name": dimension.name,
        "definition": dimension.definition.strip(),
        "scale": f"{dimension.scale.min}-{dimension.scale.max}",
        "anchors": format_anchors(dimension),
        "steps": format_steps(dimension),
    }


def render(dimension: Dimension | FrozenPrompt, item: Item | dict[str, str]) -> str:
    """The full judge prompt text for one item (missing input fields render empty)."""
    dim = dimension.dimension if isinstance(dimension, FrozenPrompt) else dimension
    fields = item.fields if isinstance(item, Item) else item
    values = _dimension_values(dim)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        return str(fields.get(name, ""))

    # One pass, so text inside an item that looks like {{name}} is never expanded again.
    return PLACEHOLDER.sub(fill, template_of(dim))


def form_line(dimension: Dimension | FrozenPrompt) -> str:
    """The text the judge's reply should start after, e.g. '- Coherence: '."""
    dim = dimension.dimension if isinstance(dimension, FrozenPrompt) else dimension
    return f"- {dim.name}: "


def messages(dimension: Dimension | FrozenPrompt, item: Item | dict[str, str]) -> tuple[dict[str, str], ...]:
    """Chat messages for one item: a single user turn, as the paper's script sends."""
    return ({"role": "user", "content": render(dimension, item)},)
