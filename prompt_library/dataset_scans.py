"""Checks over every item of a dataset version made inside SQLite: no item is loaded into Python.

Before a run is recorded, `geval score` asks whether every item holds the prompt's inputs and which items
do not fit in the judge's context. Over 100,000 items that was a read of every item (and the reason the
first request waited); here SQLite's JSON functions answer from the stored text, in one pass in C.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from geval_core.types import Item

from .base import loads
from .datasets import DatasetsMixin

_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .-]*$")  # names a JSON path can quote without escapes


def _path(name: str) -> str:
    return '$."' + name + '"'


class DatasetScansMixin(DatasetsMixin):
    """Whole-version questions answered by SQL."""

    def first_item_without(self, dataset_id: str, names: Iterable[str]) -> Item | None:
        """The first item (in order) lacking one of the fields `names`, or None when every item has them all."""
        names = list(names)
        if not names:
            return None
        if not all(_PLAIN.match(n) for n in names):
            return self._first_without_in_python(dataset_id, names)
        where = " OR ".join("json_type(fields, ?) IS NULL" for _ in names)
        with self._lock:
            row = self.conn.execute(
                f"SELECT item_id, fields, human, group_id FROM items WHERE dataset_id = ? "
                f"AND ({where}) ORDER BY position LIMIT 1",
                [dataset_id, *map(_path, names)],
            ).fetchone()
        return None if row is None else Item(row[0], loads(row[1], {}), loads(row[2], {}), row[3])

    def item_ids_over(self, dataset_id: str, weights: Mapping[str, int], limit: int) -> list[str]:
        """Ids (in order) of the items whose fields' lengths, each times its weight, add up to more than `limit`
        characters (a missing field counts 0)."""
        names = [n for n, w in weights.items() if w]
        if not names:
            return [] if limit >= 0 else self._all_ids(dataset_id)
        if not all(_PLAIN.match(n) for n in names):
            return self._ids_over_in_python(dataset_id, weights, limit)
        total = " + ".join(f"{int(weights[n])} * COALESCE(length(json_extract(fields, ?)), 0)" for n in names)
        with self._lock:
            rows = self.conn.execute(
                f"SELECT item_id FROM items WHERE dataset_id = ? AND ({total}) > ? ORDER BY position",
                [dataset_id, *map(_path, names), limit],
            ).fetchall()
        return [r[0] for r in rows]

    def _all_ids(self, dataset_id: str) -> list[str]:
        with self._lock:
            rows = self.conn.execute(
                "SELECT item_id FROM items WHERE dataset_id = ? ORDER BY position", [dataset_id]
            ).fetchall()
        return [r[0] for r in rows]

    def _first_without_in_python(self, dataset_id: str, names: list[str]) -> Item | None:
        for item in self.iter_dataset_items(dataset_id):
            if any(n not in item.fields for n in names):
                return item
        return None

    def _ids_over_in_python(self, dataset_id: str, weights: Mapping[str, int], limit: int) -> list[str]:
        return [
            item.id
            for item in self.iter_dataset_items(dataset_id)
            if sum(w * len(item.fields.get(n, "")) for n, w in weights.items()) > limit
        ]
