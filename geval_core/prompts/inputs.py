"""Inputs first: a prompt scores only data that holds every input it reads, checked before any call.

A prompt that reads `document` and `summary` run on a dialogue set renders empty placeholders and the
judge still answers with a number; that run "finishes" with scores that mean nothing. So every path
that scores (the runner, batch files, the Score page, `score_item`) asks `missing_inputs` first.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

from ..errors import InputError
from ..types import Dimension, FrozenPrompt, Item


def missing_inputs(prompt: FrozenPrompt | Dimension, fields: Iterable[str]) -> list[str]:
    """The inputs of a prompt (or of a dimension still being designed) that `fields` lacks, in its order."""
    have = set(fields)
    inputs = prompt.dimension.inputs if isinstance(prompt, FrozenPrompt) else prompt.inputs
    return [name for name in inputs if name not in have]


def mismatch_message(prompt: FrozenPrompt, fields: Iterable[str], where: str) -> str | None:
    """Why the data at `where` cannot be scored by the prompt (its inputs, the data's fields, the closest
    match), or None when every input is there."""
    fields = sorted(set(fields))
    missing = missing_inputs(prompt, fields)
    if not missing:
        return None
    hints = []
    for name in missing:
        close = get_close_matches(name, fields, n=1, cutoff=0.5)
        hints.append(f"{name!r} (closest field: {close[0]!r})" if close else repr(name))
    return (f"{prompt.label} reads {', '.join(prompt.dimension.inputs)} but {where} has no "
            f"{', '.join(hints)}; its fields are {', '.join(fields) or 'none'}. Map the data's fields "
            "to the prompt's inputs when importing it, or choose a prompt written for this data")


def require_inputs(prompt: FrozenPrompt, items: Iterable[Item | dict[str, str]], where: str) -> None:
    """InputError unless every item holds every input of the prompt (named by its first failing item)."""
    for item in items:
        fields = item.fields if isinstance(item, Item) else item
        message = mismatch_message(prompt, fields, where)
        if message is not None:
            item_id = item.id if isinstance(item, Item) else None
            raise InputError(message + (f" (first at item {item_id!r})" if item_id else ""), field=None)
