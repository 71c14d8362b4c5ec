"""How a run is carried out (`RunOptions`, stated once with bounds) and what it did (`RunSummary`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..errors import ConfigError
from ..scoring import REDUCERS
from ..types import JudgeSettings, bounded, check_bounds


@dataclass(frozen=True)
class RunOptions:
    """Everything about a run that is not the metric: concurrency, retries, cache, cancel grace.

    `settings` overrides the prompt's own judge settings (which define the metric) when given.
    """

    settings: JudgeSettings | None = None
    concurrency: int = bounded(8, 1, 64, "judge calls in flight")
    max_attempts: int = bounded(5, 1, 20, "tries per judge call")
    use_cache: bool = True
    reducer: str = "mean"
    retry_base: float = bounded(0.5, 0.0, 60.0, "first backoff in seconds (doubles per retry, jittered)")
    retry_cap: float = bounded(30.0, 0.0, 3600.0, "longest wait between tries in seconds")
    fail_fast: int = bounded(5, 0, 10_000, "stop when the first this many items all fail (0: never)")
    cancel_grace: float = bounded(0.5, 0.0, 600.0, "seconds a stopped run waits for calls in flight")

    prefix_order: bool = (
        True  # items that share their source go out together (scores never depend on the order)
    )
    rpm: float | None = None  # requests per minute at most (None: no limit)
    tpm: float | None = None  # estimated tokens per minute at most (None: no limit)

    def __post_init__(self) -> None:
        check_bounds(self)
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"{name} must be above 0 (or unset for no limit), got {value}")
        if self.reducer not in REDUCERS:
            raise ConfigError(f"reducer must be one of {', '.join(REDUCERS)}, got {self.reducer!r}")


@dataclass
class RunSummary:
    """What one call of `run_scoring` (or one batch collect) did."""

    run_id: str
    status: str  # done | cancelled | failed | running (a batch still missing items)
    mode: str  # the run's mode: logprobs | sampling | auto
    total: int  # items asked for
    skipped: int = 0  # already judged before this call (resume)
    judged: int = 0  # judgments written by this call
    scored: int = 0  # ... with a score
    null_scores: int = (
        0  # ... without a score and without an error (no valid rating; the judgment's note says)
    )
    below_floor: int = 0  # ... of those, because too little probability was on the ratings
    failed: int = 0  # ... carrying an error
    cached: int = 0  # ... answered from the judge cache
    cache_rejected: int = 0  # cache entries that failed their hash check: ignored, the judge asked again
    fallbacks: int = 0  # ... where auto mode fell back to sampling
    judge_calls: int = 0  # requests sent to the judge, retries included
    input_tokens: int = 0  # spent by this call; cached answers cost nothing
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, those the judge's server read from its prompt cache
    seconds: float = 0.0  # scoring, without setup_seconds
    setup_seconds: float = 0.0  # making the judge (an SDK import, a model load) before its first request
    model_version: str | None = None
    error: str | None = None  # why a failed run stopped

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)
