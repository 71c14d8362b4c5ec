"""A progress line for the notebook calls (score_items, score_frame): one line on stderr, rewritten in place,
which a terminal and Jupyter's output area both show as one updating line (no tqdm needed)."""

from __future__ import annotations

import sys
import time
from typing import IO, Any

__all__ = ["ProgressLine", "shows_progress"]


def shows_progress(stream: IO[str] | None = None) -> bool:
    """Whether a line rewritten in place reaches a person: a terminal, or a Jupyter/IPython kernel's output."""
    stream = stream or sys.stderr
    if "ipykernel" in sys.modules:
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class ProgressLine:
    """Callable as a run's `on_progress(done, total, judgment)`: "label: 12/40 scored, 1 error, 3.2 items/s"."""

    def __init__(self, label: str, total: int, stream: IO[str] | None = None, every: float = 0.2) -> None:
        self.label, self.total, self.stream, self.every = label, total, stream or sys.stderr, every
        self.done = self.errors = 0
        self.started = self.shown_at = time.monotonic()
        self.width = 0

    def __call__(self, done: int, total: int, judgment: Any = None) -> None:
        """Count one more judgment (an error when it has one) and redraw at most every `every` seconds."""
        self.done, self.total = done, total
        if judgment is not None and getattr(judgment, "error", None):
            self.errors += 1
        now = time.monotonic()
        if now - self.shown_at >= self.every or done >= total:
            self.shown_at = now
            self._draw(now)

    def text(self, now: float | None = None) -> str:
        """The line as drawn now."""
        elapsed = max((now or time.monotonic()) - self.started, 1e-9)
        errors = f", {self.errors} error{'s' if self.errors != 1 else ''}" if self.errors else ""
        return f"{self.label}: {self.done}/{self.total} judged{errors}, {self.done / elapsed:.1f} items/s"

    def close(self) -> None:
        """Draw the final line and end it."""
        self._draw(time.monotonic())
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self, now: float) -> None:
        line = self.text(now)
        self.stream.write("\r" + line + " " * max(0, self.width - len(line)))  # clear a longer earlier line
        self.stream.flush()
        self.width = len(line)
