"""What a judge can do, known before any call: reasoning models, thinking budgets, compatible servers, and the
checks a dimension's judge settings get from them.

These are the documented facts the adapters act on (OpenAI reasoning models take
`max_completion_tokens`, only the default temperature, and give no log-probabilities; Gemini 2.5+
models think unless told not to) and the presets the sidebar and README show; each provider's spec in the
registry says which of them apply to it. A probe (`geval probe`) measures the rest on the real server;
`preflight` reads both before a run or a freeze.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..prompts.checks import Check, dimension_checks
from ..types import Dimension, JudgeSettings, Scale

if TYPE_CHECKING:
    from .registry import ProviderSpec

# gpt-5 family (not the chat snapshots), o1/o3/o4 and their -mini/-pro variants.
_OPENAI_REASONING = re.compile(r"^(o\d+(-|$)|gpt-5(?!.*-chat))")
# Reasoning tokens come out of the completion budget: reserve room for them beyond the visible reply.
REASONING_ALLOWANCE = {
    "none": 0,
    "minimal": 1024,
    "low": 4096,
    "medium": 16_384,
    "high": 32_768,
    "xhigh": 65_536,
}
DEFAULT_EFFORT = "medium"  # what the models use when reasoning_effort is not sent
NO_LOGPROBS = "this judge gives no log-probabilities: freeze in sampling mode"
# A dated or numbered snapshot: gpt-4o-2024-08-06, gpt-4-0613, gemini-1.5-flash-002, ...-preview-05-20.
_PINNED = re.compile(r"\d{4}-\d{2}-\d{2}|-\d{4}(?=$|-)|-\d{3}$|-\d{2}-\d{2}$")


def is_reasoning_model(model: str) -> bool:
    """True for OpenAI models that reason before answering (o-series, gpt-5 family)."""
    return bool(_OPENAI_REASONING.match(model.rsplit("/", 1)[-1].lower()))


def completion_budget(max_tokens: int, effort: str | None) -> int:
    """max_completion_tokens for a reasoning model: the reply budget plus room for its reasoning."""
    return max_tokens + REASONING_ALLOWANCE[effort or DEFAULT_EFFORT]


@dataclass(frozen=True)
class Thinking:
    """How a Gemini model is told to think as little as it may."""

    budget: int | None = None  # thinking_budget to send (0 turns thinking off)
    level: str | None = None  # thinking_level for models that take levels instead
    allowance: int = 0  # tokens added to max_output_tokens for the thinking it still does

    def config(self) -> dict[str, Any] | None:
        """The thinking_config to send, or None for models that do not think."""
        if self.budget is None and self.level is None:
            return None
        return {"thinking_level": self.level} if self.level else {"thinking_budget": self.budget}


# Longest prefix wins. Budgets from Google's thinking guide: 2.5 Pro cannot stop thinking (128 at
# least); Flash and Flash-Lite take 0. Gemini 3 models take a thinking level; Pro's lowest is "low".
_THINKING = {
    "gemini-2.5-pro": Thinking(budget=128, allowance=128),
    "gemini-2.5-flash": Thinking(budget=0),
    "gemini-2.5-flash-lite": Thinking(budget=0),
    "gemini-3": Thinking(level="low", allowance=2048),
    "gemini-3-flash": Thinking(level="minimal", allowance=1024),
}


def gemini_thinking(model: str) -> Thinking:
    """The least thinking a Gemini model allows (no config for models that do not think)."""
    name = model.rsplit("/", 1)[-1].lower()
    matches = [p for p in _THINKING if name == p or name.startswith(p + "-") or name.startswith(p + ".")]
    return _THINKING[max(matches, key=len)] if matches else Thinking()


@dataclass(frozen=True)
class Preset:
    """An OpenAI-compatible server: where it listens by default and what it is known to return."""

    name: str
    base_url: str
    logprobs: str  # what it gives, in words
    top_logprobs_max: int | None
    n_honoured: bool


PRESETS = {
    "vllm": Preset(
        "vLLM", "http://127.0.0.1:8000/v1", "yes (top_logprobs up to --max-logprobs, default 20)", 20, True
    ),
    "llama.cpp": Preset(
        "llama.cpp server", "http://127.0.0.1:8080/v1", "yes (top_logprobs as n_probs)", 20, False
    ),
    "ollama": Preset(
        "Ollama", "http://127.0.0.1:11434/v1", "from v0.12.11 on; none before (use sampling)", 20, False
    ),
    "lm-studio": Preset(
        "LM Studio", "http://127.0.0.1:1234/v1", "none on the chat API (use sampling)", None, False
    ),
}


def preset_summary(preset: Preset) -> str:
    """What a server returns, in one sentence (the sidebar's caption)."""
    cap = "none" if preset.top_logprobs_max is None else f"at most {preset.top_logprobs_max}"
    n = "honoured" if preset.n_honoured else "ignored (one request per reply)"
    return f"{preset.name}: log-probabilities {preset.logprobs}; top_logprobs {cap}; n {n}."


def presets_table() -> str:
    """The presets as the Markdown table the README shows (a test keeps the two equal)."""
    rows = [
        "| Server | Default base URL | Log-probabilities | top_logprobs at most | n honoured |",
        "|---|---|---|---|---|",
    ]
    for preset in PRESETS.values():
        cap = "—" if preset.top_logprobs_max is None else str(preset.top_logprobs_max)
        rows.append(
            f"| {preset.name} | `{preset.base_url}` | {preset.logprobs} | {cap} | "
            f"{'yes' if preset.n_honoured else 'no'} |"
        )
    return "\n".join(rows)


def _spec(settings: JudgeSettings) -> ProviderSpec | None:
    from .registry import find_spec  # the registry imports this module's facts: looked up at call time

    return find_spec(settings.provider)


def known_logprobs(settings: JudgeSettings) -> bool | None:
    """False when the judge is documented to give no log-probabilities (a reasoning model), None when unknown."""
    from .registry import reasons

    return False if reasons(settings) else None


def preflight(settings: JudgeSettings, probe: dict[str, Any] | None = None) -> list[str]:
    """Why these settings cannot score at all with this judge (empty when they can), before any call."""
    from .registry import reasons, specs

    problems = []
    no_logprobs = known_logprobs(settings) is False or (probe is not None and probe.get("logprobs") is False)
    if settings.mode == "logprobs" and no_logprobs:
        problems.append(f"{NO_LOGPROBS} ({settings.judge_id})")
    if reasons(settings) and settings.mode != "logprobs" and settings.temperature != 1.0:
        problems.append(
            f"{settings.judge_id} takes only the default temperature: freeze it with temperature 1 "
            "(its replies vary by themselves)"
        )
    spec = _spec(settings)
    if settings.reasoning_effort and (spec is None or spec.reasoning is None):
        labels = " or ".join(s.label for s in specs() if s.reasoning is not None) or "no"
        problems.append(f"reasoning_effort is for {labels} reasoning models, not {settings.judge_id}")
    return problems


def probe_findings(probe: dict[str, Any] | None, settings: JudgeSettings) -> list[str]:
    """What the latest probe says against these settings ("this judge splits 10"), for checks and pages."""
    if not probe:
        return []
    found = []
    if probe.get("logprobs") is False and settings.mode == "logprobs":
        found.append("this judge gives no log-probabilities: freeze in sampling mode")
    if probe.get("split_ratings"):
        found.append(
            f"this judge splits {', '.join(probe['split_ratings'])} into several tokens: its weighted "
            "score cannot see those ratings; use a scale of single tokens (e.g. 1-5) or sampling mode"
        )
    mass = probe.get("valid_mass")
    if settings.mode != "sampling" and isinstance(mass, (int, float)) and mass < settings.valid_mass_floor:
        found.append(
            f"this judge put {mass:.1%} of the probability on the ratings in its test (the floor is "
            f"{settings.valid_mass_floor:.0%}; its reply began {probe.get('reply_start', '')!r}): "
            "its items would have no score; prime the reply or use sampling mode"
        )
    if probe.get("n_honoured") is False and settings.n > 1:
        found.append(
            f"this judge ignores n: each of the {settings.n} replies is a separate request (and cost)"
        )
    return found


def capability_checks(judge: JudgeSettings, probe: dict[str, Any] | None) -> list[Check]:
    """What the judge cannot do (documented facts and its latest probe): no logprobs, split ratings, n ignored."""
    blocking = preflight(judge, probe)
    found = [Check("error", "judge", m) for m in blocking]
    found.extend(
        Check("warning", "judge", m)
        for m in probe_findings(probe, judge)
        if m not in blocking and not any(m in b for b in blocking)
    )
    return found


def ratings_single_token(judge: JudgeSettings, scale: Scale) -> bool | None:
    """Whether every rating is one token for this judge; None when its tokenizer is not known."""
    spec = _spec(judge)
    tokens = spec.rating_tokens if spec else None
    if tokens is None:
        return None
    if scale.min < 0:
        return False if tokens.sign_apart else None
    if spec is not None and spec.on_named_server(judge) and not tokens.on_servers:
        return None  # another model's tokenizer answers there
    return scale.max <= tokens.single_max


def _single_token(dim: Dimension) -> list[Check]:
    fits = ratings_single_token(dim.judge, dim.scale)
    if fits is None or fits:
        return []
    # A warning, not a refusal: freezing stays possible, the consequence is spelled out.
    if dim.judge.mode == "sampling":
        effect = "sampling parses the reply text, so this only matters if you switch to logprobs mode"
    else:
        effect = (
            "the weighted score follows the reply's tokens through the rating it wrote, but sees a "
            "rating it did not write only by its first token ('-' of '-1', '1' of '10'): such "
            "probability is flagged ambiguous, never scored; prefer a scale within 0-9 or sampling mode"
        )
    return [
        Check(
            "warning",
            "scale",
            f"ratings of the scale {dim.scale} do not fit in one token for the "
            f"{dim.judge.judge_id} judge: {effect}",
        )
    ]


def _top_logprobs(dim: Dimension) -> list[Check]:
    judge, spec = dim.judge, _spec(dim.judge)
    if (
        judge.mode == "sampling"
        or judge.top_logprobs >= len(dim.scale.points)
        or (spec and spec.weighs_every_rating)
    ):
        return []
    return [
        Check(
            "warning",
            "judge.top_logprobs",
            f"top_logprobs {judge.top_logprobs} is fewer than the "
            f"{len(dim.scale.points)} ratings; some ratings can never be "
            "weighed",
        )
    ]


def model_alias_warnings(judge: JudgeSettings) -> list[str]:
    """A warning when a hosted judge is named by an undated alias that can change under it."""
    spec = _spec(judge)
    if spec is None or not spec.aliases_drift or spec.on_named_server(judge):
        return []  # a pinned local file, a test judge, or a self-hosted server the user controls
    model = judge.model.strip()
    if model and not model.endswith("latest") and _PINNED.search(model):
        return []
    return [
        f"{model!r} is an alias without a date: the provider can change the model behind it, "
        "so scores drift; prefer a dated snapshot (e.g. gpt-4o-2024-08-06)"
    ]


def judge_limit_checks(dimension: Dimension) -> list[Check]:
    """The checks of a dimension that depend on its judge's provider: ratings that split into several tokens,
    top_logprobs below the scale's ratings, an undated model alias."""
    found = _single_token(dimension) + _top_logprobs(dimension)
    return found + [Check("warning", "judge.model", m) for m in model_alias_warnings(dimension.judge)]


def check_dimension(dimension: Dimension, probe: dict[str, Any] | None = None) -> list[Check]:
    """Every pre-freeze check on one dimension, errors and warnings together; `probe` is the judge's latest
    `geval probe` result (diagnostics.judge_probe.latest_probe), when there is one."""
    return (
        dimension_checks(dimension)
        + judge_limit_checks(dimension)
        + capability_checks(dimension.judge, probe)
    )
