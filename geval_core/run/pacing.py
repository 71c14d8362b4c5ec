"""Rate limits: fewer calls in flight after a 429 (grown back slowly), and optional rpm / tpm pacing.

Without one gate a low-tier key at concurrency 16 gets a storm of 429s: every worker retries on its own. The
`Gate` every attempt passes through halves the calls in flight on a 429 and adds one back per
`limit` successes (AIMD, as TCP does), and spaces requests so a minute never holds more than `rpm`
requests or `tpm` tokens (estimated from the rendered prompt, as the cost estimate is).
"""

from __future__ import annotations

import threading
import time
from collections import deque


class Gate:
    """What a judge call waits at before each attempt: an adaptive concurrency limit and rpm/tpm budgets."""

    def __init__(
        self, concurrency: int, rpm: float | None = None, tpm: float | None = None, clock=time.monotonic
    ) -> None:
        self.max = concurrency
        self.limit = float(concurrency)
        self.rpm, self.tpm, self.clock = rpm, tpm, clock
        self.in_flight = 0
        self.throttled = 0  # 429s seen
        self.entered = 0  # attempts let through (requests sent, retries included)
        self._sent: deque[tuple[float, int]] = deque()  # (time, tokens) of requests in the last minute
        self._cond = threading.Condition()

    @property
    def current(self) -> int:
        """The calls allowed in flight now."""
        return max(1, int(self.limit))

    def enter(self, tokens: int = 0, stop: threading.Event | None = None) -> bool:
        """Wait for a slot and the budgets; False when `stop` was set while waiting."""
        with self._cond:
            while True:
                if stop is not None and stop.is_set():
                    return False
                wait = self._budget_wait(tokens)
                if self.in_flight < self.current and wait <= 0:
                    self.in_flight += 1
                    self.entered += 1
                    if (
                        self.rpm or self.tpm
                    ):  # kept only for the budgets: a minute of 1,000/s is 60,000 entries
                        self._sent.append((self.clock(), tokens))
                    return True
                self._cond.wait(timeout=min(max(wait, 0.05), 0.5))

    def leave(self, throttled: bool = False) -> None:
        """After an attempt: a 429 halves the limit, a success grows it by 1/limit."""
        with self._cond:
            self.in_flight -= 1
            if throttled:
                self.throttled += 1
                self.limit = max(1.0, self.limit / 2)
            else:
                self.limit = min(float(self.max), self.limit + 1.0 / self.limit)
            self._cond.notify_all()

    def _budget_wait(self, tokens: int) -> float:
        """Seconds until one more request of `tokens` fits in the last minute's budgets (0: now)."""
        now = self.clock()
        while self._sent and now - self._sent[0][0] >= 60.0:
            self._sent.popleft()
        waits = [0.0]
        if self.rpm and len(self._sent) >= self.rpm:
            waits.append(60.0 - (now - self._sent[0][0]))
        if self.tpm and self._sent:
            used, budget = sum(t for _, t in self._sent), self.tpm
            if used + tokens > budget:
                # Wait until enough of the oldest requests leave the window.
                freed = 0
                for sent_at, sent_tokens in self._sent:
                    freed += sent_tokens
                    if used - freed + tokens <= budget:
                        waits.append(60.0 - (now - sent_at))
                        break
        return max(waits)

    def describe(self) -> str:
        """'concurrency 4/16, 120 requests, 3 rate-limited' for progress lines."""
        return (
            f"concurrency {self.current}/{self.max}, {self.entered} requests, {self.throttled} rate-limited"
        )
