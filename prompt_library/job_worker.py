"""A run scored by a worker process that belongs to the library, not to the browser tab that started it.

`start_job` records the job and starts `python -m prompt_library.job_worker LIBRARY RUN_ID` in a session of its
own, so a reload, a closed tab or a stopped app server leaves it running. The worker runs the same runner
(and takes the same lease) as `geval score`; it stops only when asked (`Library.request_stop`, polled
here), when the run is done or hopeless, or on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from geval_core.errors import GEvalError, RunBusyError

from .leases import spawn_worker
from .library import Library

STOP_POLL_S = 0.25  # how often the worker reads the stop request: Stop answers within this plus the grace


def start_job(lib: Library, run_id: str, options: dict[str, Any]) -> int:
    """Record the run's job with its options (concurrency, rpm, tpm) and start its worker; its pid."""
    if lib.job_state(run_id) in ("starting", "running", "stopping"):
        raise RunBusyError(f"run {run_id} is already being scored by a worker; stop it first")
    lib.record_job(run_id, options)
    child = spawn_worker("prompt_library.job_worker", str(lib.path), run_id)
    lib.set_job_pid(run_id, child.pid)
    return child.pid


def work(lib: Library, run_id: str, cancel: threading.Event) -> dict[str, Any]:
    """Score the run's items not judged yet with its own judge, server and items (planned from the stored run,
    its items streamed from the dataset version); the session's summary."""
    from geval_core.run import RunOptions
    from geval_core.run.plan import plan_of_run, record_run, start_run

    options = (lib.job(run_id) or {}).get("options") or {}
    plan = plan_of_run(
        lib,
        run_id,
        concurrency=int(options.get("concurrency") or 1),
        options=RunOptions(rpm=options.get("rpm") or None, tpm=options.get("tpm") or None),
    )
    return start_run(lib, record_run(lib, plan), cancel=cancel).to_dict()


def _watch_stop(lib: Library, run_id: str, cancel: threading.Event, done: threading.Event) -> None:
    while not done.wait(STOP_POLL_S):
        if lib.stop_requested(run_id):
            cancel.set()
            return


def main(argv: list[str]) -> int:
    """The worker: score one run of one library, record how it ended; the exit code says the same."""
    path, run_id = argv
    cancel, done = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    with Library(path, seed_examples=False) as lib:
        lib.set_job_pid(run_id, os.getpid())
        watcher = threading.Thread(target=_watch_stop, args=(lib, run_id, cancel, done), daemon=True)
        watcher.start()
        try:
            summary = work(lib, run_id, cancel)
        except RunBusyError as exc:  # another runner has it: its run is not ours to mark
            lib.end_job(run_id, None, str(exc))
            return 1
        except BaseException as exc:  # whatever it was, the run must not stay "running" for good
            message = str(exc) if isinstance(exc, GEvalError) else f"{type(exc).__name__}: {exc}"
            lib.finish_run(run_id, "failed", run_error=message)
            lib.end_job(run_id, None, message)
            return 1
        finally:
            done.set()
        lib.end_job(run_id, summary, summary.get("error"))
    return 0 if summary["status"] == "done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
