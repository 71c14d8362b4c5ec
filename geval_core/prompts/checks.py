"""Checks run before a dimension is frozen: each finding says what is wrong and how to fix it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..types import Dimension, Scale
from . import DIMENSION_FIELDS, PLACEHOLDER, form_line, placeholders, template_of

# Phrases that say a low rating is the good end; the workbench's scales always mean "max is best".
_POLARITY = re.compile(
    r"\b(lower|smaller|fewer)\s+(scores?\s+|ratings?\s+|numbers?\s+)?(is|are|means?)\s+better\b"
    r"|\b(higher|larger)\s+(scores?\s+|ratings?\s+|numbers?\s+)?(is|are|means?)\s+worse\b"
    r"|\blower\s+is\s+best\b",
    re.IGNORECASE,
)
_GOOD_WORDS = re.compile(r"\b(excellent|perfect|best|flawless|outstanding|ideal)\b", re.IGNORECASE)
_BAD_WORDS = re.compile(r"\b(worst|terrible|awful|incoherent|unreadable|useless|very poor)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Check:
    """One finding: level "error" blocks freezing, "warning" is shown and allowed."""

    level: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.field}: {self.message}"


def dimension_checks(dimension: Dimension) -> list[Check]:
    """Every pre-freeze check on one dimension's own fields (what depends on its judge's provider:
    providers.capabilities.judge_limit_checks)."""
    found: list[Check] = []
    for check in (_basics, _anchors, _template, _form, _polarity, _judge_settings, _steps):
        found.extend(check(dimension))
    return found


def errors(checks: list[Check]) -> list[Check]:
    """Only the findings that block freezing."""
    return [c for c in checks if c.level == "error"]


def _basics(dim: Dimension) -> list[Check]:
    found = []
    if not dim.name.strip():
        found.append(Check("error", "name", "the dimension has no name; the form line ends on it"))
    if not dim.definition.strip():
        found.append(Check("error", "definition", "write a definition of the dimension"))
    if not dim.inputs:
        found.append(Check("error", "inputs", "choose at least one input field the judge reads"))
    if len(set(dim.inputs)) != len(dim.inputs):
        found.append(Check("error", "inputs", "an input field is listed twice"))
    clash = [f for f in dim.inputs if f in DIMENSION_FIELDS]
    if clash:
        found.append(
            Check(
                "error", "inputs", f"input field {clash[0]!r} clashes with a dimension placeholder; rename it"
            )
        )
    if not dim.steps:
        found.append(Check("warning", "steps", "no evaluation steps: generate them or write them by hand"))
    return found


def _anchors(dim: Dimension) -> list[Check]:
    missing = [p for p in dim.scale.points if not dim.anchors.get(p, "").strip()]
    outside = sorted(p for p in dim.anchors if p not in dim.scale.points)
    found = []
    if missing:
        found.append(
            Check("error", "anchors", f"describe every scale point; missing: {', '.join(map(str, missing))}")
        )
    if outside:
        found.append(
            Check(
                "error",
                "anchors",
                f"anchors for {', '.join(map(str, outside))} are outside the scale {dim.scale}; remove them",
            )
        )
    seen: dict[str, int] = {}
    for point in dim.scale.points:
        text = " ".join(dim.anchors.get(point, "").split()).lower()
        if text and text in seen:
            found.append(
                Check(
                    "error",
                    "anchors",
                    f"the anchors of {seen[text]} and {point} are identical: the "
                    "judge cannot tell these points apart; describe each one",
                )
            )
        seen.setdefault(text, point)
    return found


def _template(dim: Dimension) -> list[Check]:
    names = placeholders(template_of(dim))
    found = []
    missing = [f for f in dim.inputs if f not in names]
    if missing:
        found.append(
            Check(
                "error",
                "template",
                f"the template never shows the input field(s) {', '.join(missing)}; add {{{{{missing[0]}}}}}",
            )
        )
    unknown = [n for n in names if n not in DIMENSION_FIELDS and n not in dim.inputs]
    if unknown:
        found.append(
            Check(
                "error",
                "template",
                f"unknown placeholder(s) {', '.join(unknown)}: add them to the input fields or remove them",
            )
        )
    if dim.steps and "steps" not in names:
        found.append(
            Check("warning", "template", "the template does not show the evaluation steps ({{steps}})")
        )
    return found


def _form(dim: Dimension) -> list[Check]:
    # Render only the dimension's own placeholders: an input placeholder at the very end is an error too.
    values = {"name": dim.name}
    text = PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template_of(dim)).rstrip()
    expected = form_line(dim).rstrip()
    if not dim.name.strip() or text.endswith(expected):
        return []
    return [
        Check(
            "error",
            "template",
            f"the template must end on the form line {expected!r} so the "
            "judge's reply starts with the rating",
        )
    ]


def _polarity(dim: Dimension) -> list[Check]:
    found = []
    texts = {
        "definition": dim.definition,
        "steps": "\n".join(dim.steps),
        "template": dim.template,
        **{f"anchors.{k}": v for k, v in dim.anchors.items()},
    }
    for field, text in texts.items():
        match = _POLARITY.search(text or "")
        if match:
            found.append(
                Check(
                    "error",
                    field,
                    f"{match.group(0)!r} contradicts the scale, where {dim.scale.max} is best; reword it",
                )
            )
    low, high = dim.anchors.get(dim.scale.min, ""), dim.anchors.get(dim.scale.max, "")
    if dim.scale.min != dim.scale.max and _GOOD_WORDS.search(low) and _BAD_WORDS.search(high):
        found.append(
            Check(
                "warning",
                "anchors",
                f"the anchors look reversed: {dim.scale.min} reads as "
                f"the best and {dim.scale.max} as the worst",
            )
        )
    return found


def _judge_settings(dim: Dimension) -> list[Check]:
    judge, found = dim.judge, []
    if judge.mode == "sampling" and judge.n > 1 and judge.temperature == 0:
        found.append(
            Check(
                "warning",
                "judge.temperature",
                f"{judge.n} replies at temperature 0 are near copies; use a temperature above 0",
            )
        )
    return found


# Words that name an input field in G-Eval steps; a step naming one the prompt does not have was written for
# another dimension (e.g. Coherence's "the summary" left in a dimension on context and response).
FIELD_WORDS = (
    "document",
    "summary",
    "article",
    "reference",
    "response",
    "answer",
    "question",
    "context",
    "dialogue",
    "conversation",
    "transcript",
    "passage",
    "premise",
    "hypothesis",
    "query",
    "translation",
    "caption",
    "essay",
)


def _steps(dim: Dimension) -> list[Check]:
    found = []
    if len(dim.steps) == 1:
        found.append(
            Check(
                "warning",
                "steps",
                "only one evaluation step: G-Eval's steps break the judgement into "
                "several checks; generate them again or add steps by hand",
            )
        )
    rated = [n for n, step in enumerate(dim.steps, 1) if _ends_on_a_rating(step, dim.scale)]
    if len(dim.steps) > 1 and len(rated) == len(dim.steps):
        found.append(
            Check(
                "error",
                "steps",
                f"every step ends on a rating ({', '.join(map(str, rated))}): those are "
                "scores, not steps; a step says what to check (generate them again)",
            )
        )
    own = {w.lower() for f in dim.inputs for w in re.split(r"[\W_]+", f) if w}
    for n, step in enumerate(dim.steps, 1):
        # "the summary", "each document": a field named as the thing read; "a generic question" is a word, not a field.
        named = [
            w
            for w in FIELD_WORDS
            if w not in own and re.search(rf"\b(?:the|this|that|each|its)\s+{w}s?\b", step, re.IGNORECASE)
        ]
        if named:
            found.append(
                Check(
                    "warning",
                    "steps",
                    f"step {n} names {', '.join(map(repr, named))}: not an "
                    f"input of this prompt ({', '.join(dim.inputs) or 'none'}); "
                    "reword it or generate the steps again",
                )
            )
    return found


def _ends_on_a_rating(step: str, scale: Scale) -> bool:
    """Whether a step ends on a number of the scale ("1. Read the customer's message: 3")."""
    found = re.search(r"[:=-]\s*(-?\d+)(?:\s*/\s*\d+)?\s*\.?\s*$", step)
    return found is not None and int(found.group(1)) in scale
