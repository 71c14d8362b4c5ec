"""Every judge provider, stated once: its key variables, default model, concurrency, its server presets, what
is known of its models (context windows, reasoning models, undated aliases, how ratings tokenise), its batch
engine, and how to build it (imported only when a judge is made). Whether a judge primes its reply is a fact of
the adapter's code, so the adapter states it (Judge.primes).

The CLI (`--judge`), the sidebar, the checks, the context limit, the batch engines and the README's table read
this registry; adding a judge API is one adapter module and one `register(ProviderSpec(...))`, in the product
or in a plugin module named by GEVAL_PROVIDER_PLUGINS.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..types import ExportedJudge, Judge, JudgeSettings
from ..urls import check_base_url, is_custom_server
from .capabilities import PRESETS, Preset, is_reasoning_model
from .common import env_key, require_key
from .prompt_cache import CacheRule, gemini_cache, openai_cache

# Builds a Judge from (settings, api_key, timeout).
JudgeFactory = Callable[[JudgeSettings, "str | None", float], Judge]


@dataclass(frozen=True)
class RatingTokens:
    """What is known of how a provider's tokenizer writes ratings."""

    single_max: int  # the largest non-negative integer rating that is one token
    sign_apart: bool = True  # a negative rating's sign is a token of its own ("-1": "-", "1")
    on_servers: bool = False  # `single_max` holds on a compatible server too (else: only on the own API)


@dataclass(frozen=True)
class ProviderSpec:
    """What the workbench knows about one judge provider."""

    name: str  # the provider field of JudgeSettings
    label: str  # how the sidebar and the README name it
    # inspect_ai's @modelapi shape: a function that imports the adapter (and its SDK) inside and returns its
    # builder, so listing providers imports nothing and every tool can follow the import.
    builder: Callable[[], JudgeFactory]
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
    context_tokens: int | None = None  # the context of every model it runs (an in-process judge's own)
    context_windows: Mapping[str, int] = field(
        default_factory=dict
    )  # documented windows by model-name prefix
    rating_tokens: RatingTokens | None = None  # None: its tokenizer is not known
    weighs_every_rating: bool = False  # its log-probabilities cover every rating, whatever top_logprobs says
    reasoning: Callable[[str], bool] | None = None  # which of its models reason (no logprobs, no temperature)
    aliases_drift: bool = False  # an undated model name is an alias the provider can move to another model
    batch_engine: str | None = None  # the batch engine its runs can be sent to (run.batch_engines.ENGINES)
    # Its server's documented prompt cache for a judge at a server (None: the provider's own API), for the estimate.
    prompt_cache: Callable[[JudgeSettings, str | None], CacheRule | None] | None = None
    free: bool = False  # runs on this machine: no price per token
    before_run: Callable[[JudgeSettings], None] | None = (
        None  # a check before a run is recorded (imports inside)
    )
    # `NAME:MODEL` names a file the run pins by its content (imports inside): the path with its hash. A pinned
    # name comes back as it is (the command line pins to refuse a bad file early, the plan pins again).
    pin_model: Callable[[str], str] | None = None
    openai_models: bool = False  # its model names are OpenAI's: other tools' exports may name them
    primes_reply: bool = False  # it runs in this process and primes its reply: no other tool reaches it

    @property
    def exported(self) -> ExportedJudge:
        """What an export to another tool may say of a judge of this provider."""
        return ExportedJudge(openai_model=self.openai_models, primed_in_process=self.primes_reply)

    @property
    def takes_server(self) -> bool:
        """Whether its judge sends requests to a server address one can name (a compatible server, an API's
        address); False: it runs in process."""
        return bool(self.compatible_label or self.base_url_variables)

    def build(self, settings: JudgeSettings, api_key: str | None = None, timeout: float = 60.0) -> Judge:
        """A judge for these settings, importing the adapter (and its SDK) only now."""
        return self.builder()(settings, api_key, timeout)

    def on_named_server(self, settings: JudgeSettings) -> bool:
        """Whether these settings name a compatible server (a base URL), not the provider's own API."""
        return bool(self.compatible_label and settings.base_url)


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


def judge_parts(ref: str) -> tuple[str, str | None]:
    """'openai:gpt-4o' -> ('openai', 'gpt-4o'); 'local' -> ('local', None); ConfigError for anything else."""
    provider, _, model = ref.strip().partition(":")
    spec = find_spec(provider)  # a provider that is not public (the test judge) is accepted, not advertised
    if spec is None or (spec.needs_model and not model):
        raise ConfigError(f"judge {ref!r}: use {judge_ref_help()}")
    return provider, model or None


def pinned_model(provider: str, model: str | None) -> str | None:
    """The model as a run records it: a file its provider pins by content carries its hash (ConfigError when
    the file is missing or is not a model file)."""
    spec = find_spec(provider)
    return spec.pin_model(model) if spec and spec.pin_model and model else model


def allowed_concurrency(settings: JudgeSettings, wanted: int) -> tuple[int, str | None]:
    """The calls in flight to use for `wanted`, and why it was lowered (None when it was not)."""
    spec = provider_spec(settings.provider)
    if wanted <= spec.max_concurrency:
        return wanted, None
    return spec.max_concurrency, (
        f"{spec.label} takes at most {spec.max_concurrency} calls in flight "
        f"(more only wait in line): using {spec.max_concurrency}, not {wanted}"
    )


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
    """What can be known about a judge before a run is recorded: its key is set, and its spec's own check
    passes (a local GGUF file whose content changed is refused here, not on every item)."""
    check_key(settings, api_key)
    spec = provider_spec(settings.provider)
    if spec.before_run is not None:
        spec.before_run(settings)


def key_variable(provider: str) -> str:
    """The variable a refused key's message names for this provider."""
    spec = find_spec(provider)
    return spec.key_variables[0] if spec and spec.key_variables else "the judge's key variable"


def key_variables() -> tuple[str, ...]:
    """Every registered provider's key variables, once each (what error messages are scrubbed of)."""
    return tuple(dict.fromkeys(v for spec in specs() if spec.key_required for v in spec.key_variables))


def reasons(settings: JudgeSettings) -> bool:
    """Whether the settings' model reasons before answering, by its provider's rule (anywhere: proxies too)."""
    spec = find_spec(settings.provider)
    return bool(spec and spec.reasoning and spec.reasoning(settings.model))


def batch_engine(provider: str) -> str | None:
    """The batch engine a provider's runs can be sent to, None when it has none."""
    spec = find_spec(provider)
    return spec.batch_engine if spec else None


def providers_table() -> str:
    """The public providers as the Markdown table the README shows (a test keeps the two equal)."""
    rows = [
        "| Provider | `--judge` | Key from | Default model | Calls in flight | Compatible servers |",
        "|---|---|---|---|---|---|",
    ]
    for spec in specs():
        if spec.public:
            judge = f"{spec.name}:MODEL" if spec.needs_model else spec.name
            keys = " or ".join(f"`{k}`" for k in spec.key_variables) or "none"
            servers = f"yes ({len(spec.presets)} presets)" if spec.compatible_label else "no"
            rows.append(
                f"| {spec.label} | `{judge}` | {keys} | `{spec.default_model}` | "
                f"{spec.default_concurrency} (at most {spec.max_concurrency}) | {servers} |"
            )
    return "\n".join(rows)


# The builders, one per adapter: each imports its module (and SDK) only when a judge is made.
def _local() -> JudgeFactory:
    from .local_judge import build

    return build


def _openai() -> JudgeFactory:
    from .openai_judge import build

    return build


def _gemini() -> JudgeFactory:
    from .gemini_judge import build

    return build


def _vertex() -> JudgeFactory:
    from .vertex_judge import build

    return build


LOCAL_MODEL = "smollm2-135m-instruct"  # the bundled model; any other local model is a GGUF file


def _pin_model_file(model: str) -> str:
    from .gguf_file import pin_model_file

    return model if model == LOCAL_MODEL else pin_model_file(model)


def _pinned_model_file(settings: JudgeSettings) -> None:
    """A GGUF file named as the local model must still be the file pinned by its content."""
    from .gguf_file import is_model_file, verified_path

    if is_model_file(settings.model):
        verified_path(settings.model)


# Documented context windows, by model-name prefix (the longest prefix wins).
OPENAI_WINDOWS = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
}
GEMINI_WINDOWS = {
    "gemini-1.5": 1_048_576,
    "gemini-2.0": 1_048_576,
    "gemini-2.5": 1_048_576,
    "gemini-3": 1_048_576,
}
LOCAL_CONTEXT = 4096  # the embedded judge's n_ctx (local_judge.DEFAULT_CTX), stated here without loading it
# OpenAI's tokenizers (cl100k_base, o200k_base) hold every integer 0-999 as one token; on a compatible server
# another model's tokenizer answers.
OPENAI_TOKENS = RatingTokens(999)
# SmolLM2's tokenizer splits numbers one digit per token ("10" -> "1", "0"); checked against the GGUF
# vocabulary in tests/prompts/test_checks.py, never by loading the model here.
LOCAL_TOKENS = RatingTokens(9, on_servers=True)

register(
    ProviderSpec(
        "local",
        "Local SmolLM2 (no key, no network)",
        _local,
        default_model=LOCAL_MODEL,
        needs_model=False,
        default_concurrency=1,
        max_concurrency=4,
        context_tokens=LOCAL_CONTEXT,
        rating_tokens=LOCAL_TOKENS,
        weighs_every_rating=True,
        free=True,
        before_run=_pinned_model_file,
        pin_model=_pin_model_file,
        primes_reply=True,
    )
)
register(
    ProviderSpec(
        "openai",
        "OpenAI",
        _openai,
        ("OPENAI_API_KEY",),
        base_url_variables=("OPENAI_BASE_URL",),
        default_model="gpt-4o-mini-2024-07-18",
        compatible_label="OpenAI-compatible server",
        compatible_model="smollm2",
        presets=PRESETS,
        context_windows=OPENAI_WINDOWS,
        rating_tokens=OPENAI_TOKENS,
        reasoning=is_reasoning_model,
        aliases_drift=True,
        batch_engine="openai",
        prompt_cache=openai_cache,
        openai_models=True,
    )
)
register(
    ProviderSpec(
        "gemini",
        "Gemini",
        _gemini,
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        base_url_variables=("GOOGLE_GEMINI_BASE_URL",),
        default_model="gemini-2.0-flash-001",
        context_windows=GEMINI_WINDOWS,
        aliases_drift=True,
        batch_engine="gemini",
        prompt_cache=gemini_cache,
    )
)
# Vertex AI has no key: application default credentials, and the project named in GOOGLE_CLOUD_PROJECT.
register(
    ProviderSpec(
        "vertex",
        "Vertex AI (Google Cloud credentials)",
        _vertex,
        ("GOOGLE_CLOUD_PROJECT",),
        base_url_variables=("GOOGLE_VERTEX_BASE_URL",),
        key_required=False,
        default_model="gemini-2.5-flash",
        context_windows=GEMINI_WINDOWS,
    )
)


def load_plugins() -> None:
    """Import the modules PLUGINS_ENV names and let each register its providers; one that fails is skipped
    with a warning that names it (the built-in providers still work)."""
    for module_name in filter(None, (part.strip() for part in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module_name).register_providers(register)
        except Exception as exc:  # a broken plugin must not take the built-in judges down with it
            warnings.warn(
                f"{PLUGINS_ENV}: {module_name!r} registered no provider ({type(exc).__name__}: {exc})",
                stacklevel=2,
            )


load_plugins()
