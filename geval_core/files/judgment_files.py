"""Judgments as CSV (nested values as JSON text) or JSONL: what `runs export` and the Score page download."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from ..errors import InputError
from ..judgment import Judgment

__all__ = ["JUDGMENT_FIELDS", "export_judgments", "write_judgments"]

JUDGMENT_FIELDS = Judgment.columns()
# Files name the item "id", as `geval score --out` does and `geval agree --id-field` expects by default.
FILE_FIELDS = tuple("id" if f == "item_id" else f for f in JUDGMENT_FIELDS)


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(
            {str(k): v for k, v in value.items()} if isinstance(value, dict) else list(value),
            ensure_ascii=False,
        )
    return "" if value is None else value


def write_judgments(rows: Iterable[dict[str, Any]], out: TextIO, format: str = "jsonl") -> None:
    """Write judgments to an open text stream as CSV (nested values as JSON text) or JSONL."""
    rows = list(rows)
    if format not in ("csv", "jsonl"):
        raise InputError(f"judgments export format must be csv or jsonl, got {format!r}")
    rows = [{"id": r.get("item_id"), **{k: v for k, v in r.items() if k != "item_id"}} for r in rows]
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in FILE_FIELDS))
    columns = [*FILE_FIELDS, *extra]
    if format == "jsonl":
        for row in rows:
            record = {k: row.get(k) for k in columns}
            distribution = record.get("distribution")
            if isinstance(distribution, dict):
                record["distribution"] = {str(k): v for k, v in distribution.items()}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})


def export_judgments(rows: Iterable[dict[str, Any]], path: str | Path, format: str | None = None) -> Path:
    """Write judgments to a .csv or .jsonl file; format defaults from the suffix (else jsonl)."""
    path = Path(path)
    format = format or path.suffix.lstrip(".").lower() or "jsonl"
    if format not in ("csv", "jsonl"):
        raise InputError(f"judgments export format must be csv or jsonl, got {format!r}", file=str(path))
    with path.open("w", encoding="utf-8", newline="") as out:
        write_judgments(rows, out, format)
    return path
