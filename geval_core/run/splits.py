"""Dev / test splits of a dataset version, by group (no document on both sides): deterministic for a seed,
content-hashed, stored once in the library; the test side is sealed, and every use of it is recorded."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from ..errors import InputError, NotFoundError
from ..prompts import canonical_hash
from ..records import Run
from ..store import Store

__all__ = [
    "SealedStore",
    "carry_split",
    "get_split",
    "make_split",
    "record_test_use",
    "sealed_note",
    "sealed_run",
    "sealed_uses",
    "sealed_view",
]


def make_split(
    store: Store, dataset_id: str, dev: float = 0.6, by: str | None = "group", seed: int = 0
) -> tuple[dict[str, Any], bool]:
    """(the split, created): groups (or items, without groups) shuffled by `seed`, the first `dev` share to dev."""
    if not 0.0 < dev < 1.0:
        raise InputError(f"--dev is the dev share, between 0 and 1 (got {dev})", field="dev")
    items = store.dataset_items(dataset_id)
    if by not in ("group", None):
        raise InputError(f"--by is 'group' or 'none', got {by!r}", field="by")
    units: dict[str, list[str]] = {}
    for item in items:
        unit = item.group if by == "group" else item.id
        if by == "group" and item.group is None:
            raise InputError(
                f"item {item.id!r} has no group: split --by group needs every item's group "
                "(or --by none for items one by one)",
                field="group",
            )
        units.setdefault(str(unit), []).append(item.id)
    names = sorted(units)
    if len(names) < 2:
        raise InputError("a split needs at least two groups (or items)", field="by")
    random.Random(seed).shuffle(names)
    cut = min(len(names) - 1, max(1, math.floor(dev * len(names) + 0.5)))
    dev_ids = sorted(i for name in names[:cut] for i in units[name])
    test_ids = sorted(i for name in names[cut:] for i in units[name])
    body = {
        "dataset_id": dataset_id,
        "by": by,
        "seed": seed,
        "dev_share": dev,
        "dev": dev_ids,
        "test": test_ids,
    }
    split = {**body, "hash": canonical_hash(body), "groups": {"dev": cut, "test": len(names) - cut}}
    for other in _splits(store, dataset_id):
        if other["hash"] == split["hash"]:
            return other, False
    # A frozen record, never edited: the split is part of the data.
    record, _ = store.freeze_record("split", dataset_id, split)
    return {**record["body"], "created_at": record["created_at"]}, True


def _splits(store: Store, dataset_id: str) -> list[dict[str, Any]]:
    """Every split of the dataset version, oldest first, with the time it was made."""
    return [{**r["body"], "created_at": r["created_at"]} for r in store.records("split", dataset_id)]


def get_split(store: Store, dataset_id: str, split_hash: str | None = None) -> dict[str, Any]:
    """The dataset's latest split (or the one whose hash starts with `split_hash`), checked against its hash."""
    found = [s for s in _splits(store, dataset_id) if split_hash is None or s["hash"].startswith(split_hash)]
    if not found:
        raise NotFoundError(
            f"dataset {dataset_id[:12]} has no split{' ' + split_hash if split_hash else ''}; "
            "`geval split DATASET --dev 0.6` makes one"
        )
    split = found[-1]
    body = {k: split[k] for k in ("dataset_id", "by", "seed", "dev_share", "dev", "test")}
    if canonical_hash(body) != split["hash"]:
        raise InputError(
            f"the split {split['hash'][:12]} of dataset {dataset_id[:12]} was edited: its items do "
            "not match its hash",
            field="split",
        )
    return split


def record_test_use(
    store: Store, split: dict[str, Any], prompt_id: str, run_id: str | None = None, read: str | None = None
) -> int:
    """Record that a prompt was evaluated on the sealed test side (`read`: by what, when not a run); how many
    candidates have been, with it."""
    body = {"prompt_id": prompt_id, "run_id": run_id, **({"read": read} if read else {})}
    store.freeze_record("test-use", split["hash"], body, once=False)  # every use is a row of its own
    return len({u["prompt_id"] for u in sealed_uses(store, split)})


def sealed_uses(store: Store, split: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every recorded evaluation on the split's test side, oldest first: {prompt_id, run_id, at, read?}; a split
    carried to a newer version of its dataset (`carry_split`) counts the uses of the one it came from too."""
    own = [{**r["body"], "at": r["created_at"]} for r in store.records("test-use", split["hash"])]
    source = split.get("carried_from")
    if not source:
        return own
    earlier = sealed_uses(store, get_split(store, source["dataset_id"], source["hash"]))
    return sorted(earlier + own, key=lambda use: use["at"])


def carry_split(store: Store, source_dataset_id: str, dataset_id: str, item_ids: list[str]) -> dict[str, Any]:
    """The source version's split carried to a newer version of the dataset (a snapshot of its ratings): the same
    items on the same sides, frozen for the new version, its test-side uses still counted; a new version never
    opens the sealed side."""
    source = get_split(store, source_dataset_id)
    ids = set(item_ids)
    body = {
        "dataset_id": dataset_id,
        "by": source["by"],
        "seed": source["seed"],
        "dev_share": source["dev_share"],
        "dev": sorted(ids & set(source["dev"])),
        "test": sorted(ids & set(source["test"])),
    }
    split = {
        **body,
        "hash": canonical_hash(body),
        "groups": source.get("groups"),
        "carried_from": {"dataset_id": source_dataset_id, "hash": source["hash"]},
    }
    record, _ = store.freeze_record("split", dataset_id, split)
    return {**record["body"], "created_at": record["created_at"]}


SIDES = ("dev", "test")


def has_split(store: Store, dataset_id: str) -> bool:
    """Whether the dataset version has a stored split."""
    return bool(store.records("split", dataset_id))


def evaluation_ids(
    store: Store,
    dataset_id: str,
    side: str = "dev",
    examples: AbstractSet[str] = frozenset(),
    prompt_id: str | None = None,
    run_id: str | None = None,
    read: str | None = None,
) -> tuple[set[str] | None, dict[str, Any]]:
    """(the item ids a figure may use, what that scope is): the dev side of a split dataset by default, its sealed
    test side only when asked (the use is recorded, so `prompt_id` is required then; `read` names the command
    when it is not a run), never an example item.

    None for the ids means every item of an unsplit dataset with no example to leave out.
    """
    if side not in SIDES:
        raise InputError(f"the side is dev or test, got {side!r}", field="side")
    scope: dict[str, Any] = {"side": None, "split": None, "examples_left_out": 0, "candidates_on_test": None}
    if has_split(store, dataset_id):
        split = get_split(store, dataset_id)
        ids = set(split[side])
        scope.update(side=side, split=split["hash"])
        if side == "test":
            if prompt_id is None:
                raise InputError(
                    "using the sealed test side is recorded: name the prompt it evaluates", field="side"
                )
            scope["candidates_on_test"] = record_test_use(store, split, prompt_id, run_id, read)
    elif side == "test":
        raise InputError(
            f"dataset {dataset_id[:12]} has no split, so no test side: `geval split` makes one", field="side"
        )
    else:
        ids = None
    if examples:
        every = ids if ids is not None else {i.id for i in store.dataset_items(dataset_id)}
        scope["examples_left_out"] = len(every & set(examples))
        ids = every - set(examples)
    return ids, scope


class ScopedStore:
    """A store whose runs' judgments are only those in `only` (None: all): every figure read through it, the
    diagnostics included, stays on one side of a split, without the prompt's example items."""

    def __init__(self, store: Any, only: set[str] | frozenset | None) -> None:
        self._store, self._only = store, only

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """The run's judgments inside the scope."""
        rows = self._store.judgments(run_id)
        return rows if self._only is None else [r for r in rows if r["item_id"] in self._only]


class SealedStore(ScopedStore):
    """A ScopedStore whose reads of one dataset version's items and human ratings stay in the scope too, and whose
    runs on that version show only the judgments in it: what a command that shows item-level values reads."""

    def __init__(self, store: Any, dataset_id: str, only: set[str] | frozenset) -> None:
        super().__init__(store, only)
        self._dataset, self._sealed_ids = dataset_id, only

    def _sealed(self, ref: str) -> bool:
        return ref == self._dataset or self._store.get_dataset(ref).id == self._dataset

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """The run's judgments, inside the scope when the run is on the sealed dataset."""
        if self._store.get_run(run_id).dataset_id != self._dataset:
            return self._store.judgments(run_id)
        return super().judgments(run_id)

    def dataset_items(self, ref: str) -> list[Any]:
        """The version's items, only those inside the scope when it is the sealed one."""
        items = self._store.dataset_items(ref)
        return [i for i in items if i.id in self._sealed_ids] if self._sealed(ref) else items

    def human_means(self, ref: str, name: str) -> dict[str, float]:
        """Per item, the people's mean rating `name`, only inside the scope when the version is the sealed one."""
        means = self._store.human_means(ref, name)
        return {k: v for k, v in means.items() if k in self._sealed_ids} if self._sealed(ref) else means

    def unsaved_ratings(self, ref: str, name: str) -> list[str]:
        """The items with Rate-page ratings not in the version, only inside the scope when it is the sealed one."""
        ids = self._store.unsaved_ratings(ref, name)
        return [i for i in ids if i in self._sealed_ids] if self._sealed(ref) else ids


def sealed_view(
    store: Any,
    dataset_id: str,
    side: str = "dev",
    prompt_id: str | None = None,
    run_id: str | None = None,
    read: str | None = None,
) -> tuple[Any, dict[str, Any]]:
    """(the store to read a dataset version's item-level judge and human values through, the scope): the one way
    a command that shows them reads a split dataset. The dev side unless the test side is asked for, and asking
    records a use of it for `prompt_id` (`read` names the command); an unsplit version is read whole."""
    ids, scope = evaluation_ids(store, dataset_id, side, frozenset(), prompt_id, run_id, read)
    return (store if ids is None else SealedStore(store, dataset_id, ids)), scope


def sealed_run(
    store: Any, run: Run, side: str = "dev", read: str | None = None
) -> tuple[Any, dict[str, Any]]:
    """sealed_view of a run's dataset for its prompt, with `withheld`: how many of the run's judgments are on the
    other side (the test side's, read on dev, are the sealed ones)."""
    view, scope = sealed_view(store, run.dataset_id, side, run.prompt_id, run.id, read)
    scope["withheld"] = 0
    if scope["side"] is not None:
        other = get_split(store, run.dataset_id)["test" if side == "dev" else "dev"]
        scope["withheld"] = len(store.judgment_values_of(run.id, list(other)))
    return view, scope


def sealed_note(scope: dict[str, Any], what: str = "judgments") -> str | None:
    """What the seal left out, and how to read it, for a command's output; None when nothing was."""
    if scope.get("side") != "dev" or not scope.get("withheld"):
        return None
    return (
        f"{scope['withheld']} {what} of the sealed test side of split {scope['split'][:12]} left out (the dev "
        "side only): --side test reads them, and the read is recorded as a use of the test side"
    )
