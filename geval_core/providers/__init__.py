"""Judge adapters: one thin class per API, all returning the neutral JudgeReply; the registry names them."""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnreachableError
from ..types import Judge, JudgeSettings
from ..urls import check_base_url
from .registry import REGISTRY, ProviderSpec, key_variable, provider_spec, public_names, register, specs
from .scripted import ScriptedJudge


def get_judge(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> Judge:
    """The judge for `settings`; keys come from `api_key` or the environment, never from storage.

    The last guard before a key is used: a server URL carrying credentials is refused here too.
    """
    spec = provider_spec(settings.provider)
    settings = replace(settings, base_url=check_base_url(settings.base_url, key_variable(spec.name)))
    return spec.build(settings, api_key, timeout)


__all__ = [
    "REGISTRY",
    "Judge",
    "ProviderSpec",
    "ScriptedJudge",
    "UnreachableError",
    "get_judge",
    "provider_spec",
    "public_names",
    "register",
    "specs",
]
