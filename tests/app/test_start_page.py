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
    assert "no frozen prompt of your own, no draft waiting to be frozen" in steps[0].state
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
    assert steps[3].state == "golden@1" and steps[4].state == "1 finished run of your prompts"
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


def test_every_step_done_says_so_with_readable_marks_and_a_frozen_draft_is_not_open(lib_path):
    from workbench_ui.start_path import AGREEMENT_SEEN, EXPORTED, REMEMBERED

    with Library(lib_path) as lib:
        draft = dimension(steps_model="gpt-test")
        lib.save_draft(draft)
        assert "1 draft not frozen yet" in path_state(lib)[0].state
        prompt = lib.freeze(draft, name="clarity").prompt  # the draft as it is, frozen
        data = lib.import_items(
            "golden",
            [Item(f"g{k}", {"document": "D.", "summary": "S."}, {"coherence": 1 + k}) for k in range(3)],
        )
        run_id = lib.create_run(prompt.id, data["id"], prompt.dimension.judge)
        lib.finish_run(run_id, model_version="scripted-1")
        lib.set_setting(REMEMBERED, {AGREEMENT_SEEN: run_id, EXPORTED: prompt.id})
        steps = path_state(lib)
    assert all(s.done for s in steps)
    assert steps[0].state.startswith("1 frozen prompt of your own, no draft waiting to be frozen")
    at = open_page()
    text = page_text(at)
    assert "Every step is done" in text and "Next:" not in text
    assert not [b for b in at.button if b.key == "start_next"]
    marks = [str(m.value) for m in at.markdown if "**1. " in str(m.value) or "**7. " in str(m.value)]
    assert marks and all(m.startswith(":material/check_circle: done") for m in marks)
    assert not any(e in str(m.value) for m in at.markdown for e in ("✅", "⬜", "➡️"))
