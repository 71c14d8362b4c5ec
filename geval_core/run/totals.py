"""A run's totals as a fold over its judgments: kept as judgments are written, never re-read to be summed.

The fold is the one definition of the totals (`cost.run_totals` folds a list of rows through it): tokens
paid (cached answers cost nothing), the model versions reported, and the counts, over each item's latest
attempt. Writing a successor of an errored attempt takes that attempt out (`supersede`), so the fold
stays equal to the sum over the rows `Library.judgments` returns.

A finished run stores its tally (`to_dict`) with the number of judgment rows it covers; a session starts
from it when the library still holds exactly that many rows (judgments are append-only, so an equal
count is the same rows), else it folds the stored rows once, streamed (an older library, a killed
session that wrote without finishing).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..judgment import Judgment
from ..types import JudgeSettings
from .cost import price_for, upper_bound, usd_of

TALLY_KEY = "tally"  # the run field (in its extra JSON) a finished run keeps its tally under


@dataclass
class RunTally:
    """Running totals of one run's latest attempts, and how many stored rows (every attempt) they cover."""

    rows: int = 0  # judgment rows stored, every attempt: equal to the library's count while current
    judged: int = 0  # items with a judgment (their latest attempt)
    input_tokens: int = 0  # paid: not answered from the cache
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, those the judge's server read from its prompt cache
    versions: dict[str, int] = field(default_factory=dict)  # model version -> latest attempts reporting it
    fallbacks: int = 0
    errors: int = 0
    cached: int = 0
    scored: int = 0  # error-free with a score, as Library.scored_count counts

    def add(self, row: Mapping[str, Any] | Judgment, sign: int = 1) -> None:
        """Count one latest attempt in (sign 1) or out (sign -1); the row count is not touched."""
        get = row.get if isinstance(row, Mapping) else lambda key: getattr(row, key, None)
        error, score = get("error"), get("score")
        self.judged += sign
        if not get("cached"):
            self.input_tokens += sign * (get("input_tokens") or 0)
            self.output_tokens += sign * (get("output_tokens") or 0)
            self.cached_input_tokens += sign * (get("cached_input_tokens") or 0)
        version = get("model_version")
        if version:
            self.versions[version] = self.versions.get(version, 0) + sign
            if self.versions[version] <= 0:
                del self.versions[version]
        self.fallbacks += sign * bool(get("fallback"))
        self.errors += sign * (error is not None)
        self.cached += sign * bool(get("cached"))
        # A NaN score is stored as NULL: it is no score, in the fold as in the file.
        self.scored += sign * (error is None and score is not None and not _is_nan(score))

    def written(self, row: Mapping[str, Any] | Judgment, superseded: Mapping[str, Any] | None = None) -> None:
        """A new stored row: counted in, and the errored attempt it succeeds (if any) counted out."""
        self.rows += 1
        self.add(row)
        if superseded is not None:
            self.add(superseded, -1)

    def fields(
        self, settings: JudgeSettings, prices: dict[str, dict[str, float]], discount: float = 1.0
    ) -> dict[str, Any]:
        """The run's totals as `run_totals` states them (the columns and fields `finish_run` stores)."""
        price = price_for(settings, prices)
        usd = usd_of(price, self.input_tokens, self.output_tokens, self.cached_input_tokens)
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            # Cached tokens priced at the full input rate (no cached rate listed): the cost is at most this.
            "cost_upper_bound": upper_bound(price, self.cached_input_tokens),
            "cost_usd": None if usd is None else usd * discount,
            "model_version": ", ".join(sorted(self.versions)) or None,
            "fallbacks": self.fallbacks,
            "errors": self.errors,
            "cached": self.cached,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, stored with the run."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunTally:
        """The tally a run stored (unknown keys from a later version ignored)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**{**known, "versions": dict(known.get("versions") or {})})

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]]) -> RunTally:
        """The fold of latest attempts (e.g. `Library.judgments`), one row each."""
        tally = cls()
        for row in rows:
            tally.rows += 1
            tally.add(row)
        return tally


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def current_tally(store: Any, run_id: str) -> RunTally:
    """The run's tally now: the stored one when it covers every stored row, else folded from the rows."""
    rows = store.judgment_row_count(run_id)
    stored = store.get_run(run_id).extra.get(TALLY_KEY)
    if isinstance(stored, Mapping) and stored.get("rows") == rows:
        return RunTally.from_dict(stored)
    tally = RunTally.of(store.iter_latest_attempts(run_id))
    tally.rows = rows  # every attempt, the superseded errored ones included
    return tally
