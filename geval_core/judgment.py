"""One item's judgment: the runner builds it, the library stores it, exports write it, the CLI prints it.

Every list of judgment columns in the workbench derives from `Judgment`'s fields. Fields that only
one scoring mode can fill are named for what they hold and stay None in the other mode.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class ItemScore:
    """Everything the library stores about how one item was scored."""

    score: float | None
    raw_score: float | None  # logprobs: the unrenormalised sum
    top_rating: float | None  # logprobs: the allowed rating with the highest probability
    first_rating: float | None  # sampling: the rating of the first reply that parsed
    distribution: dict[int, float]  # every allowed rating
    valid_mass: float | None  # logprobs: probability on the allowed ratings
    parsed_share: float | None  # sampling: share of the replies that parsed
    replies: list[str]
    parsed: int
    unparsed: int
    ambiguous: bool
    mode: str  # the mode actually used: logprobs | sampling
    differs: bool  # the replies' ratings are not all the same

    def to_dict(self) -> dict[str, Any]:
        """A plain dict with the library's judgment keys."""
        # Fields by hand, containers copied: dataclasses.asdict deep-copies recursively, on every judgment.
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["distribution"], out["replies"] = dict(self.distribution), list(self.replies)
        return out


@dataclass(frozen=True)
class Judgment:
    """How one item of a run was judged (or why it could not be)."""

    item_id: str
    score: float | None = (
        None  # G-Eval's score: probability-weighted (logprobs) or reduced replies (sampling)
    )
    raw_score: float | None = None  # logprobs: sum of p(r)*r over allowed ratings, not renormalised
    top_rating: float | None = None  # logprobs: the allowed rating with the highest probability
    first_rating: float | None = None  # sampling: the rating of the first reply that parsed
    distribution: dict[int, float] = field(default_factory=dict)  # allowed rating -> probability / share
    valid_mass: float | None = None  # logprobs: total probability on the allowed ratings
    parsed_share: float | None = None  # sampling: share of the replies that parsed as a rating
    replies: list[str] = field(default_factory=list)
    parsed: int = 0  # replies (logprobs: choices) that gave a rating
    unparsed: int = 0
    ambiguous: bool = False  # logprobs: a longer rating could begin at the rating position
    differs: bool = False  # the replies' ratings are not all the same
    mode: str | None = None  # the mode actually used for this item: logprobs | sampling
    fallback: bool = False  # auto mode fell back to sampling for this item
    model_version: str | None = None  # as the judge's API reported it
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, those the judge's server read from its prompt cache
    latency_s: float = 0.0
    cached: bool = False  # answered from the library's judge cache
    error: str | None = None  # why the item has no judgment; None when the judge answered
    note: str | None = None  # why an answered item has no score (below the valid-mass floor, no rating)
    server: str | None = None  # who answered: scheme://host[:port]/path, or the provider's own API
    source: str | None = None  # where the reply came from: live | cache:RUN/ITEM | batch:SHA256

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """Every field name, in order: the one column list of stores, exports and the CLI."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_score(cls, item_id: str, scored: ItemScore, **about: Any) -> Judgment:
        """A judgment from a scored reply; `about` adds model_version, tokens, latency, cached, fallback."""
        return cls(item_id=item_id, **scored.to_dict(), **about)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgment:
        """Build from a dict with (some of) the field names; other keys are ignored."""
        known = {k: data[k] for k in cls.columns() if k in data}
        if known.get("distribution"):
            known["distribution"] = {int(k): float(v) for k, v in known["distribution"].items()}
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of every field."""
        return asdict(self)

    @property
    def single_rating(self) -> float | None:
        """The rating of one answer without G-Eval's aggregation: top rating, or the first parsed reply."""
        return single_rating(vars(self))


def single_rating(row: dict[str, Any]) -> float | None:
    """`Judgment.single_rating` of a judgment dict."""
    return row.get("top_rating") if row.get("mode") == "logprobs" else row.get("first_rating")
