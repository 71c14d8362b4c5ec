"""One runner per run: a lease row (owner, process, host, heartbeat) taken in one write transaction.

Without a lease, two `geval score` commands on the same run would both resume it and pay for every item twice. The
first takes the lease; a second is refused with who holds it. A lease whose process is gone (checked
on this host) or whose heartbeat stopped is taken over, so a crash never locks a run for good.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timezone

from geval_core.errors import RunBusyError

from .base import LibraryBase, now

STALE_S = 20.0  # a lease not renewed for this long belongs to a process that is gone


class LeasesMixin(LibraryBase):
    """take_lease / renew_lease / release_lease on a run."""

    def take_lease(self, run_id: str, owner: str, stale_s: float = STALE_S) -> None:
        """Become the run's one runner, or RunBusyError naming the live runner that already is."""
        with self._write() as db:
            row = db.execute("SELECT owner, pid, host, started_at, heartbeat FROM run_leases WHERE run_id = ?",
                             [run_id]).fetchone()
            if row is not None and row[0] != owner and process_alive(row[1], row[2]) and time.time() - row[4] < stale_s:
                since = datetime.fromtimestamp(row[4], timezone.utc).isoformat(timespec="seconds")
                raise RunBusyError(f"run {run_id} is being scored by process {row[1]} on {row[2]} since "
                                   f"{row[3]} (last heartbeat {since}); wait for it, or stop it and run the "
                                   "same command again")
            db.execute("INSERT OR REPLACE INTO run_leases (run_id, owner, pid, host, started_at, heartbeat) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       [run_id, owner, os.getpid(), socket.gethostname(), now(), time.time()])

    def renew_lease(self, run_id: str, owner: str) -> None:
        """Keep the lease alive (called every few seconds by the runner)."""
        with self._write() as db:
            db.execute("UPDATE run_leases SET heartbeat = ? WHERE run_id = ? AND owner = ?",
                       [time.time(), run_id, owner])

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the run back (only the owner's own lease is removed)."""
        with self._write() as db:
            db.execute("DELETE FROM run_leases WHERE run_id = ? AND owner = ?", [run_id, owner])


def process_alive(pid: int, host: str) -> bool:
    """Whether a process may still run: on this host we can ask; elsewhere trust the heartbeat."""
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)  # signal 0 checks existence only
    except ProcessLookupError:
        return False  # killed (kill -9 leaves no chance to release): take the run over at once
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """An exited child its parent has not reaped still answers signal 0: read its state where /proc has it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
