"""Uploaded dataset files: keep them on disk for the readers, list their (dotted) columns, guess a mapping."""

from __future__ import annotations

import hashlib
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

SAMPLE_ROWS = 200  # rows inspected to list the columns; the import itself reads every row
_UPLOADS = Path(tempfile.gettempdir()) / "geval-uploads"


def save_upload(name: str, data: bytes) -> Path:
    """Write an upload to a temp file named by its content hash (the readers need a path and suffix)."""
    suffix = Path(name).suffix.lower() or ".csv"
    _UPLOADS.mkdir(parents=True, exist_ok=True)
    path = _UPLOADS / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not path.exists():
        path.write_bytes(data)
    return path


def tag(name: str, data: bytes) -> str:
    """A short id of one upload (name and content): the key suffix of its mapping widgets."""
    return hashlib.sha256(name.encode("utf-8") + b"\0" + data).hexdigest()[:10]


def renamed_error(exc, path: Path, name: str):
    """The same InputError with the uploaded file's name where the temporary copy's path was."""
    from geval_core.errors import InputError

    renamed = InputError(str(exc).replace(str(path), name))
    renamed.file, renamed.line, renamed.field = name, exc.line, exc.field
    return renamed


def first_rows(path: Path) -> list[dict[str, Any]]:
    """The first rows of a CSV/JSONL file (InputError with file and line on a broken one)."""
    from geval_core.files.datafiles import read_rows

    return [row for _, row in itertools.islice(read_rows(path), SAMPLE_ROWS)]


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every scalar column of the rows as a dotted path ('scores.coherence'), in first-seen order."""
    from geval_core.files.datafiles import field_paths

    # An unnamed column (a CSV's empty header) has no path to map.
    return list(dict.fromkeys(path for row in rows for path in field_paths(row, limit=sys.maxsize) if path))


def guess_id(cols: list[str]) -> str:
    """The column most likely to be the item id."""
    for name in ("id", "item_id", "uid", "key"):
        if name in cols:
            return name
    return cols[0] if cols else "id"


GROUP_NAMES = (
    "doc_id",
    "document_id",
    "doc",
    "group",
    "source_id",
    "conversation_id",
    "topic",
    "topic_id",
    "prompt_id",
    "question_id",
    "input_id",
    "context_id",
    "dialogue_id",
    "thread_id",
    "task_id",
)


def guess_group(cols: list[str], id_column: str | None = None) -> str | None:
    """A column that names what several items share (a document, a topic, a prompt), for group-level agreement:
    a known name, else another column ending in _id."""
    for name in GROUP_NAMES:
        if name in cols:
            return name
    return next((c for c in cols if c.lower().endswith("_id") and c != (id_column or guess_id(cols))), None)


def guess_inputs(cols: list[str], inputs: list[str]) -> list[str]:
    """The columns named like an input of a frozen prompt (document, summary, context, ...), in column order."""
    wanted = {i.lower() for i in inputs}
    return [c for c in cols if field_name(c) in wanted]


def field_name(column: str) -> str:
    """'scores.coherence' -> 'coherence': the default name of a mapped field."""
    return column.rsplit(".", 1)[-1].strip().replace(" ", "_").lower() or column


_RATING_AFFIXES = (
    "human",
    "rating",
    "ratings",
    "score",
    "scores",
    "gold",
    "label",
    "expert",
    "crowd",
    "avg",
    "mean",
)


def rating_name(column: str, dimensions: list[str]) -> str:
    """The default name of a human-rating column: the dimension it rates ('human_helpfulness' -> 'helpfulness').

    A known dimension named in the column wins; otherwise words like human_, _rating or scores. are dropped.
    """
    name = field_name(column)
    words = [w for w in name.replace("-", "_").split("_") if w]
    for dimension in sorted(dimensions, key=len, reverse=True):
        if dimension.lower() in words or dimension.lower() == name:
            return dimension.lower()
    kept = [w for w in words if w not in _RATING_AFFIXES]
    return "_".join(kept) or name
