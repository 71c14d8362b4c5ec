"""Reads of a run that stay small whatever its size: counts from the indexes, and judgments a batch at a time.

A 100,000-item run is never held whole: the runner asks which items of a batch are judged, a finished
run's totals and digest are kept (not re-summed), and a results file is streamed from the store in
dataset order, one bounded page of items after another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from geval_core.judgment import Judgment
from geval_core.records import Run

from .base import LibraryBase, collections_paused, loads_column
from .dataset_scans import DatasetScansMixin
from .hashes import as_stored
from .judgment_rows import JUDGMENT_COLUMNS, decoded, encoded, latest_attempts

BATCH = 2000  # items per page: SQLite's limit on bound parameters is far above, memory stays small
DIGEST_ROWS = "digest_rows"  # the run field saying how many judgment rows its stored digest covers
# The columns a run's totals fold reads (totals.RunTally), with what picks the latest attempts.
_VALUES = ", ".join(("item_id", "attempt", *JUDGMENT_COLUMNS))  # a judgment's stored values, JSON as text
_TALLY_SELECT = (
    "SELECT j.item_id, j.attempt, j.score, j.error, j.cached, j.fallback, j.input_tokens, "
    "j.output_tokens, j.cached_input_tokens, j.model_version FROM judgments j "
    "WHERE j.run_id = ? AND j.item_id > ? "
    "AND j.attempt = (SELECT MAX(k.attempt) FROM judgments k WHERE k.run_id = j.run_id "
    "AND k.item_id = j.item_id) ORDER BY j.item_id LIMIT ?"
)


class RunStreamsMixin(DatasetScansMixin, LibraryBase):
    """Counts, per-batch lookups and paged reads of a run's judgments."""

    if TYPE_CHECKING:  # RunsMixin's, which builds on this mixin

        def get_run(self, run_id: str) -> Run: ...

    def judged_count(self, run_id: str) -> int:
        """Items of a run with a final (error-free) judgment: len(judged_item_ids) from the index alone."""
        return self._count("SELECT COUNT(*) FROM judgments WHERE run_id = ? AND error IS NULL", [run_id])

    def run_servers(self, run_id: str) -> set[str]:
        """The servers that answered a run's judgments (errors left out: an unanswered call names no server)."""
        rows = self._rows(
            "SELECT DISTINCT server FROM judgments WHERE run_id = ? AND error IS NULL AND server IS NOT NULL",
            [run_id],
        )
        return {r["server"] for r in rows}

    def judgment_row_count(self, run_id: str) -> int:
        """Stored judgment rows of a run, every attempt (judgments are append-only: an equal count is the same rows)."""
        return self._count("SELECT COUNT(*) FROM judgments WHERE run_id = ?", [run_id])

    def judged_among(self, run_id: str, item_ids: Iterable[str]) -> set[str]:
        """Which of these items already have a final judgment in the run (errored ones are left out)."""
        ids = list(item_ids)
        found: set[str] = set()
        for start in range(0, len(ids), BATCH):
            page = ids[start : start + BATCH]
            marks = ", ".join("?" * len(page))
            with self._lock:
                found.update(
                    r
                    for (r,) in self.conn.execute(
                        f"SELECT item_id FROM judgments WHERE run_id = ? AND error IS NULL AND item_id IN ({marks})",
                        [run_id, *page],
                    )
                )
        return found

    def iter_latest_attempts(self, run_id: str, batch: int = BATCH) -> Iterator[dict[str, Any]]:
        """Each item's latest attempt, only the columns a run's totals read, a page at a time (item id order)."""
        after = ""
        while True:
            rows = self._rows(_TALLY_SELECT, [run_id, after, batch])
            yield from rows
            if len(rows) < batch:
                return
            after = rows[-1]["item_id"]

    def judgments_of(self, run_id: str, item_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Item id -> its latest judgment (as `judgments` returns them), for these items of the run."""
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(item_ids), BATCH):
            page = item_ids[start : start + BATCH]
            marks = ", ".join("?" * len(page))
            rows = self._rows(
                f"SELECT * FROM judgments WHERE run_id = ? AND item_id IN ({marks})", [run_id, *page]
            )
            out.update((row["item_id"], row) for row in _decoded_latest(rows))
        return out

    def iter_judgments(
        self,
        run_id: str,
        batch: int = BATCH,
        after_item: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The run's judgments in dataset order as `judgments` returns them, a page of items at a time;
        `after_item`: only those of items after it in the dataset."""
        run = self.get_run(run_id)
        for ids in self._item_id_pages(run.dataset_id, batch, after_item):
            by_item = self.judgments_of(run.id, ids)
            yield from (by_item[i] for i in ids if i in by_item)

    def _item_id_pages(self, dataset_id: str, batch: int, after_item: str | None) -> Iterator[list[str]]:
        """The ids of a dataset version, in order, `batch` at a time (after `after_item` when given)."""
        position = -1
        if after_item is not None:
            found = self._one(
                "SELECT position FROM items WHERE dataset_id = ? AND item_id = ?", [dataset_id, after_item]
            )
            position = found["position"] if found else -1
        while True:
            with self._lock:
                page = self.conn.execute(
                    "SELECT item_id, position FROM items WHERE dataset_id = ? AND position > ? "
                    "ORDER BY position LIMIT ?",
                    [dataset_id, position, batch],
                ).fetchall()
            if not page:
                return
            yield [item for item, _ in page]
            position = page[-1][1]

    def judgment_values_of(self, run_id: str, item_ids: list[str]) -> dict[str, tuple[Any, ...]]:
        """Item id -> its latest judgment's stored values (item_id, then `Judgment.columns()`'s others, JSON
        columns as their text), for these items: the cheapest read of a results line."""
        out: dict[str, tuple[Any, ...]] = {}
        for start in range(0, len(item_ids), BATCH):
            page = item_ids[start : start + BATCH]
            with self._lock:
                rows = self.conn.execute(
                    f"SELECT {_VALUES} FROM judgments WHERE run_id = ? AND item_id IN "
                    f"({', '.join('?' * len(page))})",
                    [run_id, *page],
                ).fetchall()
            for row in rows:  # an errored attempt's successor has the higher attempt
                if row[0] not in out or row[1] > out[row[0]][1]:
                    out[row[0]] = row
        return {item: (row[0], *row[2:]) for item, row in out.items()}

    def iter_judgment_values(
        self,
        run_id: str,
        batch: int = BATCH,
        after_item: str | None = None,
    ) -> Iterator[tuple[Any, ...]]:
        """`judgment_values_of` of every judgment of the run, in dataset order, a page of items at a time;
        `after_item`: only those of items after it in the dataset."""
        run = self.get_run(run_id)
        for ids in self._item_id_pages(run.dataset_id, batch, after_item):
            values = self.judgment_values_of(run.id, ids)
            yield from (values[i] for i in ids if i in values)

    def judgment_values(self, judgment: Judgment) -> tuple[Any, ...]:
        """The values `judgment_values_of` will return for this judgment once it is stored (no read: the one
        encoder and the table's column types)."""
        row = as_stored(encoded("", judgment, ""), self._affinities("judgments"))
        return (judgment.item_id, *(row[c] for c in JUDGMENT_COLUMNS))

    def streamed_digest(self, run_id: str) -> str:
        """hashes.run_digest of the run's stored row hashes, sorted by SQLite and hashed as they come."""
        digest = hashlib.sha256()
        with self._lock:
            cursor = self.conn.execute(
                "SELECT COALESCE(row_hash, '') FROM judgments WHERE run_id = ? ORDER BY 1", [run_id]
            )
            for n, (row_hash,) in enumerate(cursor):
                digest.update((("\n" if n else "") + row_hash).encode("ascii"))
        return digest.hexdigest()

    def _count(self, sql: str, params: list[Any]) -> int:
        with self._lock:
            return int(self.conn.execute(sql, params).fetchone()[0])


def _decoded_latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of judgments, their latest attempts decoded (the C scanner over each JSON column)."""
    with collections_paused():
        rows = latest_attempts(rows)
        distributions = loads_column([r["distribution"] for r in rows])
        replies = loads_column([r["replies"] for r in rows], [])
        return [decoded(r, d, p) for r, d, p in zip(rows, distributions, replies, strict=True)]
