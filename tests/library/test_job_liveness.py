"""A job lives while its lease is renewed or its very process (pid and start time) runs: never on a pid alone."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import scripted_app_judge

import prompt_library.jobs as jobs
from geval_core.types import JudgeSettings
from prompt_library import Library
from prompt_library.job_worker import start_job
from prompt_library.leases import STALE_S, process_start

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib(tmp_path, monkeypatch):
    """A library whose workers load the scripted judge (the plugin reaches them through the environment)."""
    scripted_app_judge.offer(monkeypatch)
    for name, value in scripted_app_judge.plugin_env().items():
        monkeypatch.setenv(name, value)
    with Library(tmp_path / "lib.db") as library:
        yield library


@pytest.fixture
def sleeper():
    """A live process unrelated to any job: its pid is what a reused pid looks like."""
    child = subprocess.Popen(["sleep", "60"])
    yield child
    child.kill()
    child.wait()


def wait_until(check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.02)


def new_run(lib, n: int = 4) -> str:
    items = lib.dataset_items("sample")[:n]
    return lib.create_run("coherence", "sample", SCRIPTED, item_ids=[i.id for i in items])


def put_lease(lib, run_id: str, pid: int, host: str, heartbeat: float) -> None:
    with lib._write() as db:
        db.execute(
            "INSERT OR REPLACE INTO run_leases (run_id, owner, pid, host, started_at, heartbeat) "
            "VALUES (?, 'gone-owner', ?, ?, '2020-01-01T00:00:00+00:00', ?)",
            [run_id, pid, host, heartbeat],
        )


def move_job(lib, run_id: str, host: str, started_at: str = "2020-01-01T00:00:00+00:00") -> None:
    """The job as a worker under another hostname wrote it (the app came back on a renamed machine)."""
    with lib._write() as db:
        db.execute(
            "UPDATE run_jobs SET host = ?, started_at = ? WHERE run_id = ?", [host, started_at, run_id]
        )


def test_a_reused_pid_does_not_keep_a_job_alive(lib, sleeper, monkeypatch):
    run_id = new_run(lib)
    lib.record_job(run_id, {"concurrency": 1})
    # The job's worker was an earlier process with the same pid: its recorded start time differs.
    monkeypatch.setattr(jobs, "process_start", lambda pid: "earlier-boot:12345")
    lib.set_job_pid(run_id, sleeper.pid)
    monkeypatch.undo()
    assert lib.job(run_id)["pid"] == sleeper.pid and lib.job(run_id)["pid_started"] == "earlier-boot:12345"
    assert sleeper.poll() is None  # the pid answers signal 0: the old check called this job alive
    assert lib.job_state(run_id) == "lost"
    assert lib.job(run_id)["options"] == {
        "concurrency": 1
    }  # the start time is not one of the worker's options


def test_the_recorded_process_itself_keeps_a_starting_job_alive(lib, sleeper):
    run_id = new_run(lib)
    lib.record_job(run_id, {"concurrency": 1})
    lib.set_job_pid(run_id, sleeper.pid)
    move_job(lib, run_id, lib.job(run_id)["host"])  # started long ago: only the process itself vouches for it
    assert lib.job(run_id)["pid_started"] == process_start(sleeper.pid) is not None
    assert lib.job_state(run_id) == "starting"
    sleeper.kill()
    sleeper.wait()
    assert lib.job_state(run_id) == "lost"


def test_another_host_with_an_expired_lease_is_lost(lib):
    run_id = new_run(lib)
    lib.record_job(run_id, {"concurrency": 1})
    lib.set_job_pid(run_id, os.getpid())  # a live pid here: it must not count for a job of another host
    move_job(lib, run_id, "old-hostname")
    put_lease(lib, run_id, os.getpid(), "old-hostname", time.time() - STALE_S - 1)
    assert lib.job_state(run_id) == "lost"
    put_lease(lib, run_id, os.getpid(), "old-hostname", time.time())  # renewed just now: a runner there lives
    assert lib.job_state(run_id) == "running"


def test_a_job_with_no_worker_and_no_lease_is_lost_once_the_lease_expiry_has_passed(lib):
    run_id = new_run(lib)
    lib.record_job(run_id, {"concurrency": 1})  # the app died before its worker was recorded
    assert lib.job_state(run_id) == "starting"
    move_job(lib, run_id, "old-hostname")
    assert lib.job_state(run_id) == "lost"


def test_a_running_worker_with_a_fresh_lease_is_running_and_a_lost_one_is_cleared(lib, monkeypatch, tmp_path):
    hold = tmp_path / "hold"
    hold.write_text("2")
    monkeypatch.setenv(scripted_app_judge.HOLD_ENV, str(hold))
    run_id = new_run(lib, 8)
    pid = start_job(lib, run_id, {"concurrency": 1})
    wait_until(lambda: len(lib.judged_item_ids(run_id)) == 2 and lib.job_state(run_id) == "running")
    lease = lib._one("SELECT pid, heartbeat FROM run_leases WHERE run_id = ?", [run_id])
    assert lease["pid"] == pid and time.time() - lease["heartbeat"] < STALE_S
    assert lib.job(run_id)["pid_started"] == process_start(pid)
    assert not lib.clear_job(run_id)  # a live job is stopped with Stop, never cleared
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: lib.job_state(run_id) == "lost")
    assert lib.clear_job(run_id) and lib.job_state(run_id) == "ended"
    assert lib.job(run_id)["error"] == jobs.CLEARED
    hold.unlink()
    start_job(lib, run_id, {"concurrency": 1})  # the run resumes
    wait_until(lambda: lib.job_state(run_id) == "ended")
    assert len(lib.judged_item_ids(run_id)) == 8 and lib.get_run(run_id).status == "done"
