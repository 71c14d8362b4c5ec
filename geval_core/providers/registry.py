"""Every judge provider, stated once: its key variables, default model, concurrency, its server presets,
and how to build it (imported only when a judge is made). Whether a judge primes its reply is a fact of the
adapter's code, so the adapter states it (Judge.primes).

The CLI (`--judge`), the sidebar, the checks and the README's table read this registry; adding a judge API is
one adapter module and one `register(ProviderSpec(...))`.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..types import Judge, JudgeSettings
from ..urls import check_base_url, is_custom_server
from .capabilities import PRESETS, Preset
from .common import env_key, require_key


@dataclass(frozen=True)
class ProviderSpec:
    """What the workbench knows about one judge provider."""

    name: str  # the provider field of JudgeSettings
    label: str  # how the sidebar and the README name it
    builder: str  # "module:function" building a Judge from (settings, api_key, timeout); imported on use
    key_variables: tuple[str, ...] = ()  # environment variables its key (or project) is read from
    base_url_variables: tuple[str, ...] = ()  # environment variables its SDK takes a server address from
    key_required: bool = True  # False: key_variables name something else (Vertex AI: its project)
    default_model: str = ""
    needs_model: bool = True  # `--judge NAME:MODEL`; False: `--judge NAME` alone
    default_concurrency: int = 8  # calls in flight when the user says nothing
    max_concurrency: int = 64
    compatible_label: str | None = None  # it also talks to compatible servers at a base URL (sidebar choice)
    compatible_model: str = ""
    presets: Mapping[str, Preset] = field(default_factory=dict)  # compatible servers and what they return
    public: bool = True  # offered in lists and help; False: accepted when named (the test judge)
    reuse: bool = True  # one judge may serve many runs (the local model loads once); False: one per run

    @property
    def takes_server(self) -> bool:
        """Whether its judge sends requests to a server address one can name (a compatible server, an API's
        address); False: it runs in process."""
        return bool(self.compatible_label or self.base_url_variables)

    def build(self, settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> Judge:
        """A judge for these settings, importing the adapter (and its SDK) only now."""
        module, _, function = self.builder.partition(":")
        return getattr(importlib.import_module(module), function)(settings, api_key, timeout)


REGISTRY: dict[str, ProviderSpec] = {}
# Modules (comma-separated) whose `register_providers(register)` adds providers when the registry loads.
PLUGINS_ENV = "GEVAL_PROVIDER_PLUGINS"


def register(spec: ProviderSpec, first: bool = False) -> ProviderSpec:
    """Add a provider (replacing one of the same name); `first` puts it at the head of every list."""
    others = {name: other for name, other in REGISTRY.items() if name != spec.name}
    REGISTRY.clear()
    REGISTRY.update({spec.name: spec, **others} if first else {**others, spec.name: spec})
    return spec


def find_spec(name: str) -> ProviderSpec | None:
    """The spec of a provider, or None when no provider has that name."""
    return REGISTRY.get(name)


def provider_spec(name: str) -> ProviderSpec:
    """The spec of a provider; ConfigError naming the known ones for any other name."""
    spec = find_spec(name)
    if spec is None:
        raise ConfigError(f"unknown judge provider {name!r}: use one of {', '.join(public_names())}")
    return spec


def specs() -> tuple[ProviderSpec, ...]:
    """Every registered provider, in list order."""
    return tuple(REGISTRY.values())


def public_names() -> tuple[str, ...]:
    """The providers offered to users, in registration order."""
    return tuple(name for name, spec in REGISTRY.items() if spec.public)


def judge_ref_help() -> str:
    """How `--judge` names each public provider: local, openai:MODEL, ..."""
    return ", ".join(n if not REGISTRY[n].needs_model else f"{n}:MODEL" for n in public_names())


def allowed_concurrency(settings: JudgeSettings, wanted: int) -> tuple[int, str | None]:
    """The calls in flight to use for `wanted`, and why it was lowered (None when it was not)."""
    spec = provider_spec(settings.provider)
    if wanted <= spec.max_concurrency:
        return wanted, None
    return spec.max_concurrency, (f"{spec.label} takes at most {spec.max_concurrency} calls in flight "
                                  f"(more only wait in line): using {spec.max_concurrency}, not {wanted}")


def default_concurrency(settings: JudgeSettings) -> int:
    """Calls in flight when not given (the local judge runs one call at a time: more only adds waiting)."""
    return provider_spec(settings.provider).default_concurrency


def resolved_base_url(settings: JudgeSettings) -> str | None:
    """The server the judge's SDK will send to: the settings' base URL, else the address the SDK reads from
    the environment (OPENAI_BASE_URL, ...), checked like one given on the command line; None: the API's own."""
    if settings.base_url:
        return check_base_url(settings.base_url, key_variable(settings.provider))
    spec = find_spec(settings.provider)
    for variable in spec.base_url_variables if spec else ():
        value = os.environ.get(variable, "").strip()
        if value:
            return check_base_url(value, key_variable(settings.provider))
    return None


def check_key(settings: JudgeSettings, api_key: str | None = None) -> None:
    """MissingKeyError before anything is recorded or sent, when the judge needs a key and none is set (a
    compatible server of the user's may need none)."""
    spec = provider_spec(settings.provider)
    if not spec.key_variables or not spec.key_required or api_key or env_key(*spec.key_variables):
        return
    if spec.compatible_label and is_custom_server(resolved_base_url(settings)):
        return
    require_key(None, spec.key_variables, spec.name)


def check_judge(settings: JudgeSettings, api_key: str | None = None) -> None:
    """What can be known about a judge before a run is recorded: its key is set, its model file is the one
    pinned (a local GGUF file whose content changed is refused here, not on every item)."""
    check_key(settings, api_key)
    if settings.provider == "local":
        from .gguf_file import is_model_file, verified_path

        if is_model_file(settings.model):
            verified_path(settings.model)


def key_variable(provider: str) -> str:
    """The variable a refused key's message names for this provider."""
    spec = find_spec(provider)
    return spec.key_variables[0] if spec and spec.key_variables else "OPENAI_API_KEY"


def providers_table() -> str:
    """The public providers as the Markdown table the README shows (a test keeps the two equal)."""
    rows = ["| Provider | `--judge` | Key from | Default model | Calls in flight | Compatible servers |",
            "|---|---|---|---|---|---|"]
    for spec in specs():
        if spec.public:
            judge = f"{spec.name}:MODEL" if spec.needs_model else spec.name
            keys = " or ".join(f"`{k}`" for k in spec.key_variables) or "none"
            servers = f"yes ({len(spec.presets)} presets)" if spec.compatible_label else "no"
            rows.append(f"| {spec.label} | `{judge}` | {keys} | `{spec.default_model}` | "
                        f"{spec.default_concurrency} (at most {spec.max_concurrency}) | {servers} |")
    return "\n".join(rows)


register(ProviderSpec("local", "Local SmolLM2 (no key, no network)", "geval_core.providers.local_judge:build",
                      default_model="smollm2-135m-instruct", needs_model=False, default_concurrency=1,
                      max_concurrency=4))
register(ProviderSpec("openai", "OpenAI", "geval_core.providers.openai_judge:build", ("OPENAI_API_KEY",),
                      base_url_variables=("OPENAI_BASE_URL",), default_model="gpt-4o-mini-2024-07-18", compatible_label="OpenAI-compatible server",
                      compatible_model="smollm2", presets=PRESETS))
register(ProviderSpec("gemini", "Gemini", "geval_core.providers.gemini_judge:build",
                      ("GEMINI_API_KEY", "GOOGLE_API_KEY"), base_url_variables=("GOOGLE_GEMINI_BASE_URL",),
                      default_model="gemini-2.0-flash-001"))
# Vertex AI has no key: application default credentials, and the project named in GOOGLE_CLOUD_PROJECT.
register(ProviderSpec("vertex", "Vertex AI (Google Cloud credentials)", "geval_core.providers.vertex_judge:build",
                      ("GOOGLE_CLOUD_PROJECT",), base_url_variables=("GOOGLE_VERTEX_BASE_URL",), key_required=False,
                      default_model="gemini-2.5-flash"))
register(ProviderSpec("scripted", "Scripted test judge", "geval_core.providers.scripted:build",
                      default_model="scripted-1", needs_model=False, public=False, reuse=False))


def load_plugins() -> None:
    """Import the modules PLUGINS_ENV names and let each register its providers; one that fails is skipped
    with a warning that names it (the built-in providers still work)."""
    for module_name in filter(None, (part.strip() for part in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module_name).register_providers(register)
        except Exception as exc:  # a broken plugin must not take the built-in judges down with it
            warnings.warn(f"{PLUGINS_ENV}: {module_name!r} registered no provider ({type(exc).__name__}: {exc})",
                          stacklevel=2)


load_plugins()
