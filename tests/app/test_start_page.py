"""AppTest: the Start page shows the path with this library's state on every step and points at the next one."""

from __future__ import annotations

import pytest
from app_support import open_page, page_text, plain, use_temp_library

from geval_core.types import Item
from prompt_library import Library
from tests.runner_helpers import dimension
from workbench_ui.start_path import next_step, path_state


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    return use_temp_library(tmp_path, monkeypatch)


def test_a_new_library_starts_at_the_first_step_and_the_examples_do_not_count(lib_path):
    at = open_page()  # the Start page is the app's first page
    text = page_text(at)
    assert "Next: Describe one quality dimension." in text
    with Library(lib_path) as lib:
        steps = path_state(lib)
    assert [s.done for s in steps] == [
        False
    ] * 7  # four example prompts and the sample set are not the user's
    assert "0 draft(s), 0 prompt(s) of your own" in steps[0].state
    assert steps[3].state == "only the example set sample"


def test_the_path_follows_the_librarys_state(lib_path):
    from geval_core.providers.scripted import ScriptedJudge
    from geval_core.run.plan import plan_run, start_run

    with Library(lib_path) as lib:
        prompt = lib.freeze(dimension(steps_model="gpt-test"), name="clarity").prompt
        assert [s.done for s in path_state(lib)][:4] == [True, True, True, False]
        assert next_step(path_state(lib)).title == "Import data people rated"
        data = lib.import_items(
            "golden",
            [
                Item(f"g{k}", {"document": f"Doc {k}.", "summary": f"Sum {k}."}, {"coherence": 1 + k % 5})
                for k in range(6)
            ],
        )
        start_run(lib, plan_run(lib, prompt, data["id"]), ScriptedJudge())
        steps = path_state(lib)
    # A run on rated data makes agreement possible; the step is done once the person has seen it.
    assert [s.done for s in steps] == [True, True, True, True, True, False, False]
    assert steps[3].state == "golden@1" and steps[4].state == "1 finished run(s) of your prompts"
    assert "open the Agreement page" in steps[5].state
    at = open_page()
    assert "Next: Compare the judge with people." in page_text(at)
    at.button(key="start_next").click().run()
    assert [t.value for t in at.title][0] == "Agreement and comparison"  # the next step's page opened
    with Library(lib_path) as lib:
        steps = path_state(lib)
    assert [s.done for s in steps] == [True] * 6 + [False]  # the run's agreement was shown
    at = open_page()
    assert "Next: Export the frozen prompt." in page_text(at)
    at.button(key="start_next").click().run()
    assert [t.value for t in at.title] == ["Library"]
    assert at.selectbox(key="lib_name").value == "clarity"  # the person's own prompt, not an example


def test_a_finished_run_shows_the_paths_next_step_as_a_link(lib_path):
    from geval_core.providers.scripted import ScriptedJudge
    from geval_core.run.plan import plan_run, start_run

    with Library(lib_path) as lib:
        prompt = lib.freeze(dimension(steps_model="gpt-test"), name="clarity").prompt
        data = lib.import_items(
            "golden",
            [
                Item(f"g{k}", {"document": f"Doc {k}.", "summary": f"Sum {k}."}, {"coherence": 1 + k % 5})
                for k in range(6)
            ],
        )
        start_run(lib, plan_run(lib, prompt, data["id"]), ScriptedJudge())
    at = open_page("score")
    links = [e.proto for e in at.get("page_link")]
    assert [(plain(link.label), link.page) for link in links] == [
        ("Next: Compare the judge with people →", "agreement")
    ]
