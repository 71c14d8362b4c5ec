"""What "people" means in every figure that compares a judge with people, and the one sentence said when the
Rate page holds ratings that figure does not count yet."""

from __future__ import annotations

from collections.abc import Iterable

from ..store import Store
from ..types import Item

RULE = (
    "People's ratings are the ones stored in the dataset version being scored; ratings made on the Rate page "
    'count once "Save as dataset version" stores them as a new version.'
)


def version_ratings(items: Iterable[Item], dimension: str) -> dict[str, float]:
    """Per item, the people's rating `dimension` as the dataset version stores it (items without one left out)."""
    return {i.id: float(i.human[dimension]) for i in items if i.human.get(dimension) is not None}


def unsaved_note(store: Store, dataset_id: str, dimension: str) -> str | None:
    """The sentence saying how many items have Rate-page ratings of `dimension` not in this version; None when none."""
    count = len(store.unsaved_ratings(dataset_id, dimension))
    if not count:
        return None
    label = store.get_dataset(dataset_id).label
    have = "item has" if count == 1 else "items have"
    saved = store.ratings_saved_in(dataset_id, dimension)
    # Saved already from this version: saving again finds the same version; what counts them is scoring it.
    how = (
        f"{saved} stores them: score that version to count them"
        if saved
        else "Save as dataset version to count them"
    )
    return f"{count} {have} Rate-page ratings not in {label}; {how}."
