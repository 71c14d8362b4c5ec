"""Work of the library that is not one run (the Design page's stability check of a draft: repeats judged in memory),
done by a worker process the page starts, so a reload, another tab or a closed browser leaves it going.

A task is known by its kind and a key saying what it is for (the form's content hash), so any page finds it again.
Its state lives in the library's settings, as control state (it changes as the task goes, so it has no hash): what
was asked (`spec`), the worker's process, its progress, and its result or error. A stop request is a key of its own,
written by the page and read by the worker, so the two never overwrite each other's writes.
"""

from __future__ import annotations

import socket
from datetime import datetime, timezone
from typing import Any

from geval_core.errors import RunBusyError

from .leases import process_alive, process_start, spawn_worker

LIVE = ("starting", "running", "stopping")
STARTING_GRACE_S = 30.0  # a worker that has not said it started within this is lost


def _key(kind: str, key: str) -> str:
    return f"task:{kind}:{key}"


def _stop_key(kind: str, key: str) -> str:
    return f"task-stop:{kind}:{key}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def task(lib: Any, kind: str, key: str) -> dict[str, Any] | None:
    """The task's stored state (spec, pid, progress, result, error), or None when none was started."""
    return lib.get_setting(_key(kind, key))


def update_task(lib: Any, kind: str, key: str, **fields: Any) -> None:
    """The worker's write of its own state (progress, result, how it ended)."""
    lib.set_setting(_key(kind, key), {**(task(lib, kind, key) or {}), **fields})


def task_state(lib: Any, kind: str, key: str) -> str | None:
    """starting / running / stopping / ended / lost (its process is gone without ending it); None: no task."""
    found = task(lib, kind, key)
    if found is None:
        return None
    if found.get("ended_at"):
        return "ended"
    pid = found.get("pid")
    if pid is None:
        started = datetime.fromisoformat(found["started_at"]).timestamp()
        return "lost" if datetime.now(timezone.utc).timestamp() - started > STARTING_GRACE_S else "starting"
    same = found.get("host") != socket.gethostname() or process_start(pid) == found.get("process_start")
    if not (process_alive(pid, found.get("host", "")) and same):
        return "lost"
    return "stopping" if lib.get_setting(_stop_key(kind, key)) else "running"


def start_task(lib: Any, kind: str, key: str, spec: dict[str, Any], total: int) -> int:
    """Record the task and start its worker process; its pid. A task of the same kind and key still going is
    refused (RunBusyError)."""
    if task_state(lib, kind, key) in LIVE:
        raise RunBusyError(f"this {kind} task is already going; stop it first")
    lib.set_setting(_stop_key(kind, key), False)
    lib.set_setting(
        _key(kind, key),
        {
            "spec": spec,
            "started_at": _now(),
            "host": socket.gethostname(),
            "pid": None,
            "progress": [0, total],
            "result": None,
            "error": None,
            "ended_at": None,
        },
    )
    child = spawn_worker("prompt_library.task_worker", str(lib.path), kind, key)
    return child.pid


def request_task_stop(lib: Any, kind: str, key: str) -> None:
    """Ask the task's worker to stop (it ends after the calls in flight)."""
    lib.set_setting(_stop_key(kind, key), True)


def stop_requested(lib: Any, kind: str, key: str) -> bool:
    """Whether someone asked this task to stop."""
    return bool(lib.get_setting(_stop_key(kind, key)))


def clear_lost_task(lib: Any, kind: str, key: str) -> None:
    """Mark a lost task ended (its process died without saying so), so it can be started again."""
    if task_state(lib, kind, key) == "lost":
        update_task(lib, kind, key, ended_at=_now(), error="its worker process ended without finishing")
