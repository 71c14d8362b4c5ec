"""Runs as jobs of the library: which worker process scores a run, a stop request, how the job ended.

A page that starts a run records the job here and leaves; any page (another tab, a reload, a new browser)
reads the same row to attach, and Stop is a request written here that the worker reads. The run's lease
stays the proof of a live runner; this row says what was asked for and what happened.
"""

from __future__ import annotations

import socket
from typing import Any

from .base import LibraryBase, dumps, loads, now
from .leases import process_alive

JOB_STATES = ("starting", "running", "stopping", "ended", "lost")


class JobsMixin(LibraryBase):
    """record_job / job / request_stop / stop_requested / end_job on a run."""

    def record_job(self, run_id: str, options: dict[str, Any], pid: int | None = None) -> None:
        """A new job for the run (a resumed run's earlier job row is replaced), with the worker's options."""
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO run_jobs (run_id, options, pid, host, started_at) "
                       "VALUES (?, ?, ?, ?, ?)", [run_id, dumps(options), pid, socket.gethostname(), now()])

    def set_job_pid(self, run_id: str, pid: int) -> None:
        """The worker process that took the job."""
        with self._write() as db:
            db.execute("UPDATE run_jobs SET pid = ? WHERE run_id = ?", [pid, run_id])

    def job(self, run_id: str) -> dict[str, Any] | None:
        """The run's job row (options and summary decoded), or None for a run no page started."""
        row = self._one("SELECT * FROM run_jobs WHERE run_id = ?", [run_id])
        if row is not None:
            row["options"] = loads(row["options"], {})
            row["summary"] = loads(row["summary"], None)
        return row

    def request_stop(self, run_id: str) -> bool:
        """Ask the run's worker to stop after the calls in flight; False when no job of it is going."""
        with self._write() as db:
            cursor = db.execute("UPDATE run_jobs SET stop_requested_at = ? WHERE run_id = ? AND ended_at IS NULL "
                                "AND stop_requested_at IS NULL", [now(), run_id])
            return cursor.rowcount > 0

    def stop_requested(self, run_id: str) -> bool:
        """Whether someone asked this run's job to stop."""
        row = self._one("SELECT stop_requested_at FROM run_jobs WHERE run_id = ?", [run_id])
        return row is not None and row["stop_requested_at"] is not None

    def end_job(self, run_id: str, summary: dict[str, Any] | None, error: str | None = None) -> None:
        """The worker's last write: how its session of the run went (or why it could not start)."""
        with self._write() as db:
            db.execute("UPDATE run_jobs SET ended_at = ?, summary = ?, error = ? WHERE run_id = ?",
                       [now(), dumps(summary) if summary is not None else None, error, run_id])

    def recent_judgments(self, run_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The run's last `limit` judgments written, newest first (what a page attached to a job shows)."""
        from .runs import _judgment  # the one decoder of a stored judgment row

        rows = self._rows("SELECT * FROM judgments WHERE run_id = ? ORDER BY rowid DESC LIMIT ?", [run_id, limit])
        return [_judgment(r, loads(r["distribution"], None), loads(r["replies"], [])) for r in rows]

    def job_state(self, run_id: str) -> str | None:
        """starting / running / stopping / ended / lost (its process died without ending it); None: no job."""
        job = self.job(run_id)
        if job is None:
            return None
        if job["ended_at"] is not None:
            return "ended"
        if job["pid"] is not None and not process_alive(job["pid"], job["host"]):
            return "lost"
        if job["stop_requested_at"] is not None:
            return "stopping"
        lease = self._one("SELECT 1 FROM run_leases WHERE run_id = ?", [run_id])
        return "running" if lease else "starting"
