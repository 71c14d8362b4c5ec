"""Exports to other judge tools, given the frozen judge's provider facts (the files layer sits above the
registry and cannot read them itself)."""

from __future__ import annotations

from typing import Any

from ..files.tool_exports import tool_export
from ..types import ExportedJudge, FrozenPrompt
from .registry import find_spec


def exported_judge(prompt: FrozenPrompt) -> ExportedJudge:
    """The frozen judge's facts for an export; none for a provider this install does not register."""
    spec = find_spec(prompt.dimension.judge.provider)
    return spec.exported if spec else ExportedJudge()


def export_for_tool(
    prompt: FrozenPrompt, fmt: str, agreement: dict[str, Any] | None = None, pass_at: float | None = None
) -> str:
    """The export of `prompt` in one of files.tool_exports.FORMATS, with its judge's provider facts."""
    return tool_export(prompt, fmt, agreement, pass_at, facts=exported_judge(prompt))
