"""How many tokens a judge reads: its provider's fixed context (the local judge's own), the documented windows of
hosted models (both stated on the provider's spec), and what a probe measured on a server; None when nobody
knows (then nothing is refused for length)."""

from __future__ import annotations

import re
from typing import Any

from ..types import JudgeSettings
from .registry import find_spec


def context_window(settings: JudgeSettings, probe: dict[str, Any] | None = None) -> int | None:
    """The judge's context in tokens, or None when it is not known."""
    if probe and isinstance(probe.get("context_tokens"), int) and probe["context_tokens"] > 0:
        return probe["context_tokens"]
    spec = find_spec(settings.provider)
    if spec is None:
        return None
    if spec.context_tokens is not None:
        return spec.context_tokens
    if settings.base_url:  # a server of the user's: only its probe knows
        return None
    table = spec.context_windows
    matches = [prefix for prefix in table if re.match(re.escape(prefix) + r"($|[-.:])", settings.model)]
    return table[max(matches, key=len)] if matches else None
