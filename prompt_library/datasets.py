"""Golden datasets: immutable, content-hashed versions of items with optional human ratings."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from geval_core.errors import InputError, IntegrityError, NotFoundError
from geval_core.files.datafiles import field_paths, lookup
from geval_core.prompts import canonical_hash, canonical_json
from geval_core.prompts.inputs import conversation_text
from geval_core.records import Dataset, DatasetMapping
from geval_core.types import Item

from .base import LibraryBase, collections_paused, dumps, insert_row, loads, loads_column, now
from .dataset_import import VersionScan, file_items, rehashed, scan_items
from .prompts import split_label
from .sealed_import import SealedCheck, enforce_seal

# A rating cell that says "no rating" (as pandas reads these): missing, counted on import, never a refusal.
MISSING_MARKS = frozenset({"", "na", "n/a", "nan", "null", "none", "-"})


def _text(value: Any) -> str:
    """A row's field as text: a conversation (chat messages) as its turns, other lists and objects as JSON."""
    if isinstance(value, str):
        return value
    turns = conversation_text(value)
    if turns is not None:
        return turns
    return dumps(value) if isinstance(value, (dict, list)) else str(value)


def _rating(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    number = float(value.strip()) if isinstance(value, str) else float(value)
    if math.isnan(number) or math.isinf(number):
        raise ValueError(value)
    return number


def _get(row: dict, path: str, where: dict, what: str) -> Any:
    try:
        value = lookup(row, path)
    except KeyError:
        fields = ", ".join(field_paths(row)) or "none"
        raise InputError(
            f"missing {what}: no field {path!r} (fields here: {fields})", field=path, **where
        ) from None
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(f"missing {what} (empty value)", field=path, **where)
    return value


def _rating_value(row: dict, path: str, where: dict, name: str) -> Any:
    """A rating's raw value; None for null, an empty cell or a null parent (missing, counted on import)."""
    try:
        value = lookup(row, path)
    except KeyError:
        parts = path.split(".")
        if any(lookup(row, ".".join(parts[:n]), "") is None for n in range(1, len(parts))):
            return None  # e.g. expert_annotations: null -- no rating, not a mistyped path
        return _get(row, path, where, f"human rating {name!r}")
    if isinstance(value, str) and value.strip().startswith("["):
        with contextlib.suppress(ValueError):
            value = json.loads(value)  # a CSV cell holding a JSON list of per-rater ratings
    return None if isinstance(value, str) and value.strip().casefold() in MISSING_MARKS else value


def _ratings(name: str, value: Any, path: str, where: dict) -> dict[str, float]:
    """{NAME: x}; for a list, NAME.0, NAME.1, ... per non-null entry and NAME = their mean; {} for null."""
    values = value if isinstance(value, list) else [value]
    try:
        numbers = {k: _rating(v) for k, v in enumerate(values) if v is not None}
    except (TypeError, ValueError):
        raise InputError(f"human rating {name!r} is not a number: {value!r}", field=path, **where) from None
    if not numbers:
        return {}
    if not isinstance(value, list):
        return {name: numbers[0]}
    return {**{f"{name}.{k}": v for k, v in numbers.items()}, name: _mean(numbers.values())}


def _mean(ratings: Iterable[float]) -> float:
    """The people's rating NAME of an item: the mean of its raters' ratings NAME.k."""
    values = list(ratings)
    return math.fsum(values) / len(values)


def rater_columns(mapping: DatasetMapping) -> dict[str, list[str]]:
    """NAME -> the per-rater ratings NAME.k the mapping reads from columns, for each NAME it does not map itself
    (its mean is then computed, as a list cell's is)."""
    out: dict[str, list[str]] = {}
    for key in mapping.human:
        name, _, k = key.rpartition(".")
        if name and k.isdigit() and name not in mapping.human:
            out.setdefault(name, []).append(key)
    return out


def expected_ratings(mapping: DatasetMapping | None) -> tuple[str, ...]:
    """The rating names a mapping asks for, NAME.k columns and their computed means included: an item without
    one is counted as missing on import."""
    if mapping is None:
        return ()
    return tuple(sorted({*mapping.human, *rater_columns(mapping)}))


def item_from_row(row: dict[str, Any], mapping: DatasetMapping, where: dict) -> Item:
    """One Item from one row; InputError (with file and line from `where`) on a missing or bad value."""
    item_id = _text(_get(row, mapping.id, where, "item id")).strip()
    fields = {
        name: _text(_get(row, path, where, f"input field {name!r}")) for name, path in mapping.inputs.items()
    }
    human: dict[str, float] = {}
    for name, path in mapping.human.items():
        human.update(_ratings(name, _rating_value(row, path, where, name), path, where))
    for name, keys in rater_columns(mapping).items():  # per-rater columns alone: NAME is their mean
        given = [human[k] for k in keys if k in human]
        if given:
            human[name] = _mean(given)
    group = _text(_get(row, mapping.group, where, "group")) if mapping.group else None
    return Item(item_id, fields, human, group)


def read_items(path: str | Path, mapping: DatasetMapping) -> list[Item]:
    """Every item of a CSV/JSONL file; the first bad row stops the read with file, line and reason."""
    if not mapping.inputs:
        raise InputError("map at least one input field (e.g. document=source)", file=str(path))
    try:
        items = list(file_items(path, mapping, VersionScan("")))
    except RecursionError:  # JSON nested thousands deep: Python's parser gives up before reading it
        raise InputError(
            "a row is nested too deeply to read (JSON nested thousands of levels); nothing was imported",
            file=str(path),
        ) from None
    if not items:
        raise InputError("the file has no rows", file=str(path))
    return items


def dataset_hash(name: str, items: list[Item]) -> str:
    """sha256 over the name and every item in order: equal content gives an equal version id."""
    return canonical_hash({"name": name, "items": [[i.id, i.fields, i.human, i.group] for i in items]})


class VersionHash:
    """dataset_hash folded one item at a time, for items read a page at a time (the same bytes hashed)."""

    def __init__(self, name: str) -> None:
        # canonical JSON of {"items": [...], "name": ...}: sorted keys put the items first.
        self.name, self.count, self._sha = name, 0, hashlib.sha256(b'{"items":[')

    def add(self, item: Item) -> None:
        """The next item, in the version's order."""
        text = canonical_json([item.id, item.fields, item.human, item.group])
        self._sha.update(("," + text if self.count else text).encode("utf-8"))
        self.count += 1

    def hexdigest(self) -> str:
        """The hash over the items added so far (call once, at the end)."""
        self._sha.update(('],"name":' + canonical_json(self.name) + "}").encode("utf-8"))
        return self._sha.hexdigest()


class DatasetsMixin(LibraryBase):
    """Golden datasets and their items."""

    def import_dataset(
        self, path: str | Path, name: str, mapping: DatasetMapping | None = None, test_use: str | None = None
    ) -> dict[str, Any]:
        """Import a CSV/JSONL file as dataset `name`, read row by row (never held whole); returns the dataset row
        plus `created`."""
        mapping = mapping or DatasetMapping()
        if not mapping.inputs:
            raise InputError("map at least one input field (e.g. document=source)", file=str(path))
        scan = VersionScan(name, expected=expected_ratings(mapping))
        try:
            for _ in file_items(path, mapping, scan):
                pass
        except RecursionError:  # JSON nested thousands deep: Python's parser gives up before reading it
            raise InputError(
                "a row is nested too deeply to read (JSON nested thousands of levels); nothing was imported",
                file=str(path),
            ) from None
        if not scan.count:
            raise InputError("the file has no rows", file=str(path))
        return self._store_version(
            name, scan, lambda: file_items(path, mapping), str(path), mapping, test_use
        )

    def import_items(
        self,
        name: str,
        items: list[Item],
        source: str = "memory",
        mapping: DatasetMapping | None = None,
        test_use: str | None = None,
        carry_split_from: str | None = None,
    ) -> dict[str, Any]:
        """Store in-memory items as a new version of `name` (or return the identical existing one).

        Items whose text is on a split version's sealed test side are refused (sealed_import.py), unless
        `test_use` names the prompt for which the import is recorded as a use of that test side, or the new version
        is a snapshot of that split version (`carry_split_from`: its split is carried over, sides and uses kept).
        """
        return self._store_version(
            name,
            scan_items(name, items, expected_ratings(mapping)),
            lambda: items,
            source,
            mapping,
            test_use,
            carry_split_from,
        )

    def _store_version(
        self,
        name: str,
        scan: VersionScan,
        items: Callable[[], Iterable[Item]],
        source: str,
        mapping: DatasetMapping | None,
        test_use: str | None,
        carry_split_from: str | None = None,
    ) -> dict[str, Any]:
        """The scanned items stored as a new version (read again inside the write, sealed-checked and re-hashed),
        or the identical version already stored."""
        if not name.strip() or "@" in name:
            raise InputError(f"dataset name {name!r} must be non-empty and without '@'")
        dataset_id = scan.version_id()
        with self._write() as db:
            if db.execute("SELECT 1 FROM datasets WHERE id = ?", [dataset_id]).fetchone():
                return {
                    **self.get_dataset(dataset_id).as_dict(),
                    "created": False,
                    "human_missing": scan.missing(),
                }
            version = db.execute(
                "SELECT COALESCE(MAX(version), 0) + 1 FROM datasets WHERE name = ?", [name]
            ).fetchone()[0]
            insert_row(
                db,
                "datasets",
                {
                    "id": dataset_id,
                    "name": name,
                    "version": version,
                    "source": source,
                    "mapping": dumps(mapping.to_dict()) if mapping else None,
                    "item_count": scan.count,
                    "fields": dumps(list(scan.fields)),
                    "human": dumps(sorted(scan.human)),
                    "created_at": now(),
                },
            )
            seal = SealedCheck(self)  # type: ignore[arg-type]  # a Library
            db.executemany(
                "INSERT INTO items (dataset_id, item_id, position, fields, human, group_id) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    (dataset_id, i.id, n, dumps(i.fields), dumps(i.human), i.group)
                    for n, i in enumerate(_seen(rehashed(name, items, dataset_id, source), seal))
                ),
            )
            enforce_seal(self, name, seal.matches(), test_use, carry_split_from)  # type: ignore[arg-type]
            if carry_split_from is not None:
                from geval_core.run.splits import carry_split

                carry_split(self, carry_split_from, dataset_id, list(scan.ids))  # type: ignore[arg-type]
        return {**self.get_dataset(dataset_id).as_dict(), "created": True, "human_missing": scan.missing()}

    def _dataset_row(self, name_or_id: str, version: int | None) -> dict[str, Any] | None:
        name, version = split_label(name_or_id, version)
        if version is not None:
            return self._one("SELECT * FROM datasets WHERE name = ? AND version = ?", [name, version])
        return self._one("SELECT * FROM datasets WHERE id = ?", [name]) or self._one(
            "SELECT * FROM datasets WHERE name = ? ORDER BY version DESC LIMIT 1", [name]
        )

    def get_dataset(self, name_or_id: str, version: int | None = None) -> Dataset:
        """A dataset version by id, name (latest), name@version or name+version."""
        row = self._dataset_row(str(name_or_id), version)
        if row is None:
            known = ", ".join(sorted({r["name"] for r in self._rows("SELECT name FROM datasets")})) or "none"
            raise NotFoundError(f"no dataset {name_or_id!r}; known datasets: {known}")
        return _decode(row)

    def list_datasets(self) -> list[Dataset]:
        """Every dataset version, sorted by name then version."""
        return [_decode(r) for r in self._rows("SELECT * FROM datasets ORDER BY name, version")]

    def dataset_items(self, dataset_id: str) -> list[Item]:
        """The items of one dataset version (id, name or name@version), in import order."""
        dataset = self.get_dataset(dataset_id)
        with collections_paused():
            rows = self._rows("SELECT * FROM items WHERE dataset_id = ? ORDER BY position", [dataset.id])
            fields = loads_column([r["fields"] for r in rows], {})
            human = loads_column([r["human"] for r in rows], {})
            items = [
                Item(r["item_id"], f, h, r["group_id"]) for r, f, h in zip(rows, fields, human, strict=True)
            ]
            problem = version_problem(dataset, items)
        if problem:  # checked on every read: a run must never grade items other than the pinned ones
            raise _altered(dataset, problem)
        return items

    def version_with_items(self, name: str, items: list[Item], fields: list[str]) -> Dataset | None:
        """The newest version of dataset `name` holding these items (same ids, same order, the same text in
        `fields`), or None: a data file scored again is the version it was imported as, ratings and groups
        included, not a new version without them."""
        candidates = self._rows(
            "SELECT id FROM datasets WHERE name = ? AND item_count = ? ORDER BY version DESC",
            [name, len(items)],
        )
        for row in candidates:
            stored = self.dataset_items(row["id"])
            if all(
                a.id == b.id and all(a.fields.get(f) == b.fields.get(f) for f in fields)
                for a, b in zip(stored, items, strict=True)
            ):
                return self.get_dataset(row["id"])
        return None

    def iter_dataset_items(self, dataset_id: str, batch: int = 2000) -> Iterator[Item]:
        """The items of one dataset version in import order, read `batch` at a time (memory stays small).

        The count is checked before the first item and the content hash folded as they are read: a stored
        version altered outside the workbench raises IntegrityError once its last item is read (at the start
        when items were added or removed). A run over this stream stops there and is marked failed.
        """
        dataset = self.get_dataset(dataset_id)
        with self._lock:
            count = self.conn.execute(
                "SELECT COUNT(*) FROM items WHERE dataset_id = ?", [dataset.id]
            ).fetchone()[0]
        if count != dataset.item_count:
            raise _altered(dataset, f"holds {count} items where its version says {dataset.item_count}")
        folded, position = VersionHash(dataset.name), -1
        while True:
            page, position = self._item_page(dataset.id, position, batch)
            for item in page:
                folded.add(item)
                yield item
            if len(page) < batch:
                break
        if folded.count != dataset.item_count or folded.hexdigest() != dataset.id:
            raise _altered(dataset, "stored hash does not match its items")

    def _item_page(self, dataset_id: str, after: int, batch: int) -> tuple[list[Item], int]:
        """(up to `batch` items after position `after` in order, the position of the last one)."""
        with collections_paused():
            rows = self._rows(
                "SELECT item_id, position, fields, human, group_id FROM items WHERE dataset_id = ? "
                "AND position > ? ORDER BY position LIMIT ?",
                [dataset_id, after, batch],
            )
            fields = loads_column([r["fields"] for r in rows], {})
            human = loads_column([r["human"] for r in rows], {})
            items = [
                Item(r["item_id"], f, h, r["group_id"]) for r, f, h in zip(rows, fields, human, strict=True)
            ]
            return items, rows[-1]["position"] if rows else after


def _altered(dataset: Dataset, problem: str) -> IntegrityError:
    return IntegrityError(
        f"stored dataset {dataset.label} ({dataset.id[:12]}) {problem}; the library "
        "file was altered outside the workbench (`geval verify` lists what differs)"
    )


def version_problem(dataset: Dataset, items: list[Item]) -> str | None:
    """Why a stored version's items differ from its row (count, content hash), or None when they match."""
    if len(items) != dataset.item_count:
        return f"holds {len(items)} items where its version says {dataset.item_count}"
    if dataset_hash(dataset.name, items) != dataset.id:
        return "stored hash does not match its items"
    return None


def _seen(items: Iterable[Item], seal: SealedCheck) -> Iterator[Item]:
    """The items, each shown to the seal's check on its way to the table."""
    for item in items:
        seal.see(item)
        yield item


def _decode(row: dict[str, Any]) -> Dataset:
    """The one decoding of a stored dataset version: its mapping, field names and rating names."""
    return Dataset.from_stored(row, loads(row["mapping"]), loads(row["fields"], []), loads(row["human"], []))
