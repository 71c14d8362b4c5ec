"""The one-method judge abstraction every provider implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..types import JudgeReply, JudgeRequest


@runtime_checkable
class Judge(Protocol):
    """A judge model behind one method."""

    provider: str  # "local", "openai", "gemini", "scripted"

    def judge(self, request: JudgeRequest) -> JudgeReply:
        """Answer one request; raise RetryableJudgeError for transient failures, JudgeError otherwise."""
        ...
