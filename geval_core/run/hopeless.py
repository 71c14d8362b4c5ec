"""When a run stops because its judge cannot score: the policy, apart from the session that writes judgments.

Paying (or waiting) for every item to fail helps nobody. A run stops:
- at once, when the judge says to retry much later (a quota) or refuses the key (401, 403);
- when the first `fail_fast` items all failed and none was scored, whatever the error;
- when HOPELESS_LIMIT items failed alike before any succeeded: logprobs asked of a judge that gives none, or a
  server that cannot be reached at all;
- at any point, when the last HOPELESS_WINDOW items in a row ended without a usable score (failed, or answered
  with no rating above the floor): the judge is broken, not unlucky. Transient faults that retries recover from
  never fill the window.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..errors import LogprobsUnavailableError, RetryLaterError, UnreachableError
from ..judgment import Judgment

__all__ = ["HOPELESS_LIMIT", "HOPELESS_WINDOW", "HopelessWatch"]

HOPELESS_LIMIT = 3
HOPELESS_WINDOW = 20


@dataclass
class HopelessWatch:
    """Counts a run's failures and says why the run must stop (None while it may go on)."""

    fail_fast: int = 5  # stop when this many items failed before any was scored (0: never)
    limit: int = HOPELESS_LIMIT
    alike: dict[str, int] = field(default_factory=lambda: {"logprobs": 0, "unreachable": 0})
    window: deque[bool] = field(
        default_factory=lambda: deque(maxlen=HOPELESS_WINDOW)
    )  # the last items scored?
    last_problem: str = ""  # why the latest item had no score

    def after_error(
        self, exc: BaseException, scored: int, failed: int, logprobs_seen: bool, replied: bool
    ) -> str | None:
        """Why the run stops after this failed item (`scored`, `failed`: the session's counts so far)."""
        if isinstance(exc, RetryLaterError):
            return str(exc)
        if getattr(exc, "status", None) in (401, 403):
            return f"{exc}; the judge refused the key: nothing more is sent until it is fixed"
        if self.fail_fast and scored == 0 and failed >= self.fail_fast:
            return (
                f"the first {failed} items all failed and none was scored (last: {type(exc).__name__}: "
                f"{exc}); fix the judge or its settings, then run the same command to resume"
            )
        if isinstance(exc, LogprobsUnavailableError):
            kind, seen, why = "logprobs", logprobs_seen, str(exc)
        elif isinstance(exc, UnreachableError):
            kind, seen = "unreachable", replied
            why = f"{exc}; check that the judge's server is running and its URL, then resume the run"
        else:
            return None
        self.alike[kind] += 1
        return why if not seen and self.alike[kind] >= self.limit else None

    def after_judgment(self, judgment: Judgment) -> str | None:
        """Why the run stops once this judgment is written: the last window of items all without a score."""
        self.window.append(judgment.score is not None)
        if judgment.score is None:
            self.last_problem = judgment.error or judgment.note or "no score"
        if len(self.window) == self.window.maxlen and not any(self.window):
            return (
                f"the last {self.window.maxlen} items all ended without a score (the latest: "
                f"{self.last_problem}); the judge is not scoring: fix it or its settings, then run the same "
                "command to resume"
            )
        return None
