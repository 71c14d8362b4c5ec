"""The items a run still has to judge, taken from its input a batch at a time.

A list (the app, tests, `score_frame`) is checked whole before any call, as it always was. Any other
iterable, and `StreamedItems` (a dataset read from the library a page at a time), is read lazily: the
runner takes the next batch when its queue runs low, so the first request leaves while the rest is still
unread, and memory holds one batch, not the dataset. Each batch is checked on its own: the prompt's
inputs, ids seen earlier in the stream (unless the source promises unique ids), and which items the run
has judged already (one indexed query per batch, never a set of every judged id).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from ..errors import GEvalError
from ..prompts.inputs import require_inputs
from ..store import Store
from ..types import FrozenPrompt, Item
from .options import RunSummary

BATCH = 1000  # items read (and looked up in the run) at a time: a few ms of work, a few MB at most
# (a batch in input order, the ids judged before); then once with an empty batch (a real batch never is) when
# the input was read to its end and passed its checks. A stored version found altered at the end never gets it.
BatchRead = Callable[[list[Item], set[str]], None]


@dataclass(frozen=True)
class StreamedItems:
    """A run's items read lazily, with what is known of them up front.

    total: how many items (unique ids); judged: how many of them the run has judged already (its final
    judgments, e.g. `Library.judged_count` for a run over the whole dataset). When judged == total the
    items are not read at all: there is nothing to do. on_batch sees each batch as it is read, then an empty
    batch once the input has ended with every check passed (see BatchRead).
    """

    items: Iterable[Item]
    total: int
    judged: int = 0
    unique: bool = True  # the source's ids are unique (a stored dataset version's are)
    on_batch: BatchRead | None = None


class Feed:
    """Hands the runner its next item to judge; reads (and checks) the input a batch at a time."""

    def __init__(
        self,
        source: Iterable[Item],
        store: Store,
        summary: RunSummary,
        prompt: FrozenPrompt,
        *,
        lookup: bool,
        unique: bool,
        check_inputs: bool,
        count_items: bool,
        on_batch: BatchRead | None = None,
        batch: int = BATCH,
        prefix_order: bool = True,
    ) -> None:
        self._source: Iterator[Item] = iter(source)
        self._store, self._summary, self._prompt = store, summary, prompt
        self._lookup, self._check_inputs, self._count = lookup, check_inputs, count_items
        self._seen: set[str] | None = None if unique else set()
        self._on_batch, self._batch = on_batch, batch
        # The inputs before the judged one (the source document): items that share them share the prompt up to it.
        self._shared = tuple(prompt.dimension.inputs[:-1]) if prefix_order else ()
        self._ready: deque[Item] = deque()
        self.exhausted = False  # every item of the input was read
        self.counting = count_items  # the total is counted as the input is read (its length is not known)

    def has_next(self) -> bool:
        """Whether an item is waiting; reads the next batch when none is."""
        while not self._ready and not self.exhausted:
            self._read_batch()
        return bool(self._ready)

    def popleft(self) -> Item:
        """The next item to judge (call has_next first)."""
        return self._ready.popleft()

    def _read_batch(self) -> None:
        try:
            batch = list(islice(self._source, self._batch))
            if not batch:
                self.exhausted = True
                if self._on_batch is not None:
                    # Only now is a stored version known to be the pinned one: its hash is checked at its end.
                    self._on_batch([], set())
                return
            if self._check_inputs:  # never score empty placeholders: the batch is refused before it is sent
                require_inputs(self._prompt, batch, "the data")
        except GEvalError as exc:  # an altered dataset, an item without the prompt's inputs: the run stops
            self.exhausted = True
            if self._summary.error is None:
                self._summary.error = str(exc)
            return
        batch = self._new_ids(batch)
        judged = (
            self._store.judged_among(self._summary.run_id, [i.id for i in batch]) if self._lookup else set()
        )
        if self._count:
            self._summary.total += len(batch)
            self._summary.skipped += len(judged)
        if self._on_batch is not None:
            self._on_batch(batch, judged)
        self._ready.extend(
            shared_prefix_first([item for item in batch if item.id not in judged], self._shared)
        )

    def _new_ids(self, batch: list[Item]) -> list[Item]:
        """The batch without ids seen before in the stream (the first one of each id is judged)."""
        if self._seen is None:
            return batch
        fresh = []
        for item in batch:
            if item.id not in self._seen:
                self._seen.add(item.id)
                fresh.append(item)
        return fresh


def shared_prefix_first(items: list[Item], shared: tuple[str, ...]) -> list[Item]:
    """The items with those that share their first inputs (a document and its summaries) sent one after another:
    a judge that keeps what it read (llama.cpp's prompt cache, vLLM's prefix cache, a provider's prompt cache)
    then reads each document once. Groups keep the order of their first item; without shared inputs, or with every
    item its own group, the order is unchanged. Results and files stay in dataset order whatever the order sent."""
    if not shared or len(items) < 3:
        return items
    groups: dict[tuple[str, ...], list[Item]] = {}
    for item in items:
        groups.setdefault(tuple(item.fields.get(name, "") for name in shared), []).append(item)
    return items if len(groups) == len(items) else [item for group in groups.values() for item in group]


def unique_todo(items: list[Item], judged: set[str]) -> list[Item]:
    """A list's items not judged yet, each id once, in order."""
    seen = set(judged)
    todo = []
    for item in items:
        if item.id not in seen:
            seen.add(item.id)
            todo.append(item)
    return todo
