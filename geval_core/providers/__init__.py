"""Judge adapters: one thin class per API, all returning the neutral JudgeReply."""

from .base import Judge
from .scripted import ScriptedJudge

__all__ = ["Judge", "ScriptedJudge"]
