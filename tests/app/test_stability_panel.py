"""AppTest: the Design page's stability check runs K repeats as a task of the library (a worker process, so a
reload leaves it going) and shows the finding among the checks, in this session and in a new one."""

from __future__ import annotations

import time

from app_support import open_design, page_text, use_temp_library

from prompt_library import Library, task_jobs

BOUND_S = 120.0


def wait_for_task(path, form: str) -> dict:
    """The task's state once its worker has ended (the library is read; the bound only stops a broken test)."""
    deadline = time.monotonic() + BOUND_S
    with Library(path) as lib:
        while task_jobs.task_state(lib, "stability", form) in task_jobs.LIVE:
            assert time.monotonic() < deadline, "the stability task never ended"
            time.sleep(0.1)
        return task_jobs.task(lib, "stability", form)


def test_the_stability_check_reports_among_the_pre_freeze_checks(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    at = open_design()
    at.number_input(key="design_stability_n").set_value(4)
    at.number_input(key="design_stability_k").set_value(2)
    at.button(key="design_stability_run").click().run()
    assert not at.exception
    with Library(path) as lib:
        (key,) = lib.setting_names("task:stability:")
    done = wait_for_task(path, key)
    assert done["error"] is None and done["progress"] == [2, 2] and done["pid"] is not None
    at.run()
    text = page_text(at)
    # The scripted judge answers the same for the same prompt: nothing moves between repeats.
    assert "stability: 0 of 4 items change rating between repeats" in text
    table = at.dataframe[-1].value
    assert len(table) == 4 and set(table["flip_rate"]) == {0.0}
    again = open_design()  # a new session (a reload) finds the report of the same form in the library
    assert "stability: 0 of 4 items change rating between repeats" in page_text(again)
    at.text_area(key="design_definition").set_value("Changed after the check.").run()
    assert "items change rating between repeats" not in page_text(at)  # a finding about another form


def test_a_stability_task_whose_worker_died_reads_lost_and_can_be_cleared(tmp_path):
    with Library(tmp_path / "lib.db", seed_examples=False) as lib:
        lib.set_setting(
            "task:stability:f",
            {
                "spec": {},
                "started_at": "2020-01-01T00:00:00+00:00",
                "pid": None,
                "host": "elsewhere",
                "ended_at": None,
            },
        )
        assert (
            task_jobs.task_state(lib, "stability", "f") == "lost"
        )  # never said it started: lost after a grace
        task_jobs.clear_lost_task(lib, "stability", "f")
        assert task_jobs.task_state(lib, "stability", "f") == "ended"
