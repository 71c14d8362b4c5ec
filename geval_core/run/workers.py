"""Worker threads that never hold the process: a stopped run abandons calls that hang.

`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, so a request
stuck in a judge's socket kept a stopped `geval score` alive until its timeout (61 s). These threads
are daemons: the run returns at once and the process can exit; their items stay unjudged for resume.
"""

from __future__ import annotations

import os
import queue
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class DaemonPool:
    """A fixed number of daemon threads running submitted calls, each answered through a Future.

    Every finished (or cancelled) Future is also put on a queue, so the collecting thread takes results in
    O(1) each: `concurrent.futures.wait` over 128 pending Futures locks and unlocks every one of them on
    each call, once per result at concurrency 64.
    """

    def __init__(self, workers: int, name: str = "geval-judge") -> None:
        self._tasks: queue.SimpleQueue[tuple[Future, Callable, tuple] | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, func: Callable[..., Any], *args: Any) -> Future:
        """Run func(*args) on a worker; the Future can be cancelled until a worker takes it."""
        future: Future = Future()
        future.add_done_callback(self._done.put)
        self._tasks.put((future, func, args))
        return future

    def finished(self, timeout: float) -> list[Future]:
        """The Futures done (or cancelled) since the last call; waits up to `timeout` s for the first."""
        try:
            done = [self._done.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                done.append(self._done.get_nowait())
            except queue.Empty:
                return done

    def shutdown(self) -> None:
        """Let idle workers end; busy ones end when their call returns (nobody waits for them)."""
        for _ in self._threads:
            self._tasks.put(None)

    def _work(self) -> None:
        while (task := self._tasks.get()) is not None:
            future, func, args = task
            if not future.set_running_or_notify_cancel():
                continue  # cancelled before it started: never sent
            try:
                future.set_result(func(*args))
            except BaseException as exc:  # handed to the collecting thread, which decides
                future.set_exception(exc)


def new_owner() -> str:
    """A token naming one runner for a run's lease (a process may run several runs)."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"
