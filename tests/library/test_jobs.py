"""Runs as jobs of the library: a real worker process scores the run, records how it ended, obeys Stop."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import scripted_app_judge

from geval_core.errors import RunBusyError
from geval_core.types import JudgeSettings
from prompt_library import Library
from prompt_library.job_worker import start_job, work

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib(tmp_path, monkeypatch):
    """A library whose workers load the scripted judge (the plugin reaches them through the environment)."""
    scripted_app_judge.offer(monkeypatch)
    for name, value in scripted_app_judge.plugin_env().items():
        monkeypatch.setenv(name, value)
    with Library(tmp_path / "lib.db") as library:
        yield library


def wait_until(check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.02)


def held(monkeypatch, tmp_path, after: int):
    hold = tmp_path / "hold"
    hold.write_text(str(after))
    monkeypatch.setenv(scripted_app_judge.HOLD_ENV, str(hold))
    return hold


def new_run(lib, n: int, settings: JudgeSettings = SCRIPTED) -> tuple[str, list]:
    items = lib.dataset_items("sample")[:n]
    return lib.create_run("coherence", "sample", settings, item_ids=[i.id for i in items]), items


def test_a_worker_scores_every_item_once_and_records_its_summary(lib):
    run_id, items = new_run(lib, 12)
    start_job(lib, run_id, {"concurrency": 3})
    wait_until(lambda: lib.job_state(run_id) == "ended")
    rows = lib.judgments(run_id)
    assert sorted(r["item_id"] for r in rows) == sorted(i.id for i in items)
    stored = lib.conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT item_id), MAX(attempt) FROM judgments WHERE run_id = ?", [run_id]
    ).fetchone()
    assert stored == (12, 12, 0)  # every item once, no retry row
    job = lib.job(run_id)
    assert job["summary"]["status"] == "done" and job["summary"]["judged"] == 12 and job["error"] is None
    assert job["options"] == {"concurrency": 3}
    assert lib.get_run(run_id).status == "done" and lib.get_run(run_id).digest


def test_stop_is_a_request_the_worker_obeys_and_a_second_worker_is_refused(lib, monkeypatch, tmp_path):
    hold = held(monkeypatch, tmp_path, 5)
    run_id, items = new_run(lib, 20)
    start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: len(lib.judged_item_ids(run_id)) == 5 and lib.job_state(run_id) == "running")
    with pytest.raises(RunBusyError, match="already being scored"):
        start_job(lib, run_id, {"concurrency": 1})
    assert lib.request_stop(run_id) and lib.job_state(run_id) == "stopping"
    assert not lib.request_stop(run_id)  # asked once
    wait_until(lambda: lib.job_state(run_id) == "ended")
    assert lib.get_run(run_id).status == "cancelled" and len(lib.judged_item_ids(run_id)) == 5
    hold.unlink()
    start_job(lib, run_id, {"concurrency": 2})  # a resume: a new job row, the stop request gone
    wait_until(lambda: lib.job_state(run_id) == "ended")
    assert sorted(r["item_id"] for r in lib.judgments(run_id)) == sorted(i.id for i in items)
    assert lib.job(run_id)["summary"]["skipped"] == 5 and lib.get_run(run_id).status == "done"


def test_sigterm_stops_the_worker_cleanly(lib, monkeypatch, tmp_path):
    held(monkeypatch, tmp_path, 3)
    run_id, _ = new_run(lib, 10)
    pid = start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: len(lib.judged_item_ids(run_id)) == 3)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: lib.job_state(run_id) == "ended")
    assert lib.get_run(run_id).status == "cancelled" and len(lib.judged_item_ids(run_id)) == 3


def test_a_killed_worker_is_lost_and_its_run_resumes(lib, monkeypatch, tmp_path):
    hold = held(monkeypatch, tmp_path, 2)
    run_id, items = new_run(lib, 8)
    pid = start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: len(lib.judged_item_ids(run_id)) == 2)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: lib.job_state(run_id) == "lost")  # an unreaped child counts as gone too
    hold.unlink()
    start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: lib.job_state(run_id) == "ended")
    assert sorted(r["item_id"] for r in lib.judgments(run_id)) == sorted(i.id for i in items)


def test_a_judge_that_cannot_be_made_fails_the_run_with_its_reason(lib, tmp_path):
    missing = tmp_path / "no-such-model.gguf"
    run_id, _ = new_run(lib, 3, JudgeSettings(provider="local", model=str(missing)))
    start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: lib.job_state(run_id) == "ended")
    run, job = lib.get_run(run_id), lib.job(run_id)
    assert run.status == "failed"  # never left "running" for good
    assert str(missing) in job["error"] and job["error"] == run.run_error
    assert lib.judged_item_ids(run_id) == set()


def test_the_job_options_reach_the_runner(lib, monkeypatch):
    import geval_core.run.runner as runner

    made = []
    real = runner.Gate
    monkeypatch.setattr(runner, "Gate", lambda *args: made.append(args) or real(*args))
    run_id, _ = new_run(lib, 3)
    lib.record_job(run_id, {"concurrency": 2, "rpm": 600, "tpm": 90000})
    summary = work(lib, run_id, threading.Event())
    assert made == [(2, 600, 90000)] and summary["judged"] == 3


def test_a_finished_worker_leaves_no_zombie_behind(lib):
    """The app server starts workers and lives on: each is reaped as it ends (no <defunct> process stays)."""
    run_id, _ = new_run(lib, 3)
    pid = start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: lib.job_state(run_id) == "ended")

    def state() -> str | None:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0]  # R, S, ... or Z for a zombie
        except FileNotFoundError:
            return None  # reaped: gone from the process table

    wait_until(lambda: state() is None)
