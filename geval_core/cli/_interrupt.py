"""Ctrl-C during a run: the first stops it within its grace period, a second quits at once, quietly."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click

EXIT_INTERRUPTED = 130  # the shell's convention for a process ended by SIGINT


@contextmanager
def stop_on_interrupt(cancel: threading.Event) -> Iterator[None]:
    """While inside, SIGINT sets `cancel` (items in flight are dropped for resume); twice exits 130."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread; elsewhere Ctrl-C cannot reach us anyway
        return

    def handler(signum: int, frame: object) -> None:
        if cancel.is_set():
            os._exit(EXIT_INTERRUPTED)  # no cleanup, no traceback: the library holds every written item
        cancel.set()
        click.echo("\nstopping: dropping the requests in flight (Ctrl-C again to quit now)", err=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
