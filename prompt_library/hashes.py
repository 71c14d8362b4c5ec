"""Row hashes of results (judgments, runs, ratings) and a run's digest over its judgments.

A row hash is sha256 over the canonical JSON of {"table", "row"}: the row's content columns as SQLite
stores them, NULLs left out (so a column a later migration adds leaves the hashes of older rows valid).
Runs hash only what never changes (id, prompt, dataset, judge, items, created_at); their status and
totals move as the run goes on. A run's digest is sha256 over its judgments' sorted row hashes, every
attempt included: a judgment deleted or added after the run finished changes it.

These hashes are unkeyed: anyone who can write the file can recompute them. They catch a change made
with plain SQL (a trigger dropped, a row edited, the trigger re-created), not a forger who re-hashes;
a signature with a key the user keeps does that (`signing.py`).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Iterable
from typing import Any

from geval_core.prompts import canonical_hash

HASHED_TABLES = ("judgments", "runs", "ratings")
RUN_FIELDS = ("id", "prompt_id", "dataset_id", "judge", "item_ids", "created_at")
_NOT_CONTENT = {"row_hash", "digest"}


def content_fields(table: str, columns: Iterable[str]) -> list[str]:
    """The columns a table's row hash covers."""
    if table == "runs":
        return list(RUN_FIELDS)
    return [c for c in columns if c not in _NOT_CONTENT]


def row_hash(table: str, row: dict[str, Any]) -> str:
    """The hash of one row as stored (values already in their stored types: see `as_stored`)."""
    content = {c: row[c] for c in content_fields(table, row) if row.get(c) is not None}
    return canonical_hash({"table": table, "row": content})


def run_digest(row_hashes: Iterable[str | None]) -> str:
    """sha256 over a run's judgment row hashes, sorted (one per line)."""
    return hashlib.sha256("\n".join(sorted(h or "" for h in row_hashes)).encode("ascii")).hexdigest()


def affinities(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """Column -> SQLite type affinity (INTEGER, REAL, TEXT, BLOB, NUMERIC), from the declared types."""
    return {name: affinity(kind) for _, name, kind, *_ in conn.execute(f"PRAGMA table_info({table})")}


def affinity(declared: str) -> str:
    """The type affinity SQLite gives a declared column type."""
    # SQLite's own rules (https://sqlite.org/datatype3.html, 3.1), in its order.
    kind = (declared or "").upper()
    if "INT" in kind:
        return "INTEGER"
    if any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not kind or "BLOB" in kind:
        return "BLOB"
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def as_stored(row: dict[str, Any], types: dict[str, str]) -> dict[str, Any]:
    """A row about to be inserted, its values converted as SQLite will store them (3 in a REAL column is
    3.0, True is 1, NaN is NULL), so the hash taken now is the one verify recomputes from the file."""
    # Text and NULL are stored as they are whatever the column: most of a row, so they skip the call.
    return {k: v if v is None or type(v) is str else _stored(v, types.get(k, "BLOB")) for k, v in row.items()}


def _stored(value: Any, affinity: str) -> Any:
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if affinity == "REAL" and isinstance(value, int):
        return float(value)
    if (
        affinity in ("INTEGER", "NUMERIC")
        and isinstance(value, float)
        and value.is_integer()
        and abs(value) < 2**63
    ):
        return int(value)
    if affinity == "TEXT" and isinstance(value, int):  # a float's text is SQLite's (%.15g), not Python's
        return str(value)
    return value
