"""A judge built at its first use: a run whose items were all judged before, or are all answered from the
judge cache, never imports an SDK (openai alone takes about a second) nor loads a local model."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..types import Judge, JudgeReply, JudgeRequest


class JudgeOnDemand:
    """Stands in for the judge `build()` makes; `provider` is known before (it keys the judge cache).

    The runner calls `built()` in its own thread before it sends the first request, so a judge that cannot
    be made (no key, no model file) fails there with its own message, as when it was made up front.
    """

    def __init__(self, provider: str, build: Callable[[], Judge]) -> None:
        self.provider = provider
        self._build = build
        self._judge: Judge | None = None
        self._lock = threading.Lock()

    def built(self) -> Judge:
        """The real judge, made once."""
        with self._lock:
            if self._judge is None:
                self._judge = self._build()
            return self._judge

    def judge(self, request: JudgeRequest) -> JudgeReply:
        return self.built().judge(request)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_build", "_judge", "_lock"):
            raise AttributeError(name)
        return getattr(self.built(), name)


def built(judge: Any) -> Any:
    """The judge itself, made now if it was waiting for its first use."""
    return judge.built() if isinstance(judge, JudgeOnDemand) else judge
