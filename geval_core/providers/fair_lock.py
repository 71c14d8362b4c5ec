"""A first-come, first-served lock for the one loaded local model."""

from __future__ import annotations

import threading


class FairLock:
    """A lock that lets waiting threads in strictly in the order they asked (FIFO, a ticket lock)."""

    def __init__(self) -> None:
        self._turn = threading.Condition(threading.Lock())
        self._next = self._serving = 0

    @property
    def waiting(self) -> int:
        """How many threads are queued behind the holder now."""
        return max(0, self._next - self._serving - 1)

    def __enter__(self) -> None:
        with self._turn:
            ticket, self._next = self._next, self._next + 1
            self._turn.wait_for(lambda: self._serving == ticket)

    def __exit__(self, *exc: object) -> None:
        with self._turn:
            self._serving += 1
            self._turn.notify_all()
