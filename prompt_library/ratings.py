"""Human ratings made on the Rate page: append-only rows, the current rating per rater, snapshots.

Every act is a row (rated, skipped, cannot_judge, undo); the current state of a rater on an item is
their latest row that no undo took back. "Save as dataset version" snapshots the current ratings of
one dimension into a new immutable dataset version, keeping every rating the version already had:

- the version's own per-rater columns NAME.0, NAME.1, ... stay where they are (an imported golden set's raters),
  except the columns a workbench rater owns (saved from the Rate page before, named in the version's `raters`):
  that rater's current ratings stand for them;
- the workbench raters follow as new columns, in the sorted order of their names (the order written into the
  version's source and its `raters`, where an imported column is named "imported NAME.k");
- NAME on an item rated in the workbench is the mean of every per-rater rating the item now has, imported and
  workbench alike; an imported NAME given without per-rater ratings is superseded there (it does not say how many
  people it averages, so it cannot be weighed in);
- an item nobody rated in the workbench keeps its imported NAME and per-rater columns exactly.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from geval_core.errors import InputError
from geval_core.records import Dataset
from geval_core.stats.people import version_ratings
from geval_core.types import Item

from .base import insert_row, loads, now
from .datasets import DatasetMapping, DatasetsMixin
from .hashes import as_stored, row_hash

if TYPE_CHECKING:
    from geval_core.types import FrozenPrompt

STATUSES = ("rated", "skipped", "cannot_judge")


def current_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """item id -> the latest row not taken back by an undo, from one rater's rows in id order."""
    undone = {r["undoes"] for r in rows if r["status"] == "undo"}
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["status"] != "undo" and row["id"] not in undone:
            out[row["item_id"]] = row
    return out


def snapshot_items(
    items: list[Item],
    name: str,
    ratings: dict[str, dict[str, float]],
    names: list[str] | tuple[str, ...] = (),
) -> tuple[list[Item], list[str]]:
    """(items with the version's own NAME.k kept, the workbench raters' NAME.k after them and NAME by the module's
    rule; who each NAME.k is). Other human ratings are kept as they were.

    ratings: rater -> item id -> rating, for every rater who acted in the workbench (an empty dict for one whose
    acts were skips or undone). names: who the version's own NAME.k are (its `raters`), when it knows.
    """
    raters = sorted(r for r, by_item in ratings.items() if by_item)
    owned = {k for k, who in enumerate(names) if who in ratings}  # a workbench rater's earlier snapshot
    kept = sorted({k for item in items for k in _rater_values(item.human, name)} - owned)
    offset = kept[-1] + 1 if kept else 0
    labels = [names[k] if k < len(names) else f"imported {name}.{k}" for k in range(offset)] + raters
    out = []
    for item in items:
        old = _rater_values(item.human, name)
        imported = {k: v for k, v in old.items() if k not in owned}
        given = {offset + j: ratings[r][item.id] for j, r in enumerate(raters) if item.id in ratings[r]}
        human = {k: v for k, v in item.human.items() if k != name and not _is_rater_key(k, name)}
        human.update({f"{name}.{k}": v for k, v in {**imported, **given}.items()})
        mean = _item_mean(item.human.get(name), old, imported, list(given.values()))
        if mean is not None:
            human[name] = mean
        out.append(replace(item, human=human))
    return out, labels


def _item_mean(
    own: float | None, old: dict[int, float], imported: dict[int, float], given: list[float]
) -> float | None:
    """NAME of one item: the mean of all its per-rater ratings once rated in the workbench, else its own."""
    if given:
        return math.fsum([*imported.values(), *given]) / (len(imported) + len(given))
    if len(imported) == len(old):
        return own  # untouched by the workbench: the version's own value, exactly
    # A workbench rater's earlier snapshot was taken back: the mean of what is left.
    return math.fsum(imported.values()) / len(imported) if imported else None


def _rater_values(human: dict[str, Any], name: str) -> dict[int, float]:
    """k -> the rating under NAME.k of one item."""
    return {
        int(key.rpartition(".")[2]): value
        for key, value in human.items()
        if _is_rater_key(key, name) and value is not None
    }


def _ratings_of(human: dict[str, Any], name: str) -> dict[str, float]:
    """NAME and NAME.k of one item, compared past float noise (a mean is summed again for the snapshot)."""
    return {
        k: round(float(v), 9)
        for k, v in human.items()
        if v is not None and (k == name or _is_rater_key(k, name))
    }


def _is_rater_key(key: str, name: str) -> bool:
    head, dot, tail = key.rpartition(".")
    return bool(dot) and head == name and tail.isdigit()


class RatingsMixin(DatasetsMixin):
    """Append-only human ratings of dataset items, per rater and dimension."""

    if TYPE_CHECKING:  # PromptsMixin's, beside this mixin in Library

        def get_prompt(self, name_or_id: str, version: int | None = None) -> FrozenPrompt: ...

    def add_rating(
        self,
        dataset_id: str,
        item_id: str,
        dimension: str,
        rater: str,
        rating: float | None = None,
        status: str = "rated",
        prompt_id: str | None = None,
    ) -> int:
        """Append one act (a rating, a skip or "cannot judge"); returns the new row's id."""
        rater, dimension = rater.strip(), dimension.strip()
        if not rater or not dimension:
            raise InputError("a rating needs a rater name and a dimension (type your name in the sidebar)")
        if status not in STATUSES:
            raise InputError(f"rating status must be one of {', '.join(STATUSES)}, got {status!r}")
        if (status == "rated") != (rating is not None and math.isfinite(float(rating))):
            raise InputError("a rating needs a number; a skip or 'cannot judge' has none")
        scale = self._rating_scale(dimension, prompt_id)
        if rating is not None and scale is not None and (rating not in scale or float(rating) != int(rating)):
            raise InputError(
                f"a {dimension} rating is one of the scale's points {scale} (got {rating!r})", field="rating"
            )
        return self._append(
            {
                "dataset_id": dataset_id,
                "item_id": item_id,
                "dimension": dimension,
                "prompt_id": prompt_id,
                "rater": rater,
                "rating": rating,
                "status": status,
            }
        )

    def _rating_scale(self, dimension: str, prompt_id: str | None) -> Any:
        """The scale a rating of `dimension` is on: the named prompt's, else the latest frozen prompt's whose
        dimension has that name; None when no frozen prompt knows the dimension."""
        if prompt_id:
            return self.get_prompt(prompt_id).dimension.scale
        # One query for the matching version, not every prompt read and checked in Python.
        row = self._one(
            "SELECT id FROM prompts WHERE lower(json_extract(dimension, '$.name')) = lower(?) "
            "OR name = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            [dimension, dimension],
        )
        return None if row is None else self.get_prompt(row["id"]).dimension.scale

    def _append(self, row: dict[str, Any]) -> int:
        """Insert one act with its id and row hash (the id is hashed too: an undo names it); the new id."""
        with self._write() as db:
            # Chosen here, not by SQLite on insert: the hash, stored with the row, covers it.
            next_id = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM ratings").fetchone()[0]
            stored = as_stored({"id": next_id, **row, "created_at": now()}, self._affinities("ratings"))
            insert_row(db, "ratings", {**stored, "row_hash": row_hash("ratings", stored)})
            return int(next_id)

    def undo_rating(self, dataset_id: str, dimension: str, rater: str) -> dict[str, Any] | None:
        """Take back the rater's latest act still standing (an undo row names it); the act, or None."""
        with self._write():
            rows = self.rating_rows(dataset_id, dimension, rater)
            undone = {r["undoes"] for r in rows if r["status"] == "undo"}
            standing = [r for r in rows if r["status"] != "undo" and r["id"] not in undone]
            if not standing:
                return None
            last = standing[-1]
            self._append(
                {
                    "dataset_id": dataset_id,
                    "item_id": last["item_id"],
                    "dimension": dimension,
                    "prompt_id": last["prompt_id"],
                    "rater": rater,
                    "status": "undo",
                    "undoes": last["id"],
                }
            )
            return last

    def rating_rows(self, dataset_id: str, dimension: str, rater: str | None = None) -> list[dict[str, Any]]:
        """Every act on one dimension that applies to this dataset version (one rater's, when named), oldest first.

        Acts made on another version of the same dataset carry over for the items whose inputs are the same
        in both versions: a new version (e.g. one saved from ratings) does not make people rate again.
        """
        versions = self._rows(
            "SELECT id FROM datasets WHERE name = (SELECT name FROM datasets WHERE id = ?)", [dataset_id]
        )
        ids = [v["id"] for v in versions] or [dataset_id]
        marks = ", ".join("?" * len(ids))
        sql = f"SELECT * FROM ratings WHERE dataset_id IN ({marks}) AND dimension = ?"
        params = [*ids, dimension]
        if rater is not None:
            sql, params = sql + " AND rater = ?", [*params, rater.strip()]
        rows = self._rows(sql + " ORDER BY id", params)
        if all(r["dataset_id"] == dataset_id for r in rows):
            return rows
        same = self._same_items(dataset_id, {r["dataset_id"] for r in rows} - {dataset_id})
        return [r for r in rows if r["dataset_id"] == dataset_id or (r["dataset_id"], r["item_id"]) in same]

    def _same_items(self, dataset_id: str, others: set[str]) -> set[tuple[str, str]]:
        """(other version, item id) for the items whose inputs equal this version's item of that id."""
        mine = {
            r["item_id"]: loads(r["fields"], {})
            for r in self._rows("SELECT item_id, fields FROM items WHERE dataset_id = ?", [dataset_id])
        }
        marks = ", ".join("?" * len(others))
        rows = self._rows(
            f"SELECT dataset_id, item_id, fields FROM items WHERE dataset_id IN ({marks})", list(others)
        )
        return {
            (r["dataset_id"], r["item_id"]) for r in rows if mine.get(r["item_id"]) == loads(r["fields"], {})
        }

    def current_ratings(self, dataset_id: str, dimension: str) -> dict[str, dict[str, dict[str, Any]]]:
        """rater -> item id -> that rater's current act (rated, skipped or cannot_judge)."""
        by_rater: dict[str, list[dict[str, Any]]] = {}
        for row in self.rating_rows(dataset_id, dimension):
            by_rater.setdefault(row["rater"], []).append(row)
        return {rater: current_rows(rows) for rater, rows in sorted(by_rater.items())}

    def human_means(self, dataset_id: str, dimension: str) -> dict[str, float]:
        """Per item, the people's rating `dimension` stored in this dataset version: what "people" means on every
        page and command (Rate-page ratings count once "Save as dataset version" stores them)."""
        return version_ratings(self.dataset_items(dataset_id), dimension)

    def unsaved_ratings(self, dataset_id: str, dimension: str) -> list[str]:
        """The items whose Rate-page ratings of `dimension` are not in this version: saving would change them."""
        return list(self._unsaved(self.get_dataset(dataset_id), dimension))

    def ratings_saved_in(self, dataset_id: str, dimension: str) -> str | None:
        """The label of the newest later version of this dataset that stores every Rate-page rating of `dimension`
        this version lacks (one saved from it), or None."""
        dataset = self.get_dataset(dataset_id)
        unsaved = self._unsaved(dataset, dimension)
        if not unsaved:
            return None
        later = self._rows(
            "SELECT id, name, version FROM datasets WHERE name = ? AND version > ? ORDER BY version DESC",
            [dataset.name, dataset.version],
        )
        for row in later:
            theirs = {i.id: _ratings_of(i.human, dimension) for i in self.dataset_items(row["id"])}
            if all(theirs.get(k) == v for k, v in unsaved.items()):
                return f"{row['name']}@{row['version']}"
        return None

    def _unsaved(self, dataset: Dataset, dimension: str) -> dict[str, dict[str, float]]:
        """item id -> its ratings of `dimension` as saving would store them, for the items where that differs."""
        if not self.rating_rows(dataset.id, dimension):
            return {}  # nobody rated here: no snapshot to read
        stored = self.dataset_items(dataset.id)  # read once: the version's own, and what saving makes of them
        items, _ = self._snapshot(dataset, dimension, stored)
        own = {i.id: _ratings_of(i.human, dimension) for i in stored}
        saved = {i.id: _ratings_of(i.human, dimension) for i in items}
        return {k: v for k, v in saved.items() if v != own[k]}

    def _snapshot(
        self, dataset: Dataset, dimension: str, stored: list[Item] | None = None
    ) -> tuple[list[Item], list[str]]:
        """snapshot_items of a dataset version (its `stored` items when read already) with its raters' current
        ratings of `dimension`."""
        ratings = {
            r: {i: row["rating"] for i, row in acts.items() if row["status"] == "rated"}
            for r, acts in self.current_ratings(dataset.id, dimension).items()
        }
        names = (dataset.mapping.raters if dataset.mapping else {}).get(dimension) or []
        items = self.dataset_items(dataset.id) if stored is None else stored
        return snapshot_items(items, dimension, ratings, names)

    def save_ratings_version(self, dataset_id: str, dimension: str) -> dict[str, Any]:
        """A new version of the dataset: its own ratings kept, every workbench rater's current rating of `dimension`
        added as a rater column, and the mean (see the module's rule)."""
        dataset = self.get_dataset(dataset_id)
        rated = [
            acts
            for acts in self.current_ratings(dataset.id, dimension).values()
            if any(row["status"] == "rated" for row in acts.values())
        ]
        if not rated:
            raise InputError(f"no ratings of {dimension!r} on {dataset.label} yet: rate some items first")
        items, raters = self._snapshot(dataset, dimension)
        order = ", ".join(f"{k}={name}" for k, name in enumerate(raters))
        source = f"ratings of {dimension} on {dataset.label} ({dataset.id[:12]}); raters {order}"
        stored = dataset.mapping or DatasetMapping()
        mapping = replace(stored, raters={**stored.raters, dimension: raters})
        from geval_core.run.splits import has_split

        carried = dataset.id if has_split(self, dataset.id) else None  # type: ignore[arg-type]  # a Library
        return {
            **self.import_items(
                dataset.name, items, source=source, mapping=mapping, carry_split_from=carried
            ),
            "raters": raters,
        }

    def rater_names(self, dataset_id: str, dimension: str) -> list[str]:
        """The people behind a saved version's NAME.0, NAME.1, ... of `dimension` (empty when not known)."""
        mapping = self.get_dataset(dataset_id).mapping
        return list((mapping.raters if mapping else {}).get(dimension) or [])
