"""The seal at import: items whose text is a sealed test item's (exactly, or once whitespace and case are
normalised) do not enter another dataset version unless the import is recorded as a use of that test side.

Otherwise the test side could be read with no use recorded: import its items again (unchanged, or with one space
changed) under another name, and score or rate them there. A text counts as sealed when a test item of a split
version has it in one of its fields and no dev item of that version does (a document shared by both sides, or a
field every item repeats, seals nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from geval_core.errors import InputError
from geval_core.records import Dataset
from geval_core.types import Item

if TYPE_CHECKING:
    from .library import Library


def normal_text(text: Any) -> str:
    """A field's text with runs of whitespace made one space, ends trimmed, and case folded."""
    return " ".join(str(text).split()).casefold()


@dataclass(frozen=True)
class SealedMatch:
    """Imported items whose text is on the test side of one split version."""

    dataset: Dataset  # the split version
    split: dict[str, Any]
    pairs: list[tuple[str, str]]  # (imported item id, the sealed test item id whose text it has)


def _sealed_texts(library: Library, dataset_id: str, split: dict[str, Any]) -> dict[str, str]:
    """Normalised text -> the id of a test item that has it, for the texts no dev item has."""
    test, dev_texts, sealed = set(split["test"]), set(), {}
    for item in library.dataset_items(dataset_id):
        texts = {normal_text(v) for v in item.fields.values()} - {""}
        if item.id in test:
            sealed.update({t: item.id for t in texts if t not in sealed})
        else:
            dev_texts |= texts
    return {t: i for t, i in sealed.items() if t not in dev_texts}


class SealedCheck:
    """The seal's check fed one item at a time (an import read from its file): every split version's sealed texts
    read once, the items that match them kept."""

    def __init__(self, library: Library) -> None:
        from geval_core.run.splits import get_split

        self.library = library
        self.splits = []
        for dataset_id in library.record_keys("split"):
            split = get_split(library, dataset_id)
            self.splits.append((dataset_id, split, _sealed_texts(library, dataset_id, split)))
        self.pairs: dict[str, list[tuple[str, str]]] = {dataset_id: [] for dataset_id, _, _ in self.splits}

    def see(self, item: Item) -> None:
        """Check one imported item against every sealed test side."""
        if not self.splits:
            return
        texts = dict.fromkeys(normal_text(v) for v in item.fields.values())
        for dataset_id, _, sealed in self.splits:
            self.pairs[dataset_id].extend((item.id, sealed[t]) for t in texts if t in sealed)

    def matches(self) -> list[SealedMatch]:
        """Every split version whose sealed test side holds the text of an item seen, with the pairs that match."""
        return [
            SealedMatch(self.library.get_dataset(dataset_id), split, self.pairs[dataset_id])
            for dataset_id, split, _ in self.splits
            if self.pairs[dataset_id]
        ]


def sealed_matches(library: Library, items: Iterable[Item]) -> list[SealedMatch]:
    """Every split version whose sealed test side holds the text of one of `items`, with the pairs that match."""
    check = SealedCheck(library)
    for item in items:
        check.see(item)
    return check.matches()


def check_import(
    library: Library, name: str, items: Iterable[Item], test_use: str | None, carried_from: str | None = None
) -> None:
    """Refuse items of a sealed test side in a new version of `name`, or, with `test_use` (a prompt), record the
    import as a use of each test side they come from, for that prompt (`enforce_seal` on `items`)."""
    enforce_seal(library, name, sealed_matches(library, items), test_use, carried_from)


def enforce_seal(
    library: Library,
    name: str,
    found: list[SealedMatch],
    test_use: str | None,
    carried_from: str | None = None,
) -> None:
    """Refuse the matches, or record each as a use of its test side for `test_use`. A snapshot of a split version
    that carries its split (`carried_from`) keeps that version's items sealed where they are: not a new way in."""
    matches = [m for m in found if m.dataset.id != carried_from]
    if not matches:
        return
    if test_use is None:
        raise InputError(_refusal(matches[0]), field="items")
    from geval_core.run.splits import record_test_use

    prompt_id = library.get_prompt(test_use).id
    for match in matches:
        count = len({new for new, _ in match.pairs})
        record_test_use(library, match.split, prompt_id, read=f"import of {count} of its items as {name}")


def _refusal(match: SealedMatch) -> str:
    new, old = match.pairs[0]
    same = f"item {new!r}" if new == old else f"item {new!r} (the text of test item {old!r})"
    return (
        f"{len({n for n, _ in match.pairs})} of these items, e.g. {same}, are on the sealed test side of "
        f"dataset {match.dataset.label} (split {match.split['hash'][:12]}), matched on their text once "
        "spaces and case are normalised: imported as another dataset they could be scored and compared with people "
        "with no use of the test side recorded. Import them without those items (the dev side's are free to "
        "use), or record the import as a use of that test side for the prompt it evaluates (`geval datasets "
        "import --test-use PROMPT`; `geval align report` counts it)"
    )
