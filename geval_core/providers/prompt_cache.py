"""When a provider's server bills part of a prompt as cached input: the documented rules, one per provider, read by
the cost estimate through the provider's spec (ProviderSpec.prompt_cache)."""

from __future__ import annotations

from dataclasses import dataclass

from ..types import JudgeSettings

__all__ = ["GEMINI_CACHE", "OPENAI_CACHE", "CacheRule", "gemini_cache", "openai_cache"]


@dataclass(frozen=True)
class CacheRule:
    """When a provider's prompt cache bills part of a prompt as cached input."""

    minimum: int  # the least prompt (and the least hit) it caches, in tokens
    step: int  # a hit covers a whole number of steps
    source: str  # where the rule is documented, for the estimate's note

    def cached(self, prompt_tokens: int, shared_tokens: int) -> int:
        """Tokens of a prompt read from the cache, given the prefix it shares with prompts sent before."""
        hit = min(shared_tokens, prompt_tokens)
        hit -= hit % self.step
        return hit if prompt_tokens >= self.minimum and hit >= self.minimum else 0


OPENAI_CACHE = CacheRule(1024, 128, "OpenAI: prompts of 1,024 tokens and more, hits in steps of 128 tokens")
OPENAI_UNCACHED = ("gpt-3.5", "gpt-4-")  # and "gpt-4" itself: models before gpt-4o
# Implicit caching, Gemini 2.5 and later, by the minimum prompt the caching page lists per model; other models
# (2.0, Flash-Lite, which it does not list) get no prediction.
GEMINI_CACHE = {
    "gemini-2.5-flash": CacheRule(
        2048, 1, "Gemini 2.5 Flash implicit caching: prompts of 2,048 tokens and more"
    ),
    "gemini-2.5-pro": CacheRule(2048, 1, "Gemini 2.5 Pro implicit caching: prompts of 2,048 tokens and more"),
}


def openai_cache(settings: JudgeSettings, server: str | None) -> CacheRule | None:
    """OpenAI's own API caches gpt-4o and newer; another server at a base URL names no rule."""
    from .openai_judge import routes_by_cache_key

    own_api = server is None or routes_by_cache_key(server)
    # The guide caches "gpt-4o and newer": the older chat models it names no rule for.
    older = settings.model == "gpt-4" or settings.model.startswith(OPENAI_UNCACHED)
    return OPENAI_CACHE if own_api and not older else None


def gemini_cache(settings: JudgeSettings, server: str | None) -> CacheRule | None:
    """The Gemini API's implicit caching of the 2.5 models it lists (Flash-Lite not among them)."""
    if server is not None:
        return None
    family = settings.model.removeprefix("models/")
    matches = [
        k for k in GEMINI_CACHE if family == k or (family.startswith(k + "-") and "lite" not in family)
    ]
    return GEMINI_CACHE[max(matches, key=len)] if matches else None
