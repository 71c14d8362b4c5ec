"""What a judge can do, known before any call: reasoning models, thinking budgets, compatible servers.

These are the documented facts the adapters act on (OpenAI reasoning models take
`max_completion_tokens`, only the default temperature, and give no log-probabilities; Gemini 2.5+
models think unless told not to) and the presets the sidebar and README show. A probe (`geval probe`)
measures the rest on the real server; `preflight` reads both before a run or a freeze.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..prompts.checks import Check, dimension_checks
from ..types import Dimension, JudgeSettings

# gpt-5 family (not the chat snapshots), o1/o3/o4 and their -mini/-pro variants.
_OPENAI_REASONING = re.compile(r"^(o\d+(-|$)|gpt-5(?!.*-chat))")
# Reasoning tokens come out of the completion budget: reserve room for them beyond the visible reply.
REASONING_ALLOWANCE = {"none": 0, "minimal": 1024, "low": 4096, "medium": 16_384, "high": 32_768, "xhigh": 65_536}
DEFAULT_EFFORT = "medium"  # what the models use when reasoning_effort is not sent
NO_LOGPROBS = "this judge gives no log-probabilities: freeze in sampling mode"


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
    "vllm": Preset("vLLM", "http://127.0.0.1:8000/v1", "yes (top_logprobs up to --max-logprobs, default 20)",
                   20, True),
    "llama.cpp": Preset("llama.cpp server", "http://127.0.0.1:8080/v1", "yes (top_logprobs as n_probs)", 20,
                        False),
    "ollama": Preset("Ollama", "http://127.0.0.1:11434/v1", "from v0.12.11 on; none before (use sampling)", 20,
                     False),
    "lm-studio": Preset("LM Studio", "http://127.0.0.1:1234/v1", "none on the chat API (use sampling)", None,
                        False),
}


def preset_summary(preset: Preset) -> str:
    """What a server returns, in one sentence (the sidebar's caption)."""
    cap = "none" if preset.top_logprobs_max is None else f"at most {preset.top_logprobs_max}"
    n = "honoured" if preset.n_honoured else "ignored (one request per reply)"
    return f"{preset.name}: log-probabilities {preset.logprobs}; top_logprobs {cap}; n {n}."


def presets_table() -> str:
    """The presets as the Markdown table the README shows (a test keeps the two equal)."""
    rows = ["| Server | Default base URL | Log-probabilities | top_logprobs at most | n honoured |",
            "|---|---|---|---|---|"]
    for preset in PRESETS.values():
        cap = "—" if preset.top_logprobs_max is None else str(preset.top_logprobs_max)
        rows.append(f"| {preset.name} | `{preset.base_url}` | {preset.logprobs} | {cap} | "
                    f"{'yes' if preset.n_honoured else 'no'} |")
    return "\n".join(rows)


def known_logprobs(settings: JudgeSettings) -> bool | None:
    """False when the judge is documented to give no log-probabilities, None when unknown."""
    if settings.provider == "openai" and is_reasoning_model(settings.model):  # anywhere: proxies too
        return False
    return None


def preflight(settings: JudgeSettings, probe: dict[str, Any] | None = None) -> list[str]:
    """Why these settings cannot score at all with this judge (empty when they can), before any call."""
    problems = []
    no_logprobs = known_logprobs(settings) is False or (probe is not None and probe.get("logprobs") is False)
    if settings.mode == "logprobs" and no_logprobs:
        problems.append(f"{NO_LOGPROBS} ({settings.judge_id})")
    if (settings.provider == "openai" and is_reasoning_model(settings.model) and settings.mode != "logprobs"
            and settings.temperature != 1.0):
        problems.append(f"{settings.judge_id} takes only the default temperature: freeze it with temperature 1 "
                        "(its replies vary by themselves)")
    if settings.reasoning_effort and settings.provider != "openai":
        problems.append(f"reasoning_effort is for OpenAI reasoning models, not {settings.judge_id}")
    return problems


def probe_findings(probe: dict[str, Any] | None, settings: JudgeSettings) -> list[str]:
    """What the latest probe says against these settings ("this judge splits 10"), for checks and pages."""
    if not probe:
        return []
    found = []
    if probe.get("logprobs") is False and settings.mode == "logprobs":
        found.append("this judge gives no log-probabilities: freeze in sampling mode")
    if probe.get("split_ratings"):
        found.append(f"this judge splits {', '.join(probe['split_ratings'])} into several tokens: its weighted "
                     "score cannot see those ratings; use a scale of single tokens (e.g. 1-5) or sampling mode")
    mass = probe.get("valid_mass")
    if settings.mode != "sampling" and isinstance(mass, (int, float)) and mass < settings.valid_mass_floor:
        found.append(f"this judge put {mass:.1%} of the probability on the ratings in its test (the floor is "
                     f"{settings.valid_mass_floor:.0%}; its reply began {probe.get('reply_start', '')!r}): "
                     "its items would have no score; prime the reply or use sampling mode")
    if probe.get("n_honoured") is False and settings.n > 1:
        found.append(f"this judge ignores n: each of the {settings.n} replies is a separate request (and cost)")
    return found


def capability_checks(judge: JudgeSettings, probe: dict[str, Any] | None) -> list[Check]:
    """What the judge cannot do (documented facts and its latest probe): no logprobs, split ratings, n ignored."""
    blocking = preflight(judge, probe)
    found = [Check("error", "judge", m) for m in blocking]
    found.extend(Check("warning", "judge", m) for m in probe_findings(probe, judge) if m not in blocking
                 and not any(m in b for b in blocking))
    return found


def check_dimension(dimension: Dimension, probe: dict[str, Any] | None = None) -> list[Check]:
    """Every pre-freeze check on one dimension, errors and warnings together; `probe` is the judge's latest
    `geval probe` result (diagnostics.judge_probe.latest_probe), when there is one."""
    return dimension_checks(dimension) + capability_checks(dimension.judge, probe)
