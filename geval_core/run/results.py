"""A run's results file (`geval score --out`): one JSON line per item, in dataset order, written as the run goes.

Every line is made by `line_of_values` from a judgment's stored values (what `Library.judgment_values_of`
reads, or `judgment_values` gives for a judgment just written): the same line `output_line` makes from the
row `Library.judgments` decodes, without building that row (100,000 lines in about a second).

The file holds every judgment of the run, earlier sessions' too, in the order of the dataset, as reading the
run back at the end wrote it. `OrderedResults` writes it while scoring: the items are announced in the order
they are read (`batch_read`), each line goes out as soon as every item before it is written. An item
judged in an earlier session, or one whose line was not kept (more than `keep` lines waiting behind a slow
item), is read back from the store a page at a time when its turn comes: memory holds at most `keep` lines,
and the library is the spill. Items the run never reached (a stopped run) come last, streamed from the store.

No line goes out before the data is known to be the pinned dataset version: a version altered outside the
workbench is only found when its last item is read (its hash covers all of them, so which item changed cannot be
told). Lines wait (in hand, then in the store) until the feed says the input ended with its checks passed; a run
that ends before that (stopped, or failed) has its version checked at `close`, and a version that fails the check
gets no line at all (`withheld` says why): the altered item's score never reaches the file.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import IO, Any

from ..errors import IntegrityError
from ..judgment import Judgment
from ..store import Store
from ..types import Item

# The results file names the item "id" (what `geval agree --id-field` expects); the rest are Judgment's fields.
RESULT_KEYS = ("id", *Judgment.columns()[1:])
_BOOLS = tuple(f.name for f in fields(Judgment) if f.type in ("bool", bool))  # stored as 0/1
_RATINGS = ("top_rating", "first_rating")
_encode = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(value, ensure_ascii=False), made once
KEEP = 4096  # lines held while an earlier item is still out; later ones are read back from the store
PAGE = 1000  # judgments read back from the store at a time
_WAITING, _READY, _STORED = (
    0,
    1,
    2,
)  # a slot's state: not written yet / its line in hand / read it from the store


def output_line(row: dict[str, Any]) -> dict[str, Any]:
    """One item of the results file: the judgment's fields, the item id as "id".

    "mode" is the mode the item was scored in, so an auto-mode fallback shows as "sampling".
    """
    line = {"id": row["item_id"], **{k: row.get(k) for k in RESULT_KEYS[1:]}}
    line["distribution"] = {str(k): v for k, v in (row.get("distribution") or {}).items()}
    for key in ("top_rating", "first_rating"):
        line[key] = _as_written(line[key])
    return line


def _as_written(value: Any) -> Any:
    # SQLite hands back a whole rating as 3.0; the file says 3 (sampling's first reply may be 3.5).
    return int(value) if isinstance(value, float) and value.is_integer() else value


def line_text(row: dict[str, Any]) -> str:
    """The text of one results line from a decoded judgment row (`Library.judgments`), newline included."""
    return _encode(output_line(row)) + "\n"


def line_of_values(values: Sequence[Any]) -> str:
    """The text of one results line from a judgment's stored values (`Judgment.columns()` order, JSON as text):
    line_text of the row those values decode to."""
    line = dict(zip(RESULT_KEYS, values, strict=True))
    distribution = json.loads(line["distribution"]) if line["distribution"] is not None else None
    # Decoded as the library decodes them ({int: float}), then keyed by text as output_line writes them.
    line["distribution"] = {str(int(k)): float(v) for k, v in (distribution or {}).items()}
    line["replies"] = [] if line["replies"] is None else json.loads(line["replies"])
    for key in _BOOLS:
        line[key] = bool(line[key])
    for key in _RATINGS:
        line[key] = _as_written(line[key])
    return _encode(line) + "\n"


def write_values(handle: IO[str], values: Iterable[Sequence[Any]]) -> None:
    """Judgments' stored values (`Library.iter_judgment_values`) as results lines."""
    handle.writelines(line_of_values(v) for v in values)


class OrderedResults:
    """Writes a run's results file in dataset order as its judgments commit (see the module docstring)."""

    def __init__(self, store: Store, run_id: str, handle: IO[str], keep: int = KEEP) -> None:
        self._store, self._run_id, self._handle, self._keep = store, run_id, handle, keep
        self._slots: deque[list[Any]] = deque()  # [item id, line, state] in dataset order
        self._waiting: dict[str, list[Any]] = {}  # slots of items this session is judging, by item id
        self._kept = 0  # lines in hand
        self._last_read: str | None = None  # the last item announced: the store streams what comes after it
        self.failure: OSError | None = (
            None  # the write that failed (a closed pipe, a full disk): nothing more is written
        )
        self._verified = False  # the items are the pinned version's: lines may go out
        self.withheld: str | None = None  # why no line was written: the dataset version failed its check

    def batch_read(self, batch: list[Item], judged: set[str]) -> None:
        """Items read by the run, in order; `judged`: those judged before (their lines come from the store).
        An empty batch is the feed's word that the input ended with its checks passed (feed.BatchRead)."""
        if not batch:
            self._verified = True
        for item in batch:
            slot = [item.id, None, _STORED if item.id in judged else _WAITING]
            self._slots.append(slot)
            if slot[2] == _WAITING:
                self._waiting[item.id] = slot
        if batch:
            self._last_read = batch[-1].id
        self._flush()

    def committed(self, judgment: Judgment) -> None:
        """A judgment this session wrote (called once its commit is done)."""
        slot = self._waiting.pop(judgment.item_id, None)
        if slot is None:
            return
        if self._kept < self._keep:
            slot[1], slot[2] = line_of_values(self._store.judgment_values(judgment)), _READY
            self._kept += 1
        else:
            slot[2] = _STORED
        self._flush()

    def close(self) -> None:
        """Write the rest: items still out (dropped by a stop: whatever the store holds), then the items the
        run never read."""
        for slot in self._waiting.values():
            slot[2] = _STORED
        self._waiting.clear()
        if not self._verified:
            self.withheld = self._version_problem()
            if self.withheld is not None:
                self._slots.clear()
                return
            self._verified = True
        self._flush()
        if self.failure is None:
            self._write_all(
                map(
                    line_of_values, self._store.iter_judgment_values(self._run_id, after_item=self._last_read)
                )
            )

    def _version_problem(self) -> str | None:
        """Why the run's dataset version is not the pinned one (read whole, as the feed would have), or None."""
        try:
            for _ in self._store.iter_dataset_items(self._store.get_run(self._run_id).dataset_id):
                pass
        except IntegrityError as exc:
            return str(exc)
        return None

    def _flush(self) -> None:
        """Write the slots at the head that are ready, reading stored ones back a page at a time."""
        if not self._verified:
            return  # held: the version is not checked yet
        while self._slots and self._slots[0][2] != _WAITING:
            if self._slots[0][2] == _READY:
                self._write_all([self._slots.popleft()[1]])
                self._kept -= 1
                continue
            page: list[str] = []
            while self._slots and self._slots[0][2] == _STORED and len(page) < PAGE:
                page.append(self._slots.popleft()[0])
            values = self._store.judgment_values_of(self._run_id, page)
            self._write_all(line_of_values(values[i]) for i in page if i in values)

    def _write_all(self, lines: Iterable[str]) -> None:
        if self.failure is not None:
            return
        try:
            self._handle.writelines(lines)
        except OSError as exc:  # BrokenPipeError included: the run goes on, the command says so at the end
            self.failure = exc
