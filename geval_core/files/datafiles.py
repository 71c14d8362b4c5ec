"""Read JSONL and CSV rows with their line numbers; look up dotted paths (scores.coherence) in a row.

Every problem is an InputError naming the file and the line, so a user can open the file and fix it.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError

MISSING: Any = object()  # lookup's "no default": raise KeyError instead
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
CSV_SUFFIXES = (".csv", ".tsv")
Row = dict[str, Any]


def file_format(path: str | Path) -> str:
    """'jsonl' or 'csv' from the file name; InputError for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix in CSV_SUFFIXES:
        return "csv"
    raise InputError(
        f"unsupported file type {suffix or '(none)'!r}; use .jsonl (one JSON object per line) "
        "or .csv (a header line, then one row per line)",
        file=str(path),
    )


def read_rows(path: str | Path) -> Iterator[tuple[int, Row]]:
    """Yield (line number, row dict) for every row of a .jsonl or .csv file (CSV values stay strings)."""
    path = Path(path)
    fmt = file_format(path)
    if not path.is_file():
        raise InputError("no such file", file=str(path))
    try:
        if fmt == "csv":
            yield from _csv_rows(path)
        elif path.suffix.lower() == ".json" and _starts_array(path):
            yield from _json_array_rows(path)
        else:
            yield from _jsonl_rows(path)
    except RecursionError:  # JSON nested thousands deep: the parser gives up before reading it
        raise InputError(
            "a row is nested too deeply to read (thousands of levels): not a data row", file=str(path)
        ) from None


def _starts_array(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def _json_array_rows(path: Path) -> Iterator[tuple[int, Row]]:
    """A .json file holding one array of objects; each row's line is where its object starts."""
    name = str(path)
    text = _decode(path.read_bytes(), name)
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"broken JSON: {exc.msg} at column {exc.colno} (expected an array of objects, or "
            "one JSON object per line)",
            file=name,
            line=exc.lineno,
        ) from None
    decoder, position = json.JSONDecoder(), text.index("[") + 1
    for row in rows:
        while text[position] in " \t\r\n,":
            position += 1
        line = text.count("\n", 0, position) + 1
        if not isinstance(row, dict):
            raise InputError(f"expected a JSON object, got {type(row).__name__}", file=name, line=line)
        position = decoder.raw_decode(text, position)[1]
        yield line, row


def _decode(data: bytes, name: str, first_line: int = 1) -> str:
    try:
        return data.decode("utf-8-sig" if first_line == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data[: exc.start].count(b"\n")
        raise InputError(
            f"not UTF-8 text (byte {data[exc.start]:#04x}); save the file as UTF-8", file=name, line=line
        ) from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Row]]:
    name = str(path)
    with path.open("rb") as handle:
        # Split on b"\n" only: a JSON string may legally hold U+2028, which str.splitlines would split.
        for number, raw in enumerate(handle, 1):
            line = _decode(raw, name, number)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"broken JSON: {exc.msg} at column {exc.colno} (expected one JSON object per line)",
                    file=name,
                    line=number,
                ) from None
            if not isinstance(row, dict):
                raise InputError(f"expected a JSON object, got {type(row).__name__}", file=name, line=number)
            yield number, row


def _csv_rows(path: Path) -> Iterator[tuple[int, Row]]:
    name = str(path)
    text = _decode(path.read_bytes(), name)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    # strict: a quote left open must be an error, not one garbled row that swallows the rest of the file.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 1
    try:
        header = next(reader, None)
        if header is None:
            return
        start = reader.line_num + 1  # a quoted cell may span lines: report where the row starts
        for cells in reader:
            if any(c.strip() for c in cells):
                _check_width(cells, header, name, start)
                yield start, dict(zip(header, cells, strict=True))
            start = reader.line_num + 1
    except csv.Error as exc:
        hint = " (a quote opened here is never closed)" if "end of data" in str(exc) else ""
        raise InputError(f"broken CSV: {exc}{hint}", file=name, line=start) from None


def _check_width(cells: list[str], header: list[str], name: str, line: int) -> None:
    # A ragged row usually means a stray delimiter or quote: refuse it rather than guess which cell moved.
    if len(cells) != len(header):
        raise InputError(
            f"broken CSV: this row has {len(cells)} cells where the header has {len(header)} "
            "(a stray comma or quote?)",
            file=name,
            line=line,
        )


def _as_mapping(value: Any) -> Any:
    # Some published sets store a nested dict as a string (JSON or a Python repr); read through it.
    if isinstance(value, str) and value.lstrip().startswith("{"):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(parsed, dict):
                return parsed
    return value


def lookup(row: Row, dotted: str, default: Any = MISSING) -> Any:
    """row["a"]["b"] for "a.b" (list items by index: "a.0"); a key that contains dots matches whole first.

    Raises KeyError when the path is absent and no default is given.
    """
    if dotted in row:
        return row[dotted]
    value: Any = row
    for part in dotted.split("."):
        value = _as_mapping(value)
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif default is MISSING:
            raise KeyError(dotted)
        else:
            return default
    return value


def field_paths(row: Row, limit: int = 30) -> list[str]:
    """The dotted paths of a row's scalar fields (nested dicts walked), for "fields here are ..." hints."""
    paths: list[str] = []
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(row.items())]
    while stack and len(paths) < limit:
        key, value = stack.pop()
        if isinstance(value, dict) and value:
            stack.extend((f"{key}.{k}", v) for k, v in reversed(value.items()))
        else:
            paths.append(key)
    return paths


def require(row: Row, dotted: str, *, file: str, line: int) -> Any:
    """lookup, but an absent path is an InputError naming the file, the line and the fields there are."""
    try:
        return lookup(row, dotted)
    except KeyError:
        fields = ", ".join(field_paths(row)) or "none"
        raise InputError(
            f"no such field (fields here: {fields})", file=file, line=line, field=dotted
        ) from None


def records_of(data: Any, who: str) -> list[Row]:
    """The rows a notebook call was given, as dicts: a pandas DataFrame, an iterable of mappings, or the path of a
    .jsonl / .csv / .json file (read as `geval score --data FILE` reads it). Values are checked by the caller."""
    if isinstance(data, (str, Path)):
        return [row for _, row in read_rows(data)]
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        return data.to_dict("records")
    if not isinstance(data, Iterable) or isinstance(data, (bytes, Mapping)):
        raise TypeError(
            f"{who} takes a pandas DataFrame, a list of dicts (one per item) or a data file's path"
        )
    rows = list(data)
    bad = next((n for n, row in enumerate(rows) if not isinstance(row, Mapping)), None)
    if bad is not None:
        raise InputError(
            f"row {bad} is a {type(rows[bad]).__name__}, not a mapping: give one dict per item "
            "(its fields named like the prompt's inputs)",
            field=None,
        )
    return [dict(row) for row in rows]
