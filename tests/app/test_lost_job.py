"""A job whose worker is gone (here: its pid reused by another process) reads lost on the page and can be cleared."""

from __future__ import annotations

import subprocess

import pytest
from app_support import open_page, page_text, use_temp_library

import prompt_library.jobs as jobs
from geval_core.types import JudgeSettings
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def test_a_lost_job_is_said_and_cleared_from_the_page(lib_path, monkeypatch):
    sleeper = subprocess.Popen(["sleep", "60"])  # alive, and no worker of ours: a reused pid
    try:
        with Library(lib_path) as lib:
            items = lib.dataset_items("sample")[:3]
            settings = JudgeSettings(provider="scripted", model="scripted-1")
            run_id = lib.create_run("coherence", "sample", settings, item_ids=[i.id for i in items])
            lib.record_job(run_id, {"concurrency": 1})
            with monkeypatch.context() as patch:  # recorded when an earlier process had this pid
                patch.setattr(jobs, "process_start", lambda pid: "earlier-boot:1")
                lib.set_job_pid(run_id, sleeper.pid)
            at = open_page("score", clean=False)
            text = page_text(at)
            assert "The worker scoring this run ended without finishing it" in text
            assert f"process {sleeper.pid} on" in text and not at.get("progress")  # not drawn as running
            at.button(key="score_clear_job").click().run()
            assert lib.job_state(run_id) == "ended" and lib.job(run_id)["error"] == jobs.CLEARED
            assert "The lost job of this run was cleared" in page_text(at)
            assert at.button(key="score_resume")  # the run can be resumed
    finally:
        sleeper.kill()
        sleeper.wait()
