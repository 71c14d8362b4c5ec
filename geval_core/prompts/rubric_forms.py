"""Rubric-form variants of a dimension for the rubric-form probes: the same descriptions, another form.

Three variants, each changing one thing about how the rubric is shown:
- reverse-anchors: the same labels, the scale points listed lowest first instead of highest first;
- shift-labels: the same descriptions in the same order under labels shifted (1-5 shown as 0-4; 0-4 as 1-5);
- reverse-scale: the labels reversed (on 1-5, 1 now describes the best and 5 the worst), the descriptions in
  their original order on the page.
A rating r' of a variant maps back onto the original scale as sign * r' + offset; that map is linear, so the
probability-weighted score (Eq. 1) over the variant's own scale maps back exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import InputError
from ..types import Dimension, Example, Scale
from .render import PLACEHOLDER, format_anchors, template_of

__all__ = [
    "VARIANTS",
    "RubricForm",
    "derive",
    "is_probe_name",
    "ordered_anchors",
    "probe_name",
    "rewrite_mentions",
]

VARIANTS = ("reverse-anchors", "shift-labels", "reverse-scale")


def probe_name(name: str, variant: str) -> str:
    """'coherence' -> 'coherence.probe-reverse-scale': the library name of a variant, never one of the user's."""
    suffix = f".probe-{variant}"
    return name[: 100 - len(suffix)] + suffix


def is_probe_name(name: str) -> bool:
    """Whether a library prompt name is a rubric-form variant's (for lists that show only the user's prompts)."""
    return any(name.endswith(f".probe-{variant}") for variant in VARIANTS)


# Where a definition, step or anchor names scale points: a range ("1-5", "1 to 5", "between 1 and 5",
# "out of 5") or one point ("a score of 5", "1 is the lowest"). Other numbers are left alone.
_MENTION = re.compile(
    r"(?<![\d\-])(?<!\d\.)(?P<a>\d+)(?P<sep>\s*(?:-|–|—|\bto\b|\band\b)\s*)(?P<b>\d+)(?!\.?\d)"
    r"|(?P<out>\bout of\s+)(?P<top>\d+)(?!\.?\d)"
    r"|(?P<word>\b(?:scores?|ratings?|rated|rate|grades?|points?)\s+(?:of\s+)?)(?P<p>\d+)(?!\.?\d)"
    r"(?!\s*(?:-|–|—|to\b|and\b)\s*\d)"
    r"|(?<![\d\-])(?<!\d\.)(?P<q>\d+)(?=\s+(?:is|means|indicates|represents|stands for)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RubricForm:
    """A derived rubric: its dimension, how its ratings map back onto the original scale, what was rewritten."""

    variant: str
    dimension: Dimension
    sign: int  # original rating = sign * variant rating + offset
    offset: int
    rewritten: int = 0  # scale mentions rewritten in the definition, steps and anchors

    def to_original(self, value: float) -> float:
        """A variant rating or score on the original scale."""
        return self.sign * value + self.offset

    @property
    def mapping(self) -> str:
        """'r -> r + 1', 'r -> 6 - r', 'r -> r': how ratings are mapped back, for reports."""
        if self.sign < 0:
            return f"r -> {self.offset} - r"
        return (
            "r -> r" if self.offset == 0 else f"r -> r {'+' if self.offset > 0 else '-'} {abs(self.offset)}"
        )


def ordered_anchors(dimension: Dimension, ascending: bool) -> str:
    """The anchors as `format_anchors` lists them (highest first), or lowest first; examples stay under their point."""
    blocks: list[list[str]] = []
    for line in format_anchors(dimension).splitlines():
        if line.startswith("  ") and blocks:  # an example line belongs to the point above it
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return "\n".join(line for block in (reversed(blocks) if ascending else blocks) for line in block)


def rewrite_mentions(
    text: str, scale: Scale, new_scale: Scale, label: Callable[[int], int]
) -> tuple[str, int]:
    """(the text with its mentions of scale points in the variant's labels, how many were rewritten).

    A range's ends become the variant's ends (1-5 reversed stays 1-5); a single point takes its new label."""
    ends = {scale.min: new_scale.min, scale.max: new_scale.max}
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        out = _rewritten(match.groupdict(), scale, ends, label) or match.group(0)
        count += out != match.group(0)
        return out

    return _MENTION.sub(one, text), count


def _rewritten(
    groups: dict[str, str | None], scale: Scale, ends: dict[int, int], label: Callable[[int], int]
) -> str | None:
    """One mention in the variant's labels; None when it names no scale point (left as it is)."""
    if groups["a"] is not None and groups["b"] is not None:
        a, b = int(groups["a"]), int(groups["b"])
        if {a, b} != {scale.min, scale.max} or a == b:
            return None
        return f"{ends[a]}{groups['sep']}{ends[b]}"
    if groups["top"] is not None:
        return f"{groups['out']}{ends[scale.max]}" if int(groups["top"]) == scale.max else None
    point = int(groups["p"] or groups["q"] or "")
    return f"{groups['word'] or ''}{label(point)}" if point in scale else None


def _labels(variant: str, scale: Scale) -> tuple[int, int]:
    """(sign, offset) of the map back: original = sign * variant rating + offset."""
    if variant == "reverse-anchors":
        return 1, 0
    if variant == "shift-labels":
        shift = 1 if scale.min == 0 else -scale.min  # shown from 0, or from 1 when it already starts at 0
        return 1, -shift
    if variant == "reverse-scale":
        return -1, scale.min + scale.max
    raise InputError(f"unknown rubric variant {variant!r}; known: {', '.join(VARIANTS)}", field="variants")


def derive(dimension: Dimension, variant: str) -> RubricForm:
    """The dimension with its rubric shown in the variant's form, and the map of its ratings back."""
    sign, offset = _labels(variant, dimension.scale)
    template = template_of(dimension)
    if "anchors" not in {m.group(1) for m in PLACEHOLDER.finditer(template)}:
        raise InputError(
            "the prompt's template shows no {{anchors}}: there is no rubric whose form could change",
            field="template",
        )

    def label(point: int) -> int:  # the inverse of the map back (sign is +1 or -1)
        return sign * (point - offset)

    scale = dimension.scale
    new_scale = Scale(min(label(scale.min), label(scale.max)), max(label(scale.min), label(scale.max)))
    count = 0

    def rewrite(text: str) -> str:
        nonlocal count
        out, n = (
            rewrite_mentions(text, scale, new_scale, label) if variant != "reverse-anchors" else (text, 0)
        )
        count += n
        return out

    derived = replace(
        dimension,
        scale=new_scale,
        definition=rewrite(dimension.definition),
        anchors={label(p): rewrite(t) for p, t in dimension.anchors.items()},
        steps=tuple(rewrite(s) for s in dimension.steps),
        examples=tuple(
            Example(label(e.point), e.item_id, e.fields, e.dataset_id) for e in dimension.examples
        ),
    )
    # The original lists its best point first; reverse-anchors lists the worst first, the other two keep the
    # descriptions' order on the page (reverse-scale's best point is now its lowest label, so it comes first).
    listing = ordered_anchors(derived, ascending=variant != "shift-labels")
    if "{{" in listing:
        raise InputError(
            "an anchor or example holds '{{', which a derived template would read as a placeholder",
            field="anchors",
        )
    derived = replace(
        derived,
        template=PLACEHOLDER.sub(lambda m: listing if m.group(1) == "anchors" else m.group(0), template),
    )
    return RubricForm(variant, derived, sign, offset, count)
