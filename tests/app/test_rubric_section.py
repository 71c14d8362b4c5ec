"""AppTest: the Agreement page's rubric-form probe runs as a task of the library (a worker process plans one run
per form through the one plan) and shows the figures `rubric_result` reads from the stored probe runs."""

from __future__ import annotations

import pytest
from app_support import after_jobs, open_page, page_text, use_temp_library

from geval_core.diagnostics.rubric_probes import rubric_probe_runs, rubric_result
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeSettings
from prompt_library import Library, task_jobs

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    return use_temp_library(tmp_path, monkeypatch)


def test_the_rubric_form_probe_runs_as_a_task_and_shows_its_figures(lib_path):
    from workbench_ui.diagnostics import OPEN

    with Library(lib_path) as lib:
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    at.session_state[OPEN + "bias"] = True
    at.run()
    assert "Will score with** scripted:scripted-1 in process" in page_text(at)
    at.number_input(key="rb_sample").set_value(6).run()
    at.multiselect(key="rb_forms").set_value(["shift-labels", "reverse-scale"]).run()
    at = after_jobs(at.button(key="rb_run").click().run(), lib_path)  # scored by the task's worker
    assert not at.exception, [e.value for e in at.exception]
    with Library(lib_path) as lib:
        found = task_jobs.task(lib, "rubric", run_id)
        assert found["error"] is None and found["progress"] == [12, 12]
        probes = rubric_probe_runs(lib, run_id)
        assert sorted(p.extra["rubric_probe"]["variant"] for p in probes) == ["reverse-scale", "shift-labels"]
        assert all(p.status == "done" and p.judge.provider == "scripted" for p in probes)
        out = rubric_result(lib, run_id)
    (table,) = [d.value for d in at.dataframe if "form" in d.value.columns]
    assert list(table["form"]) == ["shift-labels", "reverse-scale"]
    for shown, v in zip(table["mean |change|"], out["variants"], strict=True):
        assert shown == pytest.approx(v["mean_abs_change"])
    assert "6 items; people's rating 'coherence'" in page_text(at)
    at.toggle(key="rb_items").set_value(True).run()
    assert any(
        list(d.value.columns[:3]) == ["id", "original", "human"] and len(d.value) == 6 for d in at.dataframe
    )
