"""Runs as jobs of the library: which worker process scores a run, a stop request, how the job ended.

A page that starts a run records the job here and leaves; any page (another tab, a reload, a new browser)
reads the same row to attach, and Stop is a request written here that the worker reads. The run's lease
stays the proof of a live runner; this row says what was asked for and what happened.

A job is alive while its lease is renewed (the heartbeat) or while its very worker process runs (its pid AND its
start time, on this host). A pid alone is not proof: the system reuses it, and a worker recorded under another
hostname cannot be asked at all. A job that is neither is "lost", and `clear_job` ends it so the run can resume.
"""

from __future__ import annotations

import socket
import time
from datetime import datetime
from typing import Any

from .base import LibraryBase, dumps, loads, now
from .leases import STALE_S, lease_fresh, process_start, same_process

JOB_STATES = ("starting", "running", "stopping", "ended", "lost")
# The worker's start time rides in the options JSON (run_jobs has no column for it); `job` lifts it out.
_STARTED_KEY = "_worker_started"
CLEARED = "cleared by hand: its worker was lost"


class JobsMixin(LibraryBase):
    """record_job / job / request_stop / stop_requested / end_job on a run."""

    def record_job(self, run_id: str, options: dict[str, Any], pid: int | None = None) -> None:
        """A new job for the run (a resumed run's earlier job row is replaced), with the worker's options."""
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO run_jobs (run_id, options, pid, host, started_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [run_id, dumps(options), pid, socket.gethostname(), now()],
            )

    def set_job_pid(self, run_id: str, pid: int) -> None:
        """The worker process that took the job (a process of this host): its pid, host and start time."""
        job = self.job(run_id)
        if job is None:
            return
        options = {**job["options"], _STARTED_KEY: process_start(pid)}
        with self._write() as db:
            db.execute(
                "UPDATE run_jobs SET pid = ?, host = ?, options = ? WHERE run_id = ?",
                [pid, socket.gethostname(), dumps(options), run_id],
            )

    def job(self, run_id: str) -> dict[str, Any] | None:
        """The run's job row (options, summary and the worker's start time decoded), or None: no page started it."""
        row = self._one("SELECT * FROM run_jobs WHERE run_id = ?", [run_id])
        if row is not None:
            row["options"] = loads(row["options"], {})
            row["pid_started"] = row["options"].pop(_STARTED_KEY, None)
            row["summary"] = loads(row["summary"], None)
        return row

    def request_stop(self, run_id: str) -> bool:
        """Ask the run's worker to stop after the calls in flight; False when no job of it is going."""
        with self._write() as db:
            cursor = db.execute(
                "UPDATE run_jobs SET stop_requested_at = ? WHERE run_id = ? AND ended_at IS NULL "
                "AND stop_requested_at IS NULL",
                [now(), run_id],
            )
            return cursor.rowcount > 0

    def stop_requested(self, run_id: str) -> bool:
        """Whether someone asked this run's job to stop."""
        row = self._one("SELECT stop_requested_at FROM run_jobs WHERE run_id = ?", [run_id])
        return row is not None and row["stop_requested_at"] is not None

    def end_job(self, run_id: str, summary: dict[str, Any] | None, error: str | None = None) -> None:
        """The worker's last write: how its session of the run went (or why it could not start)."""
        with self._write() as db:
            db.execute(
                "UPDATE run_jobs SET ended_at = ?, summary = ?, error = ? WHERE run_id = ?",
                [now(), dumps(summary) if summary is not None else None, error, run_id],
            )

    def recent_judgments(self, run_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The run's last `limit` judgments written, newest first (what a page attached to a job shows)."""
        from .runs import _judgment  # the one decoder of a stored judgment row

        rows = self._rows(
            "SELECT * FROM judgments WHERE run_id = ? ORDER BY rowid DESC LIMIT ?", [run_id, limit]
        )
        return [_judgment(r, loads(r["distribution"], None), loads(r["replies"], [])) for r in rows]

    def job_state(self, run_id: str) -> str | None:
        """starting / running / stopping / ended / lost (its process died without ending it); None: no job."""
        job = self.job(run_id)
        if job is None:
            return None
        if job["ended_at"] is not None:
            return "ended"
        lease = self._one("SELECT heartbeat FROM run_leases WHERE run_id = ?", [run_id])
        if not _alive(job, lease):
            return "lost"
        if job["stop_requested_at"] is not None:
            return "stopping"
        return "running" if lease else "starting"

    def clear_job(self, run_id: str) -> bool:
        """End a lost job by hand so its run can be resumed; False (nothing done) unless the job is lost."""
        if self.job_state(run_id) != "lost":
            return False
        with self._write() as db:
            cursor = db.execute(
                "UPDATE run_jobs SET ended_at = ?, error = ? WHERE run_id = ? AND ended_at IS NULL",
                [now(), CLEARED, run_id],
            )
            return cursor.rowcount > 0


def _alive(job: dict[str, Any], lease: dict[str, Any] | None) -> bool:
    """Whether the job's worker lives: its own process says so on this host, else a fresh lease, else start-up."""
    process = same_process(job["pid"], job["host"], job["pid_started"])
    if process is not None:
        return process  # the very process (pid and start time): a reused pid is another process
    if lease is not None:
        return lease_fresh(lease["heartbeat"])  # a runner that stopped renewing is gone, wherever it ran
    return _age_s(job["started_at"]) < STALE_S  # a worker not known yet gets the lease's expiry to take it


def _age_s(stamp: str) -> float:
    """Seconds since an ISO time stored by `now`."""
    return time.time() - datetime.fromisoformat(stamp).timestamp()
