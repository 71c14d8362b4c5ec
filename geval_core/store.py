"""What the runner, batch files, cost and statistics need from the library: the `Store` protocol.

`prompt_library.Library` is the one implementation (a SQLite file); geval_core never imports it,
so the core can be used, and tested, with any object that has these methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from .judgment import Judgment
from .records import Dataset, Run
from .types import FrozenPrompt, Item, JudgeSettings


@runtime_checkable
class Store(Protocol):
    """Runs, their judgments, datasets, prompts, the judge cache and settings."""

    def transaction(self) -> AbstractContextManager[None]:
        """Several writes committed together."""
        ...

    def get_prompt(self, ref: str) -> FrozenPrompt:
        """A frozen prompt by id, name or name@version."""
        ...

    def get_dataset(self, ref: str) -> Dataset:
        """A dataset version (id, label, fields, human, item_count, ...)."""
        ...

    def dataset_items(self, ref: str) -> list[Item]:
        """A dataset version's items, in order."""
        ...

    def create_run(
        self, prompt_id: str, dataset_id: str, judge: JudgeSettings, item_ids: list[str] | None = None
    ) -> str:
        """Start a run record; its id."""
        ...

    def get_run(self, run_id: str) -> Run:
        """One run with its judge settings."""
        ...

    def set_run_fields(self, run_id: str, **fields: Any) -> None:
        """Update a run's columns and extra fields."""
        ...

    def finish_run(self, run_id: str, status: str = "done", **totals: Any) -> None:
        """Mark a run finished and store its totals."""
        ...

    def judged_item_ids(self, run_id: str, include_errors: bool = False) -> set[str]:
        """Items of a run that already have a judgment (errored ones only when asked)."""
        ...

    def save_judgment(self, run_id: str, judgment: Judgment) -> bool:
        """Store one judgment; False when the item already had one."""
        ...

    def save_next_attempt(self, run_id: str, judgment: Judgment) -> tuple[bool, dict[str, Any] | None]:
        """save_judgment, also returning the stored errored attempt the new row succeeds, if any."""
        ...

    def judged_among(self, run_id: str, item_ids: Iterable[str]) -> set[str]:
        """Which of these items have a final (error-free) judgment in the run."""
        ...

    def judgment_row_count(self, run_id: str) -> int:
        """Stored judgment rows of a run, every attempt."""
        ...

    def iter_latest_attempts(self, run_id: str) -> Iterator[dict[str, Any]]:
        """Each item's latest attempt (at least the columns a run's totals read), a page at a time."""
        ...

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """A run's judgments as dicts keyed by `Judgment.columns()`, in dataset order."""
        ...

    def judgment_values_of(self, run_id: str, item_ids: list[str]) -> dict[str, tuple[Any, ...]]:
        """Item id -> its latest judgment's stored values, in `Judgment.columns()` order (JSON columns as text)."""
        ...

    def iter_judgment_values(
        self, run_id: str, batch: int = ..., after_item: str | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """`judgment_values_of` of a run's judgments in dataset order, `batch` items a page (after `after_item`)."""
        ...

    def judgment_values(self, judgment: Judgment) -> tuple[Any, ...]:
        """The values `judgment_values_of` returns for this judgment once it is stored."""
        ...

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """A cached reply dict (`JudgeReply.to_dict`) for a request key; IntegrityError when it fails its hash."""
        ...

    def cache_put(self, key: str, reply: dict[str, Any], origin: str | None = None) -> None:
        """Cache a reply dict under its request key, naming the judgment it was scored into (RUN/ITEM); an entry
        with no origin is never replayed."""
        ...

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A JSON setting stored in the library (e.g. a price table)."""
        ...

    def set_setting(self, key: str, value: Any) -> None:
        """Store a JSON setting (a batch's record, a probe's findings)."""
        ...

    def list_runs(self, prompt: str | None = None, dataset: str | None = None) -> list[Run]:
        """Runs, newest first; `prompt`/`dataset` filter by id, name or name@version."""
        ...

    def human_means(self, dataset_id: str, dimension: str) -> dict[str, float]:
        """Per item, the people's rating `dimension` stored in the dataset version (Rate-page ratings once saved)."""
        ...

    def unsaved_ratings(self, dataset_id: str, dimension: str) -> list[str]:
        """The items whose Rate-page ratings of `dimension` are not in the version yet."""
        ...

    def ratings_saved_in(self, dataset_id: str, dimension: str) -> str | None:
        """The label of a later version of the dataset that stores those ratings, or None."""
        ...

    def import_items(self, name: str, items: list[Item], source: str = "memory") -> dict[str, Any]:
        """Store items as a new version of dataset `name` (or return the identical one): its row."""
        ...

    def freeze_record(self, kind: str, key: str, body: Any, once: bool = True) -> tuple[dict[str, Any], bool]:
        """(the record, created): `body` as the next version of the frozen record (kind, key) in the protected
        table (kinds: panel, cascade, split, test-use, drift, drift-check); with `once`, an identical stored body is returned instead."""
        ...

    def records(self, kind: str, key: str) -> list[dict[str, Any]]:
        """Every version of a frozen record, oldest first: {kind, key, seq, body, created_at, row_hash}."""
        ...

    def record_keys(self, kind: str) -> list[str]:
        """The keys of the stored frozen records of `kind` (the names of the panels), sorted."""
        ...

    def iter_dataset_items(self, dataset_id: str, batch: int = 2000) -> Iterator[Item]:
        """The items of one dataset version in import order, read a batch at a time."""
        ...

    def first_item_without(self, dataset_id: str, names: Iterable[str]) -> Item | None:
        """The first item lacking one of the fields `names`, or None."""
        ...

    def item_ids_over(self, dataset_id: str, weights: Any, limit: int) -> list[str]:
        """Ids of the items whose weighted field lengths add up to more than `limit` characters."""
        ...

    def find_or_create_run(
        self,
        prompt_id: str,
        dataset_id: str,
        judge: JudgeSettings,
        statuses: tuple[str, ...],
        item_ids: list[str] | None = None,
    ) -> tuple[str, bool]:
        """(run id, created): the newest run of this prompt, data, judge and items in one of `statuses`, else a
        new one."""
        ...

    def judged_count(self, run_id: str) -> int:
        """Items of a run with a final (error-free) judgment."""
        ...

    def run_servers(self, run_id: str) -> set[str]:
        """The servers that answered a run's judgments (as judgments record them)."""
        ...

    def take_lease(self, run_id: str, owner: str) -> None:
        """Become the run's one runner (RunBusyError when a live runner already is)."""
        ...

    def renew_lease(self, run_id: str, owner: str) -> None:
        """Keep the lease alive."""
        ...

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the run back."""
        ...
