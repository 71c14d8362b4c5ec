"""Suggested edits: a designer model reads the dev items where judge and people disagree and proposes a revised
definition and anchors, each change with the items that motivated it. A person accepts, edits or rejects it;
nothing here tunes a prompt by itself, and nothing reads the sealed test side.

The prompt that asks for suggestions is versioned (SUGGEST_VERSION) and shown to the user as sent.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace
from typing import Any

from ..prompts.render import format_anchors
from ..scoring.think import final_text
from ..types import Dimension, Judge, JudgeRequest, JudgeSettings

__all__ = ["SUGGEST_VERSION", "apply_suggestion", "parse_suggestion", "suggest_edits", "suggestion_prompt"]

SUGGEST_VERSION = "suggest-edits/1"
MAX_ITEM_CHARS = 600  # each disputed item's text, shortened: the designer reads many of them
SUGGEST_MAX_TOKENS = 700
PRIMER = "DEFINITION:"
_LINE = re.compile(r"^\s*(DEFINITION|ANCHOR\s+(-?\d+)|REASON)\s*:\s*(.*)$", re.IGNORECASE)
_ITEMS = re.compile(r"\(items?:\s*([^)]*)\)\s*$", re.IGNORECASE)

TEMPLATE = """You improve the rubric an automatic judge uses to rate texts, so that its ratings agree with people.

Dimension: {name} (scale {low}-{high})
Definition: {definition}
Scale points:
{anchors}

Items where the judge and people disagreed most (people's rating, the judge's score):
{items}

Revise the definition and the scale-point descriptions so that a careful reader would rate these items as the
people did. Keep what works; change only what these items show is unclear. Reply in exactly this form:
DEFINITION: <the revised definition, one paragraph>
ANCHOR <point>: <the revised description of that scale point> (one line per point, {high} down to {low})
REASON: <one change and why> (items: <ids of the items that show it>)
"""


def _shorten(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= MAX_ITEM_CHARS else flat[: MAX_ITEM_CHARS - 1] + "…"


def suggestion_prompt(dimension: Dimension, disputed: list[dict[str, Any]]) -> str:
    """The designer model's prompt, as sent (template SUGGEST_VERSION)."""
    items = "\n".join(
        f"- [{row['item_id']}] people {row['human']:g}, judge {row['score']:.2f}: "
        + " | ".join(f"{name}: {_shorten(row['fields'].get(name, ''))}" for name in dimension.inputs)
        for row in disputed
    )
    return TEMPLATE.format(
        name=dimension.name,
        low=dimension.scale.min,
        high=dimension.scale.max,
        definition=dimension.definition.strip(),
        anchors=format_anchors(replace(dimension, examples=())),
        items=items or "(none)",
    )


def parse_suggestion(text: str, dimension: Dimension) -> dict[str, Any]:
    """The reply's definition, anchors (points on the scale only) and reasons; `problem` when nothing was read."""
    out: dict[str, Any] = {"definition": None, "anchors": {}, "reasons": [], "raw": text, "problem": None}
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match or not match.group(3).strip():
            continue
        head, body = match.group(1).upper(), match.group(3).strip()
        if head == "DEFINITION" and out["definition"] is None:
            out["definition"] = body
        elif head == "REASON":
            found = _ITEMS.search(body)
            ids = [i.strip() for i in found.group(1).split(",") if i.strip()] if found else []
            out["reasons"].append({"change": _ITEMS.sub("", body).strip(), "items": ids})
        elif match.group(2) is not None and int(match.group(2)) in dimension.scale.points:
            out["anchors"].setdefault(int(match.group(2)), body)
    if out["definition"] is None and not out["anchors"]:
        out["problem"] = (
            "the designer model's reply has no DEFINITION: or ANCHOR n: line; it is shown as it came "
            "and nothing was changed"
        )
    return out


def apply_suggestion(dimension: Dimension, suggestion: dict[str, Any]) -> Dimension:
    """The dimension with the suggested definition and anchors (what the reply did not give stays)."""
    return replace(
        dimension,
        definition=suggestion.get("definition") or dimension.definition,
        anchors={**dimension.anchors, **{int(k): v for k, v in (suggestion.get("anchors") or {}).items()}},
    )


def diff_lines(before: Dimension, after: Dimension) -> list[str]:
    """A unified diff of the definition and the anchors (what a person reviews before accepting)."""

    def text(dim: Dimension) -> list[str]:
        return [
            f"Definition: {dim.definition.strip()}",
            *format_anchors(replace(dim, examples=())).splitlines(),
        ]

    return list(difflib.unified_diff(text(before), text(after), "current", "suggested", lineterm=""))


def suggest_edits(
    dimension: Dimension, disputed: list[dict[str, Any]], judge: Judge, settings: JudgeSettings
) -> dict[str, Any]:
    """Ask the designer model once; the suggestion parsed, the revised dimension, the diff and the prompt sent."""
    prompt = suggestion_prompt(dimension, disputed)
    request = JudgeRequest(
        ({"role": "user", "content": prompt},),
        settings.model,
        temperature=0.0,
        max_tokens=SUGGEST_MAX_TOKENS,
        logprobs=False,
        top_logprobs=0,
        n=1,
        assistant_prefix=PRIMER,
    )
    reply = judge.judge(request)
    text = final_text(reply.choices[0].text if reply.choices else "") or ""
    if judge.primes:
        text = PRIMER + text
    suggestion = parse_suggestion(text, dimension)
    revised = apply_suggestion(dimension, suggestion)
    known = {row["item_id"] for row in disputed}
    for reason in suggestion["reasons"]:
        reason["items"] = [i for i in reason["items"] if i in known]  # only items it was shown
    return {
        "version": SUGGEST_VERSION,
        "prompt": prompt,
        "model_version": reply.model_version,
        **suggestion,
        "dimension": revised.to_dict(),
        "diff": diff_lines(dimension, revised),
    }
