"""'Save as dataset version' keeps a golden set whole: every imported rating stays, the workbench raters are added
beside the imported ones, and NAME on a rated item is the mean of all its per-rater ratings (issue 38)."""

from __future__ import annotations

import json
import math

import pytest
from app_support import open_page, page_text, use_temp_library

from prompt_library import DatasetMapping, Library

ITEMS = 36
RATED = 20  # rated in the workbench; the other 16 only carry their imported ratings
MAPPING = DatasetMapping(
    inputs={"document": "doc", "summary": "text"},
    human={"coherence": "experts.coherence", "fluency": "fluency"},
)


def golden_rows() -> list[dict]:
    """36 items rated by three people on coherence (one null), and a fluency mean alone."""
    rows = []
    for n in range(ITEMS):
        people = [1 + n % 5, 1 + (n + 1) % 5, None if n % 7 == 0 else 1 + (n * 3) % 5]
        rows.append(
            {
                "id": f"g{n:02d}",
                "doc": f"Document {n}.",
                "text": f"Summary {n}.",
                "experts": {"coherence": people},
                "fluency": 1 + n % 3,
            }
        )
    return rows


def import_golden(lib, tmp_path) -> tuple[str, list]:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in golden_rows()), encoding="utf-8")
    dataset = lib.import_dataset(path, "golden", MAPPING)
    return dataset["id"], lib.dataset_items(dataset["id"])


def rate(lib, dataset_id: str, items: list) -> dict[str, dict[str, float]]:
    """al rates the first 20 items, bo every other one of them; rater -> item -> rating."""
    given: dict[str, dict[str, float]] = {"al": {}, "bo": {}}
    for n, item in enumerate(items[:RATED]):
        given["al"][item.id] = float(1 + (n * 2) % 5)
        lib.add_rating(dataset_id, item.id, "coherence", "al", given["al"][item.id])
        if n % 2 == 0:
            given["bo"][item.id] = float(5 - n % 5)
            lib.add_rating(dataset_id, item.id, "coherence", "bo", given["bo"][item.id])
    return given


@pytest.fixture
def lib(tmp_path):
    with Library(tmp_path / "lib.db") as library:
        yield library


def test_every_imported_rating_survives_and_workbench_raters_follow_the_imported_ones(lib, tmp_path):
    dataset_id, before = import_golden(lib, tmp_path)
    given = rate(lib, dataset_id, before)
    own = lib.human_means(dataset_id, "coherence")  # what the pages read before saving: the version's own
    assert own == {i.id: i.human["coherence"] for i in before}
    assert sorted(lib.unsaved_ratings(dataset_id, "coherence")) == sorted(i.id for i in before[:RATED])
    saved = lib.save_ratings_version(dataset_id, "coherence")
    means = lib.human_means(saved["id"], "coherence")
    assert lib.unsaved_ratings(saved["id"], "coherence") == []
    assert saved["raters"] == [
        "imported coherence.0",
        "imported coherence.1",
        "imported coherence.2",
        "al",
        "bo",
    ]
    assert lib.rater_names(saved["id"], "coherence") == saved["raters"]
    after = {i.id: i.human for i in lib.dataset_items(saved["id"])}
    assert len(after) == ITEMS
    for item in before[RATED:]:  # nobody rated them here: exactly what was imported (16 items)
        assert after[item.id] == item.human and "coherence.0" in item.human and "coherence" in item.human
    kept = 0
    for item in before[:RATED]:
        human = after[item.id]
        for key, value in item.human.items():  # every imported rating is still there, under its own key
            if key != "coherence":
                assert human[key] == value
                kept += 1
        assert human["coherence.3"] == given["al"][item.id]
        assert human.get("coherence.4") == given["bo"].get(item.id)
        every = [v for k, v in human.items() if k.startswith("coherence.")]
        assert human["coherence"] == pytest.approx(math.fsum(every) / len(every))
        assert means[item.id] == human["coherence"]  # the saved version's people: the new mean
    assert kept == sum(len(i.human) - 1 for i in before[:RATED])
    assert all(means[i.id] == after[i.id]["coherence"] for i in before)


def test_saving_again_replaces_a_workbench_raters_column_and_never_doubles_it(lib, tmp_path):
    dataset_id, before = import_golden(lib, tmp_path)
    rate(lib, dataset_id, before)
    first = lib.save_ratings_version(dataset_id, "coherence")
    target = before[0].id
    lib.add_rating(first["id"], target, "coherence", "al", 5)  # al changes a rating on the saved version
    lib.add_rating(
        first["id"], before[RATED].id, "coherence", "cy", 2
    )  # a new rater on an imported-only item
    second = lib.save_ratings_version(first["id"], "coherence")
    assert second["raters"] == [
        "imported coherence.0",
        "imported coherence.1",
        "imported coherence.2",
        "al",
        "bo",
        "cy",
    ]
    after = {i.id: i.human for i in lib.dataset_items(second["id"])}
    assert after[target]["coherence.3"] == 5.0 and "coherence.6" not in after[target]
    imported = before[RATED].human
    assert {k: after[before[RATED].id][k] for k in imported if k != "coherence"} == {
        k: v for k, v in imported.items() if k != "coherence"
    }
    assert after[before[RATED].id]["coherence.5"] == 2.0
    for item in before[RATED + 1 :]:  # still untouched two saves later
        assert after[item.id] == item.human


def test_the_rate_page_button_keeps_the_imported_ratings(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        dataset_id, before = import_golden(lib, tmp_path)
        rate(lib, dataset_id, before)
    at = open_page("rate")
    at.selectbox(key="rate_dataset").set_value(dataset_id).run()
    at.button(key="rate_save").click().run()
    assert "Saved as golden@2" in page_text(at) and "0 items without a rating" in page_text(at)
    with Library(path) as lib:
        after = {i.id: i.human for i in lib.dataset_items(lib.get_dataset("golden").id)}
    assert all(after[i.id] == i.human for i in before[RATED:])
