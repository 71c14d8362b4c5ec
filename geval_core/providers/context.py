"""How many tokens a judge reads: the local judge's own context, documented windows of hosted models, and
what a probe measured on a server; None when nobody knows (then nothing is refused for length)."""

from __future__ import annotations

import re
from typing import Any

from ..types import JudgeSettings

LOCAL_CONTEXT = 4096  # the embedded judge's n_ctx (local_judge.DEFAULT_CTX), stated here without loading it
# Documented context windows of hosted models, by name prefix (longest prefix wins).
HOSTED_WINDOWS = {
    "openai": {"gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4.1": 1_047_576, "gpt-4-turbo": 128_000,
               "gpt-3.5-turbo": 16_385, "gpt-5": 400_000, "o1": 200_000, "o3": 200_000, "o4-mini": 200_000},
    "gemini": {"gemini-1.5": 1_048_576, "gemini-2.0": 1_048_576, "gemini-2.5": 1_048_576, "gemini-3": 1_048_576},
}
HOSTED_WINDOWS["vertex"] = HOSTED_WINDOWS["gemini"]


def context_window(settings: JudgeSettings, probe: dict[str, Any] | None = None) -> int | None:
    """The judge's context in tokens, or None when it is not known."""
    if probe and isinstance(probe.get("context_tokens"), int) and probe["context_tokens"] > 0:
        return probe["context_tokens"]
    if settings.provider == "local":
        return LOCAL_CONTEXT
    if settings.base_url:  # a server of the user's: only its probe knows
        return None
    table = HOSTED_WINDOWS.get(settings.provider, {})
    matches = [prefix for prefix in table if re.match(re.escape(prefix) + r"($|[-.:])", settings.model)]
    return table[max(matches, key=len)] if matches else None
