"""AppTest: the Score page starts where the user is: on the prompt just frozen, never on a dataset that does
not fit the chosen prompt, and with the chosen judge's own default concurrency."""

from __future__ import annotations

import pytest
from app_support import open_design, open_page, use_temp_library
from runner_helpers import dimension

from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    open_page("score")  # the app seeds the library
    return path


def test_the_prompt_just_frozen_on_the_design_page_is_the_default(lib_path):
    at = open_design()
    at.text_input(key="design_name").set_value("Zebra clarity").run()
    at.text_area(key="design_definition").set_value("How clear the summary is.").run()
    at.button(key="design_freeze").click().run()
    frozen = at.session_state["design_frozen"]["label"]
    at.switch_page("app_pages/score.py").run()
    assert frozen.startswith("zebra") and at.selectbox(key="score_prompt").value == frozen


def test_a_dataset_that_does_not_fit_the_new_prompt_is_not_kept(lib_path):
    from geval_core.types import Item

    with Library(lib_path) as lib:
        lib.freeze(
            dimension(
                name="Dialogue", inputs=("context", "response"), definition="Dialogue turns.", template=""
            ),
            name="dialogue",
        )
        lib.import_items("turns", [Item("t1", {"context": "Hi.", "response": "Hello."})])
    at = open_page("score")
    at.selectbox(key="score_prompt").set_value("coherence@1").run()
    at.selectbox(key="score_dataset").set_value("sample@1").run()
    at.selectbox(key="score_prompt").set_value("dialogue@1").run()
    assert at.selectbox(key="score_dataset").value == "turns@1" and not at.error


def test_concurrency_starts_at_the_chosen_judges_default(lib_path):
    at = open_page("score")
    keys = {w.key for w in at.number_input}
    assert any(k.startswith("score_concurrency_") for k in keys)
    [box] = [w for w in at.number_input if w.key.startswith("score_concurrency_")]
    assert box.value == 1 or box.key.endswith("scripted")  # the test judge: the registry's default


def test_the_score_and_rate_pages_keep_their_choices_across_pages(lib_path):
    from geval_core.types import Item

    with Library(lib_path) as lib:
        second = lib.import_items("second", [Item("s1", {"document": "D.", "summary": "S."})])["id"]
        fluency = lib.get_prompt("fluency").id
    at = open_page("score")
    at.selectbox(key="score_prompt").set_value("fluency@1").run()
    at.selectbox(key="score_dataset").set_value("second@1").run()
    at.switch_page("app_pages/rate.py").run()
    at.selectbox(key="rate_prompt").set_value(fluency).run()
    labels = at.selectbox(key="rate_dataset").options
    at.selectbox(key="rate_dataset").select(next(o for o in labels if o.startswith("second@1"))).run()
    at.switch_page(
        "app_pages/design.py"
    ).run()  # a page without those pickers: Streamlit forgets their values
    at.switch_page("app_pages/score.py").run()
    assert at.selectbox(key="score_prompt").value == "fluency@1"
    assert at.selectbox(key="score_dataset").value == "second@1"
    at.switch_page("app_pages/rate.py").run()
    assert at.selectbox(key="rate_prompt").value == fluency  # digit keys rate the dimension chosen before
    assert at.selectbox(key="rate_dataset").value == second


def test_the_prompt_just_frozen_is_the_rate_pages_default_too(lib_path):
    at = open_page("rate")
    at.switch_page("app_pages/design.py").run()
    at.button(key="design_example_coherence@1").click().run()
    at.text_input(key="design_name").set_value("Zebra clarity").run()
    at.text_area(key="design_definition").set_value("How clear the summary is.").run()
    at.button(key="design_freeze").click().run()
    frozen = at.session_state["design_frozen"]["hash"]
    at.switch_page("app_pages/rate.py").run()
    assert at.selectbox(key="rate_prompt").value == frozen
