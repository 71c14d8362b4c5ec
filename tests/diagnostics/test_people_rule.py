"""One meaning of "people" (issue 40): every reader that compares a judge with people reads the ratings stored in
the dataset version scored. An item imported with a 5 and rated 4 on the Rate page is a 5 for every reader until
"Save as dataset version" stores the 4 in a new version; a run on that version reads the 4. The notice that says
so counts the item before saving and is gone on the saved version."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from runner_helpers import dimension

from geval_core.diagnostics.align import disputed_items
from geval_core.diagnostics.budget import _inputs as budget_inputs
from geval_core.diagnostics.budget import run_budget
from geval_core.diagnostics.cascade import cascade_curve
from geval_core.diagnostics.compare import compare_runs
from geval_core.diagnostics.panel_people import panel_against_people
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.people import unsaved_note
from geval_core.stats.stored import agreement_inputs_from_run, run_agreement
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

CHEAP = JudgeSettings(provider="scripted", model="scripted-cheap")
STRONG = JudgeSettings(provider="scripted", model="scripted-strong")
HUMAN = [5, 2, 3, 4, 1, 5, 3, 2, 4, 3, 1, 2, 5, 4, 3, 2]  # the first item, "x00", is the one rated again
MARK = re.compile(r"\[c=(\d)\]\[s=(\d)\]")


def script(strong: bool):
    def answer(request) -> dict[str, float]:
        cheap, sure = MARK.search("".join(m["content"] for m in request.messages)).groups()
        point = int(sure if strong else cheap)
        near = point - 1 if point > 1 else point + 1
        return {str(point): 0.7, str(near): 0.25, "The": 0.05}

    return answer


def golden_items() -> list[Item]:
    out = []
    for k, human in enumerate(HUMAN):
        cheap, strong = (k * 3) % 5 + 1, max(1, min(5, human + (k % 3) - 1))
        summary = f"Summary {k} [c={cheap}][s={strong}]"
        out.append(
            Item(f"x{k:02d}", {"document": f"Document {k}.", "summary": summary}, {"coherence": human})
        )
    return out


class Told:
    """The library, with people's ratings as the test states them: what each reader should have read."""

    def __init__(self, lib: Library, people: dict[str, float]) -> None:
        self._lib, self._people = lib, people

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)

    def human_means(self, dataset_id: str, dimension: str) -> dict[str, float]:
        return dict(self._people)


def runs_on(lib: Library, prompts: dict, dataset_id: str) -> tuple[str, str]:
    made = []
    for name, settings in (("cheap", CHEAP), ("strong", STRONG)):
        run_id = lib.create_run(prompts[name].id, dataset_id, settings)
        run_scoring(
            prompts[name],
            lib.dataset_items(dataset_id),
            ScriptedJudge(script(name == "strong")),
            lib,
            run_id,
            RunOptions(settings=settings),
        )
        made.append(run_id)
    return made[0], made[1]


def panel_rows(store, cheap: str, strong: str) -> list[dict[str, Any]]:
    a = {r["item_id"]: r["score"] for r in store.judgments(cheap)}
    b = {r["item_id"]: r["score"] for r in store.judgments(strong)}
    return [{"id": i, "score": (a[i] + b[i]) / 2, "members": {"cheap": a[i], "strong": b[i]}} for i in a]


READERS = {
    "agreement": lambda s, d, c, t: run_agreement(s, c, "coherence"),
    "align": lambda s, d, c, t: disputed_items(s, c, "coherence", None, limit=100),
    "compare": lambda s, d, c, t: compare_runs(s, c, t, "coherence", resamples=200),
    "cascade": lambda s, d, c, t: cascade_curve(s, c, t, "coherence", "entropy", thresholds=5, bootstrap=100),
    "budget": lambda s, d, c, t: run_budget(s, c, "coherence", width=0.4, ppi_width=0.6, bootstrap=100),
    "panel-people": lambda s, d, c, t: panel_against_people(s, panel_rows(s, c, t), d, "coherence", 100),
}


def same(a: Any, b: Any) -> bool:
    """Equal as the reports read (NaN equal to NaN)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """(library, prompts, golden@1 with one unsaved Rate-page rating, golden@2 saved from it)."""
    lib = Library(tmp_path_factory.mktemp("people") / "lib.db", seed_examples=False)
    prompts = {
        "cheap": lib.freeze(dimension(CHEAP), name="cheap").prompt,
        "strong": lib.freeze(dimension(STRONG, definition="Coherence, read closely."), name="strong").prompt,
    }
    first = lib.import_items("golden", golden_items())
    runs1 = runs_on(lib, prompts, first["id"])
    lib.add_rating(first["id"], "x00", "coherence", "ann", 4)  # imported 5, rated 4 on the Rate page
    before = {name: read(lib, first["id"], *runs1) for name, read in READERS.items()}
    note_before = unsaved_note(lib, first["id"], "coherence")
    second = lib.save_ratings_version(first["id"], "coherence")
    runs2 = runs_on(lib, prompts, second["id"])
    yield {
        "lib": lib,
        "first": (first, runs1, before, note_before),
        "second": (second, runs2),
    }
    lib.close()


def test_the_version_keeps_its_5_until_saved_and_the_saved_version_has_the_4(golden):
    lib = golden["lib"]
    (first, runs1, _, _), (second, runs2) = golden["first"], golden["second"]
    assert lib.human_means(first["id"], "coherence")["x00"] == 5.0
    assert (
        lib.human_means(second["id"], "coherence")["x00"] == 4.0
    )  # the imported 5 had no raters: superseded
    for (cheap, _), want in ((runs1, 5.0), (runs2, 4.0)):
        judge, human, _ = agreement_inputs_from_run(lib, cheap, "coherence")
        ids = [r["item_id"] for r in lib.judgments(cheap) if r["score"] is not None]
        assert dict(zip(ids, human, strict=True))["x00"] == want
        rows = {r["item_id"]: r for r in disputed_items(lib, cheap, "coherence", None, limit=100)}
        assert rows["x00"]["human"] == want and rows["x00"]["point"] == want
        inputs = budget_inputs(lib, cheap, "coherence")
        assert dict(zip(ids, inputs["human"], strict=True))["x00"] == want


@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_reads_the_versions_own_ratings(golden, reader):
    lib = golden["lib"]
    (first, runs1, before, _), (second, runs2) = golden["first"], golden["second"]
    own = {i.id: float(i.human["coherence"]) for i in golden_items()}
    read = READERS[reader]
    # Before saving: the Rate-page 4 is not counted; the reader reads x00 as 5 (not 4).
    assert same(before[reader], read(Told(lib, own), first["id"], *runs1))
    assert not same(before[reader], read(Told(lib, {**own, "x00": 4.0}), first["id"], *runs1))
    # On the saved version: the 4.
    assert same(read(lib, second["id"], *runs2), read(Told(lib, {**own, "x00": 4.0}), second["id"], *runs2))


def test_the_notice_counts_the_unsaved_rating_and_names_the_version_that_stores_it(golden):
    lib = golden["lib"]
    (first, _, _, note_before), (second, _) = golden["first"], golden["second"]
    assert (
        note_before == "1 item has Rate-page ratings not in golden@1; Save as dataset version to count them."
    )
    assert unsaved_note(lib, second["id"], "coherence") is None  # saved: nothing to say
    assert unsaved_note(lib, first["id"], "coherence") == (
        "1 item has Rate-page ratings not in golden@1; golden@2 stores them: score that version to count them."
    )
