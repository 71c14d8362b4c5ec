"""AppTest: the Score page offers a seeded random sample beside the first N, drawn by the function `geval score
--sample N --seed S` uses (run.plan.sample_items), so the page and the command score the same items (issue 40)."""

from __future__ import annotations

import pytest
from app_support import after_jobs, metric, open_page, use_temp_library

from geval_core.run.plan import sample_items
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def sample_of(at, count: int, seed: int):
    at.radio(key="score_how").set_value("sample").run()
    [box] = [w for w in at.number_input if w.label.startswith("Items to score")]
    box.set_value(count)
    at.number_input(key="score_seed").set_value(seed).run()
    return at


def test_a_seeded_sample_is_the_commands_draw_and_is_what_the_run_scores(lib_path):
    at = open_page("score")
    at.radio(key="score_judge_source").set_value("sidebar").run()
    assert at.radio(key="score_how").value == "first"  # the first N stays the default
    sample_of(at, 4, 3)
    lib = Library(lib_path)
    prompt, dataset = lib.get_prompt(at.selectbox(key="score_prompt").value), lib.get_dataset("sample")
    drawn = sample_items(lib, prompt, dataset, 4, 3)
    first = [i.id for i in lib.dataset_items("sample")][: len(drawn)]
    assert len(drawn) >= 4 and list(drawn) != first  # whole documents, spread over the set
    assert metric(at, "Items") == str(len(drawn))
    assert metric(sample_of(at, 4, 4), "Items") == str(len(sample_items(lib, prompt, dataset, 4, 4)))
    sample_of(at, 4, 3)
    after_jobs(at.button(key="score_start").click().run(), lib_path)
    [run] = lib.list_runs()
    assert run.item_ids == drawn  # the same seed, the same items as `geval score --sample 4 --seed 3`
