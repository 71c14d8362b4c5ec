"""A judge provider from outside the product, registered as a plugin (GEVAL_PROVIDER_PLUGINS=fake_provider_plugin,
tests/ on the path): "acme", with every fact a ProviderSpec states set to a value no built-in provider has, so a
check that reads a provider name instead of the spec gets it wrong."""

from __future__ import annotations

from geval_core.errors import ConfigError
from geval_core.providers.common import env_key, require_key
from geval_core.providers.registry import JudgeFactory, ProviderSpec, RatingTokens
from geval_core.providers.scripted import ScriptedJudge
from geval_core.types import JudgeSettings

KEY = "ACME_API_KEY"
BUILT: list[JudgeSettings] = []  # the settings of every judge the plugin built


class AcmeJudge(ScriptedJudge):
    """The scripted judge under another provider's name."""

    provider = "acme"


def build(settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> AcmeJudge:
    """The plugin's builder: the key from `api_key` or ACME_API_KEY."""
    require_key(api_key or env_key(KEY), (KEY,), "acme")
    BUILT.append(settings)
    return AcmeJudge(model_version=f"{settings.model}-served")


def _builder() -> JudgeFactory:
    return build


def _pin(model: str) -> str:
    """Acme's models are pinned by a release tag, the way a local judge pins its file by content."""
    if model == "acme-missing":
        raise ConfigError("no acme release acme-missing")
    return model if "#release=" in model else f"{model}#release=7"


def _refuse_broken(settings: JudgeSettings) -> None:
    if settings.model == "acme-broken":
        raise ConfigError("the acme model acme-broken is withdrawn: choose acme-1")


SPEC = ProviderSpec(
    "acme",
    "Acme judges",
    _builder,
    (KEY,),
    default_model="acme-1-2025-01-01",
    default_concurrency=3,
    max_concurrency=5,
    context_windows={"acme-1": 2048, "acme-1-long": 65_536},
    rating_tokens=RatingTokens(5),
    reasoning=lambda model: model.startswith("acme-think"),
    aliases_drift=True,
    before_run=_refuse_broken,
    pin_model=_pin,
    openai_models=True,  # served under OpenAI's model names, yet not the "openai" provider
    primes_reply=True,
)


def register_providers(register) -> None:
    """The plugin hook."""
    register(SPEC)
