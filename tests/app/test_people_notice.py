"""AppTest: the pages read people's ratings from the dataset version scored and say, in one sentence, when the
Rate page holds ratings that version lacks; the sentence is gone on the version saved from them (issue 40). And the
Agreement page on data without groups says which reading applies."""

from __future__ import annotations

import pytest
from app_support import metric, open_page, page_text, use_temp_library, values
from test_agreement_page import SCRIPTED, scored_run

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import Item
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def notices(at) -> list[str]:
    return [v for v in values(at.info) if "Rate-page ratings" in v]


def test_the_agreement_page_counts_unsaved_rate_page_ratings_until_they_are_saved(lib_path):
    lib = Library(lib_path)
    first = scored_run(lib)
    sample = lib.get_dataset("sample")
    item = lib.dataset_items(sample.id)[0]
    lib.add_rating(sample.id, item.id, "coherence", "ann", 1.0 if item.human["coherence"] != 1 else 5.0)
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    assert notices(at) == [
        "1 item has Rate-page ratings not in sample@1; Save as dataset version to count them."
    ]
    spearman = metric(at, "Spearman ρ")  # the version's own ratings: the same as with no Rate-page rating
    lib.save_ratings_version(sample.id, "coherence")
    saved = lib.get_dataset("sample@2")
    run_id = lib.create_run(lib.get_prompt("coherence").id, saved.id, SCRIPTED)
    run_scoring(
        lib.get_prompt("coherence"),
        lib.dataset_items(saved.id),
        ScriptedJudge(),
        lib,
        run_id,
        RunOptions(settings=SCRIPTED),
    )
    at = open_page("agreement")
    at.selectbox(key="ag_run").set_value(run_id).run()
    at.number_input(key="ag_boot").set_value(0).run()
    assert notices(at) == []  # the saved version has the rating: nothing to say
    assert metric(at, "Spearman ρ") != spearman  # and counts it
    at.selectbox(key="ag_run").set_value(first).run()
    assert notices(at) == [
        "1 item has Rate-page ratings not in sample@1; sample@2 stores them: score that version to count them."
    ]
    assert metric(at, "Spearman ρ") == spearman


def test_without_groups_the_pages_say_the_dataset_level_reading_applies(lib_path):
    lib = Library(lib_path)
    items = [
        Item(f"n{k}", {"document": f"Doc {k}.", "summary": f"Summary {k}."}, {"coherence": float(k % 5 + 1)})
        for k in range(8)
    ]
    dataset = lib.import_items("flat", items)
    prompt = lib.get_prompt("coherence")
    run_id = lib.create_run(prompt.id, dataset["id"], SCRIPTED)
    run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_page("agreement")
    at.selectbox(key="ag_run").set_value(run_id).run()
    text = page_text(at)
    said = (
        "does not give every item a group (no document column), so the reading that applies is dataset-level"
    )
    assert said in text
    readings = at.dataframe[0].value["reading"].tolist()
    assert readings and all(r.startswith("dataset-level") for r in readings)  # group-level rows not offered
    at.switch_page("app_pages/library.py").run()  # the export's attached agreement: the same rule
    at.checkbox(key=f"lib_attach_{prompt.id}").check().run()
    assert at.radio(key=f"lib_agree_reading_{prompt.id}").options == ["dataset-level (all items pooled)"]
    assert said in page_text(at)
