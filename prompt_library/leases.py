"""One runner per run: a lease row (owner, process, host, heartbeat) taken in one write transaction.

Without a lease, two `geval score` commands on the same run would both resume it and pay for every item twice. The
first takes the lease; a second is refused with who holds it. A lease whose process is gone (checked
on this host) or whose heartbeat stopped is taken over, so a crash never locks a run for good. A process is
known by its pid and its start time (`process_start`): a pid alone is reused by the system.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from geval_core.errors import RunBusyError

from .base import LibraryBase, now

STALE_S = 20.0  # a lease not renewed for this long belongs to a process that is gone


class LeasesMixin(LibraryBase):
    """take_lease / renew_lease / release_lease on a run."""

    def take_lease(self, run_id: str, owner: str, stale_s: float = STALE_S) -> None:
        """Become the run's one runner, or RunBusyError naming the live runner that already is."""
        with self._write() as db:
            row = db.execute(
                "SELECT owner, pid, host, started_at, heartbeat FROM run_leases WHERE run_id = ?", [run_id]
            ).fetchone()
            if (
                row is not None
                and row[0] != owner
                and process_alive(row[1], row[2])
                and lease_fresh(row[4], stale_s)
            ):
                since = datetime.fromtimestamp(row[4], timezone.utc).isoformat(timespec="seconds")
                raise RunBusyError(
                    f"run {run_id} is being scored by process {row[1]} on {row[2]} since "
                    f"{row[3]} (last heartbeat {since}); wait for it, or stop it and run the "
                    "same command again"
                )
            db.execute(
                "INSERT OR REPLACE INTO run_leases (run_id, owner, pid, host, started_at, heartbeat) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, owner, os.getpid(), socket.gethostname(), now(), time.time()],
            )

    def renew_lease(self, run_id: str, owner: str) -> None:
        """Keep the lease alive (called every few seconds by the runner)."""
        with self._write() as db:
            db.execute(
                "UPDATE run_leases SET heartbeat = ? WHERE run_id = ? AND owner = ?",
                [time.time(), run_id, owner],
            )

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


def lease_fresh(heartbeat: float | None, stale_s: float = STALE_S) -> bool:
    """Whether a lease was renewed within its expiry (a runner that stops renewing is gone)."""
    return heartbeat is not None and time.time() - heartbeat < stale_s


def process_start(pid: int) -> str | None:
    """Which process `pid` is: this boot's id and its start time in clock ticks (/proc/PID/stat field 22).

    A pid is reused once its process has gone; the pair is not (within one boot, or across boots by the boot
    id). None where /proc cannot tell (another system, a process gone).
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return f"{boot.read().strip()}:{fields[19]}"  # field 22 is the 20th after the name
    except (OSError, IndexError):
        return None


def same_process(pid: int | None, host: str | None, started: str | None) -> bool | None:
    """Whether the process recorded as (pid, host, start) still runs: True/False, or None when this host cannot tell.

    None for another host (a new hostname, a worker elsewhere), a start time not recorded, or no /proc:
    then only the lease's heartbeat can say.
    """
    if pid is None or started is None or host != socket.gethostname():
        return None
    if not process_alive(pid, host):
        return False
    now_started = process_start(pid)
    return None if now_started is None else now_started == started


def _zombie(pid: int) -> bool:
    """An exited child its parent has not reaped still answers signal 0: read its state where /proc has it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


_PROJECT = Path(__file__).resolve().parent.parent


def spawn_worker(module: str, *args: str) -> subprocess.Popen:
    """`python -m MODULE ARGS...` in a session of its own (a reload, a closed tab or a stopped app server leaves it
    running), importing this package as the app did wherever the app was started from; reaped as it ends."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PROJECT), env.get("PYTHONPATH")]))
    child = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    reap(child)
    return child


def reap(child: subprocess.Popen) -> None:
    """Wait for a worker process in a thread of its own, so it is reaped as it ends: a long-lived app server that
    never waits keeps every finished worker as a zombie."""
    threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()
