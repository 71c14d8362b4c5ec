"""Type stub of geval_core's lazy face, written by geval_core.lazy.write_stub from its table."""

from prompt_library.frames import (
    agree_frame as agree_frame,
    score_frame as score_frame,
)
from prompt_library.library import (
    open_library as open_library,
)
from .diagnostics.drift import (
    drift_check as drift_check,
    freeze_watch as freeze_watch,
)
from .diagnostics.drift_file import (
    drift_check_file as drift_check_file,
)
from .errors import (
    ConfigError as ConfigError,
    ContextLengthError as ContextLengthError,
    GEvalError as GEvalError,
    InputError as InputError,
    IntegrityError as IntegrityError,
    InvalidReplyError as InvalidReplyError,
    JudgeError as JudgeError,
    LibraryLockedError as LibraryLockedError,
    LogprobsUnavailableError as LogprobsUnavailableError,
    MissingKeyError as MissingKeyError,
    NotFoundError as NotFoundError,
    RetryLaterError as RetryLaterError,
    RetryableJudgeError as RetryableJudgeError,
    RunBusyError as RunBusyError,
    UnreachableError as UnreachableError,
)
from .files.prompt_files import (
    export_prompt as export_prompt,
    load_prompt as load_prompt,
)
from .judgment import (
    ItemScore as ItemScore,
    Judgment as Judgment,
)
from .prompts.checks import (
    Check as Check,
)
from .prompts.hash import (
    content_hash as content_hash,
)
from .prompts.render import (
    default_template as default_template,
    render as render,
)
from .prompts.steps import (
    DriftReport as DriftReport,
    drift as drift,
    generate_steps as generate_steps,
    parse_steps as parse_steps,
)
from .providers import (
    get_judge as get_judge,
)
from .providers.capabilities import (
    check_dimension as check_dimension,
)
from .run.cost import (
    estimate_cost as estimate_cost,
)
from .run.many_items import (
    score_items as score_items,
)
from .run.one_item import (
    score_item as score_item,
)
from .run.options import (
    RunOptions as RunOptions,
    RunSummary as RunSummary,
)
from .run.runner import (
    run_scoring as run_scoring,
)
from .scoring.weighted import (
    SampledScore as SampledScore,
    WeightedScore as WeightedScore,
    sampled_score as sampled_score,
    score_reply as score_reply,
    weighted_score as weighted_score,
)
from .stats.agreement import (
    AgreementResult as AgreementResult,
    agreement as agreement,
    tie_rate as tie_rate,
)
from .store import (
    Store as Store,
)
from .types import (
    Choice as Choice,
    Dimension as Dimension,
    FrozenPrompt as FrozenPrompt,
    HAND_WRITTEN as HAND_WRITTEN,
    Item as Item,
    JudgeReply as JudgeReply,
    JudgeRequest as JudgeRequest,
    JudgeSettings as JudgeSettings,
    Position as Position,
    Scale as Scale,
    TopLogprob as TopLogprob,
    Usage as Usage,
)

__all__ = [
    "AgreementResult",
    "Check",
    "Choice",
    "ConfigError",
    "ContextLengthError",
    "Dimension",
    "DriftReport",
    "FrozenPrompt",
    "GEvalError",
    "HAND_WRITTEN",
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
    "LibraryLockedError",
    "LogprobsUnavailableError",
    "MissingKeyError",
    "NotFoundError",
    "Position",
    "RetryLaterError",
    "RetryableJudgeError",
    "RunBusyError",
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
    "drift_check",
    "drift_check_file",
    "estimate_cost",
    "export_prompt",
    "freeze_watch",
    "generate_steps",
    "get_judge",
    "load_prompt",
    "open_library",
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
