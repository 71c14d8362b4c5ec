"""Inputs first: a prompt scores only data that holds every input it reads, checked before any call.

A prompt that reads `document` and `summary` run on a dialogue set renders empty placeholders and the
judge still answers with a number; that run "finishes" with scores that mean nothing. So every path
that scores (the runner, batch files, the Score page, `score_item`) asks `missing_inputs` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from typing import Any

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
    return (
        f"{prompt.label} reads {', '.join(prompt.dimension.inputs)} but {where} has no "
        f"{', '.join(hints)}; its fields are {', '.join(fields) or 'none'}. Map the data's fields "
        "to the prompt's inputs (rename the columns, or map them when importing a file), or choose a prompt "
        "written for this data"
    )


def require_inputs(prompt: FrozenPrompt, items: Iterable[Item | dict[str, str]], where: str) -> None:
    """InputError unless every item holds every input of the prompt (named by its first failing item)."""
    for item in items:
        fields = item.fields if isinstance(item, Item) else item
        message = mismatch_message(prompt, fields, where)
        if message is not None:
            item_id = item.id if isinstance(item, Item) else None
            raise InputError(message + (f" (first at item {item_id!r})" if item_id else ""), field=None)


def conversation_text(value: object) -> str | None:
    """A conversation in the chat APIs' shape (a list of {"role", "content"} messages, content text) as the turns a
    judge reads, one "role: content" per message; None for anything else."""
    if not isinstance(value, list) or not value:
        return None
    turns = []
    for message in value:
        if not (
            isinstance(message, Mapping)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            return None
        turns.append(f"{message['role']}: {message['content']}")
    return "\n".join(turns)


def cell_text(value: object, row: int, column: str, required: bool) -> str | None:
    """One cell of a caller's rows as the text a judge reads, by one rule: a string as it is; a finite number or a
    bool as its text; a conversation (chat messages) as its turns; a missing value (None, NaN, an empty string)
    refused when `required` (an input of the prompt), else None; anything else (bytes, a list, a dict, an object)
    refused in an input, left out (None) elsewhere. Never a placeholder like "nan" or "b'...'" sent to a judge."""
    turns = conversation_text(value)
    if turns is not None:
        return turns
    if isinstance(value, str):
        if not value.strip() and required:
            raise InputError(
                f"row {row}: {column!r} is empty; every input of the prompt needs text", field=column
            )
        return value
    if (
        value is None
        or (isinstance(value, float) and value != value)
        or type(value).__name__ in ("NAType", "NaTType")
    ):
        if required:
            raise InputError(
                f"row {row}: {column!r} is missing (None or NaN); every input of the prompt needs "
                "text: drop or fill the row first",
                field=column,
            )
        return None
    if isinstance(value, bool) or (isinstance(value, (int, float)) and abs(value) != float("inf")):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (bytes, list, dict)):  # a numpy scalar
        return cell_text(value.item(), row, column, required)
    if not required:
        return None  # not read by the judge: left out rather than stored as its repr
    raise InputError(
        f"row {row}: {column!r} holds a {type(value).__name__}, not text; convert it to a string "
        "first (a judge would read its Python repr)",
        field=column,
    )


def rows_as_fields(rows: Iterable[Mapping[Any, object]], inputs: Iterable[str]) -> list[dict[str, str]]:
    """Rows as dicts of text by `cell_text`'s rule, every input of the prompt required; checked whole before any
    call. Missing other fields are left out."""
    required = set(inputs)
    out = []
    for n, row in enumerate(rows):
        fields = {}
        for key, value in row.items():
            text = cell_text(value, n, str(key), str(key) in required)
            if text is not None:
                fields[str(key)] = text
        out.append(fields)
    return out
