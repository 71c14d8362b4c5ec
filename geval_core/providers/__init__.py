"""Judge adapters: one thin class per API, all returning the neutral JudgeReply."""

from __future__ import annotations

from ..errors import ConfigError, UnreachableError
from ..types import JudgeSettings
from ._common import NO_KEY, check_base_url, env_key, is_custom_server, require_key
from .base import Judge
from .scripted import ScriptedJudge

PROVIDERS = ("local", "openai", "gemini", "vertex", "scripted")


def get_judge(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> Judge:
    """The judge for `settings`; keys come from `api_key` or the environment, never from storage.

    The last guard before a key is used: a server URL carrying credentials is refused here too.
    """
    provider = settings.provider
    base_url = check_base_url(settings.base_url, "GEMINI_API_KEY" if provider == "gemini" else "OPENAI_API_KEY")
    if provider == "local":
        from .local_judge import LocalJudge

        # A path to another GGUF file may stand in for the bundled SmolLM2.
        return LocalJudge(settings.model if settings.model.endswith(".gguf") else None)
    if provider == "openai":
        from .openai_judge import KEY_VARIABLE, OpenAIJudge

        key = api_key or env_key(KEY_VARIABLE)
        if not key and is_custom_server(base_url):
            key = NO_KEY  # local OpenAI-compatible servers (llama.cpp, vLLM, Ollama) need none
        key = require_key(key, (KEY_VARIABLE,), "openai")
        return OpenAIJudge(settings.model, key, base_url=base_url, timeout=timeout)
    if provider == "gemini":
        from .gemini_judge import KEY_VARIABLES, GeminiJudge

        key = require_key(api_key or env_key(*KEY_VARIABLES), KEY_VARIABLES, "gemini")
        return GeminiJudge(settings.model, key, base_url=base_url, timeout=timeout)
    if provider == "vertex":
        from .vertex_judge import VertexJudge, vertex_project

        # No key: application default credentials, looked up by the SDK at the first request.
        return VertexJudge(settings.model, *vertex_project(), base_url=base_url, timeout=timeout)
    if provider == "scripted":
        return ScriptedJudge()
    raise ConfigError(f"unknown judge provider {provider!r}: use one of {', '.join(PROVIDERS)}")


__all__ = ["PROVIDERS", "Judge", "ScriptedJudge", "UnreachableError", "get_judge"]
