"""G-Eval Workbench core: scoring, statistics, prompts, judges and the runner (no Streamlit here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

# The public names are loaded on first use (PEP 562): `geval --help` and `geval runs list` need neither
# numpy (stats) nor a judge's SDK, and `from geval_core.errors import X` should not pay for them either.
# `from geval_core import X` and `geval_core.X` work as before.
_EXPORTS = {
    ".prompts.checks": ("Check",),
    ".providers.capabilities": ("check_dimension",),
    ".errors": ("ConfigError", "GEvalError", "InputError", "IntegrityError", "InvalidReplyError", "JudgeError",
                "LogprobsUnavailableError", "MissingKeyError", "NotFoundError", "RetryableJudgeError",
                "UnreachableError"),
    ".export": ("export_prompt", "load_prompt", "score_item", "score_items"),
    "prompt_library.frames": ("agree_frame", "score_frame"),
    ".judgment": ("Judgment",),
    ".prompts": ("content_hash", "default_template", "render"),
    ".providers": ("get_judge",),
    ".run": ("RunOptions", "RunSummary", "estimate_cost", "run_scoring"),
    ".scoring": ("ItemScore", "SampledScore", "WeightedScore", "sampled_score", "score_reply", "weighted_score"),
    ".stats": ("AgreementResult", "agreement", "tie_rate"),
    ".prompts.steps": ("DriftReport", "drift", "generate_steps", "parse_steps"),
    ".store": ("Store",),
    ".types": ("HAND_WRITTEN", "Choice", "Dimension", "FrozenPrompt", "Item", "JudgeReply", "JudgeRequest",
               "JudgeSettings", "Position", "Scale", "TopLogprob", "Usage"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from prompt_library.frames import agree_frame, score_frame

    from .errors import (
        ConfigError,
        GEvalError,
        InputError,
        IntegrityError,
        InvalidReplyError,
        JudgeError,
        LogprobsUnavailableError,
        MissingKeyError,
        NotFoundError,
        RetryableJudgeError,
        UnreachableError,
    )
    from .export import score_items
    from .files.prompt_files import export_prompt, load_prompt, score_item
    from .judgment import Judgment
    from .prompts import content_hash, default_template, render
    from .prompts.checks import Check
    from .prompts.steps import DriftReport, drift, generate_steps, parse_steps
    from .providers import get_judge
    from .providers.capabilities import check_dimension
    from .run import RunOptions, RunSummary, estimate_cost, run_scoring
    from .scoring import ItemScore, SampledScore, WeightedScore, sampled_score, score_reply, weighted_score
    from .stats import AgreementResult, agreement, tie_rate
    from .store import Store
    from .types import (
        HAND_WRITTEN,
        Choice,
        Dimension,
        FrozenPrompt,
        Item,
        JudgeReply,
        JudgeRequest,
        JudgeSettings,
        Position,
        Scale,
        TopLogprob,
        Usage,
    )


__all__ = [
    "HAND_WRITTEN",
    "AgreementResult",
    "Check",
    "Choice",
    "ConfigError",
    "Dimension",
    "DriftReport",
    "FrozenPrompt",
    "GEvalError",
    "InputError",
    "IntegrityError",
    "InvalidReplyError",
    "Item",
    "ItemScore",
    "JudgeError",
    "JudgeReply",
    "JudgeRequest",
    "JudgeSettings",
    "Judgment",
    "LogprobsUnavailableError",
    "MissingKeyError",
    "NotFoundError",
    "Position",
    "RetryableJudgeError",
    "RunOptions",
    "RunSummary",
    "SampledScore",
    "Scale",
    "Store",
    "TopLogprob",
    "UnreachableError",
    "Usage",
    "WeightedScore",
    "agree_frame",
    "agreement",
    "check_dimension",
    "content_hash",
    "default_template",
    "drift",
    "estimate_cost",
    "export_prompt",
    "generate_steps",
    "get_judge",
    "load_prompt",
    "parse_steps",
    "render",
    "run_scoring",
    "sampled_score",
    "score_frame",
    "score_item",
    "score_items",
    "score_reply",
    "tie_rate",
    "weighted_score",
]
