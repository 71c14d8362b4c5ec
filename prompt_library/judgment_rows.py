"""A judgment as a stored row and back: the one encoder (for INSERT) and the one decoder (for reads).

Kept together so a judgment written now has exactly the values a read of its row returns, which lets a
results file be written as judgments commit, from the judgment in hand, with no read of the row.
"""

from __future__ import annotations

from typing import Any

from geval_core.judgment import Judgment

from .base import dumps, loads

JUDGMENT_COLUMNS = tuple(c for c in Judgment.columns() if c != "item_id")
JSON_COLUMNS = ("distribution", "replies")
BOOL_COLUMNS = ("ambiguous", "differs", "fallback", "cached")


def encoded(run_id: str, judgment: Judgment, created_at: str) -> dict[str, Any]:
    """The columns of a judgment row before its stored types (JSON encoded, booleans as 0/1)."""
    row = {"run_id": run_id, "item_id": judgment.item_id, "created_at": created_at}
    for key in JUDGMENT_COLUMNS:
        value = getattr(judgment, key)
        if key in JSON_COLUMNS:  # json writes int keys as strings, tuples as lists
            value = dumps(value) if value is not None else None
        elif key in BOOL_COLUMNS:
            value = int(bool(value))
        row[key] = value
    row["extra"] = "{}"
    return row


def decoded(row: dict[str, Any], dist: dict[str, float] | None, replies: list[str]) -> dict[str, Any]:
    """A stored judgment row as a dict, its JSON columns decoded already (distribution, replies)."""
    out = {"item_id": row["item_id"]}
    for key in JUDGMENT_COLUMNS:
        out[key] = row[key]
    out["distribution"] = {int(k): float(v) for k, v in dist.items()} if dist is not None else {}
    out["replies"] = replies
    for key in BOOL_COLUMNS:
        out[key] = bool(row[key])
    if row["extra"] not in (None, "{}"):  # most judgments have none: no JSON decode for them
        for key, value in loads(row["extra"]).items():
            out.setdefault(key, value)
    return out


def latest_attempts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per item, its latest attempt (earlier ones are errored attempts it succeeded)."""
    if all(r["attempt"] == 0 for r in rows):  # almost every run: no retry at all, nothing to drop
        return rows
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["item_id"] not in latest or row["attempt"] > latest[row["item_id"]]["attempt"]:
            latest[row["item_id"]] = row
    return list(latest.values())
