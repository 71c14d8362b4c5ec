"""A new dataset version stored from items read twice, never held whole: a file of 100,000 rows is imported in
the memory of a few rows.

The first read (`VersionScan`) checks every row and adds up what the version's row records (its hash, item count,
input fields, rating names, ratings missing) before anything is written. The second read, inside the write
transaction, inserts the items, feeds the seal's check and hashes them again: a file that changed between the two
reads is refused and nothing is stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geval_core.errors import InputError
from geval_core.files.datafiles import read_rows
from geval_core.types import Item

__all__ = ["VersionScan", "file_items", "rehashed", "scan_items"]


def _is_rater_column(name: str) -> bool:
    """NAME.k, one rater's rating, beside NAME, their mean."""
    return name.rpartition(".")[2].isdigit()


@dataclass
class VersionScan:
    """What a version's items add up to, item by item: hash, count, fields, ratings and the ratings missing."""

    name: str
    ids: set[str] = field(default_factory=set)
    fields: dict[str, None] = field(default_factory=dict)
    human: set[str] = field(default_factory=set)
    rated: Counter[str] = field(default_factory=Counter)
    # Rating names the mapping asks for (its NAME.k columns too): counted as missing where an item has none.
    expected: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from .datasets import VersionHash

        self.hash = VersionHash(self.name)

    def add(self, item: Item, where: dict[str, Any] | None = None) -> None:
        """Check and count the next item (an empty or repeated id is refused, with its place when known)."""
        if not str(item.id).strip():
            raise InputError(f"item {len(self.ids) + 1} has an empty id", field="id", **(where or {}))
        if item.id in self.ids:
            raise InputError(f"duplicate item id {item.id!r}", field="id", **(where or {}))
        self.ids.add(item.id)
        self.hash.add(item)
        self.fields.update(dict.fromkeys(item.fields))
        self.human.update(item.human)
        self.rated.update(k for k in item.human if not _is_rater_column(k) or k in self.expected)

    @property
    def count(self) -> int:
        """Items added so far."""
        return len(self.ids)

    def missing(self) -> dict[str, int]:
        """Per rating name (NAME.k only when mapped as a column), how many items carry none (null on import)."""
        return {name: self.count - self.rated[name] for name in sorted({*self.rated, *self.expected})}

    def version_id(self) -> str:
        """The version's content hash (call once, after the last item)."""
        if not self.count:
            raise InputError("a dataset needs at least one item")
        return self.hash.hexdigest()


def scan_items(name: str, items: Iterable[Item], expected: tuple[str, ...] = ()) -> VersionScan:
    """The scan of `items` in order (`expected`: the rating names a mapping asks for)."""
    scan = VersionScan(name, expected=expected)
    for item in items:
        scan.add(item)
    return scan


def file_items(path: str | Path, mapping: object, scan: VersionScan | None = None) -> Iterator[Item]:
    """The items of a CSV/JSONL file, row by row (a bad row stops the read with its file and line); with `scan`,
    each is checked and counted there first (a repeated id names both lines)."""
    from .datasets import item_from_row

    for line, row in read_rows(path):
        where: dict[str, Any] = {"file": str(path), "line": line}
        item = item_from_row(row, mapping, where)  # type: ignore[arg-type]  # a DatasetMapping
        if scan is not None:
            if item.id in scan.ids:
                first = _first_line(path, mapping, item.id)
                raise InputError(
                    f"duplicate id {item.id!r} (first on line {first})",
                    field=getattr(mapping, "id", "id"),
                    file=str(path),
                    line=line,
                )
            scan.add(item, where)
        yield item


def _first_line(path: str | Path, mapping: object, item_id: str) -> int:
    """The line of the first row with this id (read again: only a refused import asks)."""
    from .datasets import item_from_row

    for line, row in read_rows(path):
        if item_from_row(row, mapping, {"file": str(path), "line": line}).id == item_id:  # type: ignore[arg-type]
            return line
    return 0


def rehashed(name: str, items: Callable[[], Iterable[Item]], expected: str, source: str) -> Iterator[Item]:
    """The items read again, hashed as they pass; InputError at the end when they are not the scanned ones."""
    from .datasets import VersionHash

    check = VersionHash(name)
    for item in items():
        check.add(item)
        yield item
    if check.hexdigest() != expected:
        raise InputError(
            "the items changed while they were imported (the file was written to between its two "
            "reads); nothing was stored: import it again",
            file=source,
        )
