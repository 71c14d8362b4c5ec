"""G-Eval Workbench core: scoring, statistics, prompts, judges and the runner (no Streamlit here)."""

from .checks import Check, check_dimension
from .cost import estimate_cost
from .errors import (
    ConfigError,
    GEvalError,
    InputError,
    IntegrityError,
    JudgeError,
    LogprobsUnavailableError,
    MissingKeyError,
    NotFoundError,
    RetryableJudgeError,
)
from .export import export_prompt, load_prompt, score_item
from .prompts import content_hash, default_template, render
from .providers import get_judge
from .runner import RunSummary, run_scoring
from .scoring import ItemScore, SampledScore, WeightedScore, sampled_score, score_reply, weighted_score
from .stats import AgreementResult, agreement, tie_rate
from .steps import DriftReport, drift, generate_steps, parse_steps
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
    "Item",
    "ItemScore",
    "JudgeError",
    "JudgeReply",
    "JudgeRequest",
    "JudgeSettings",
    "LogprobsUnavailableError",
    "MissingKeyError",
    "NotFoundError",
    "Position",
    "RetryableJudgeError",
    "RunSummary",
    "SampledScore",
    "Scale",
    "TopLogprob",
    "Usage",
    "WeightedScore",
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
    "score_item",
    "score_reply",
    "tie_rate",
    "weighted_score",
]
