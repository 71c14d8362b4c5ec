"""AppTest: the Library page's drift watch. An anchor set is frozen from a finished run of a scripted prompt on rated
items, a check of the unchanged judge runs as a task of the library (its worker process, not the page) and the page
then shows the check and "no drift"; after the judge shifts (checks through the Python API), the page says drift."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_support import after_jobs, assert_clean, open_page, page_text, use_temp_library, values

from geval_core.diagnostics.drift import drift_check, get_watch, watch_checks
from geval_core.providers.scripted import ScriptedJudge, default_script
from geval_core.run import RunOptions, run_scoring
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
KEY = "library_drift"


def shifted(request):
    """The default script's answer with its probability moved one rating up."""
    dist = default_script(request)
    return {"5": dist["4"] + dist["5"], "4": dist["3"], "3": dist["2"], "2": dist["1"], "The": dist["The"]}


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence").dimension
        prompt = lib.freeze(replace(base, judge=SCRIPTED), name="watched").prompt
        items = [
            Item(
                f"w{k:02d}",
                {"document": f"Document {k}.", "summary": f"Summary {k}."},
                {"coherence": float(1 + k % 5)},
            )
            for k in range(24)
        ]
        lib.import_items("anchors", items)
        run_id = lib.create_run(prompt.id, "anchors@1", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(default_script), lib, run_id, RunOptions(settings=SCRIPTED))
    return path


def test_freeze_check_as_a_task_and_read_the_verdict(lib_path):
    at = open_page("library")
    at.selectbox(key="lib_name").set_value("watched").run()
    with Library(lib_path) as lib:
        prompt = lib.get_prompt("watched")
        (run,) = lib.list_runs(prompt=prompt.id)
    tag = prompt.id[:12]
    at.selectbox(key=f"{KEY}_run_{tag}").set_value(run.id).run()
    at.button(key=f"{KEY}_freeze_{tag}").click().run()
    assert_clean(at)
    assert "Froze watched@1: 24 anchors" in page_text(at)
    with Library(lib_path) as lib:
        watch = get_watch(lib, "watched")
    assert "judge: scripted:scripted-1" in page_text(at)  # the plan's line before the check starts
    at.button(key=f"{KEY}_check_{watch['id'][:12]}").click().run()
    at = after_jobs(at, lib_path)
    assert_clean(at)
    assert "No drift so far" in page_text(at), [values(at.warning), values(at.caption)[-6:]]
    with Library(lib_path) as lib:
        (check,) = watch_checks(lib, watch)
        assert check["shift"]["mean_tv"] == 0 and len(check["items"]) == 24
        for _ in range(3):
            report = drift_check(lib, "watched", judge_for=ScriptedJudge(shifted))
        assert report["verdict"] == "drift"
    at.run()
    assert_clean(at)
    assert f"Drift: the e-value reached 20 at check {report['alarm_at']}" in page_text(at)
