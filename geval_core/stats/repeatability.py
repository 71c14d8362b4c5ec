"""How stable a prompt's judgments are across K repeats of the same items.

Pure computation from K lists of judgments (one list per repeat, `Judgment`s or their dicts):

- the likeliest rating of an item in one repeat is its top rating in logprobs mode and, in sampling mode,
  the modal reply (ties: the first reply's rating when it is among them, else the lowest);
- flip rate: the share of pairs of repeats whose likeliest ratings differ (0 = always the same rating,
  1 = every repeat gives another one); an item "changes rating" when its flip rate is above 0;
- spread of the weighted score: sample standard deviation (n - 1) and range (max - min) over the repeats;
  an item "moves by more than half a point" when its range is above 0.5.

Repeats where an item has no rating (an error, no valid mass) are left out of that item's figures; an item
with fewer than two rated repeats is "unmeasured" and counted apart, never as stable.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..judgment import Judgment

HALF_POINT = 0.5


@dataclass(frozen=True)
class ItemStability:
    """One item across the repeats: its likeliest ratings and weighted scores, and how much they vary."""

    id: str
    ratings: list[float | None]  # likeliest rating per repeat (None: no rating in that repeat)
    scores: list[float | None]  # weighted score per repeat
    flip_rate: float | None  # share of pairs of rated repeats that disagree; None with < 2 ratings
    sd: float | None  # sample sd of the scores; None with < 2 scores
    range: float | None  # max - min of the scores; None with < 2 scores

    @property
    def changed(self) -> bool:
        """The likeliest rating is not the same in every rated repeat."""
        return bool(self.flip_rate)

    @property
    def moved(self) -> bool:
        """The weighted score moved by more than half a point between repeats."""
        return self.range is not None and self.range > HALF_POINT


@dataclass(frozen=True)
class StabilityReport:
    """Per-item stability over K repeats and its summary."""

    repeats: int
    per_item: list[ItemStability] = field(default_factory=list)

    @property
    def items(self) -> int:
        """Items seen in any repeat."""
        return len(self.per_item)

    @property
    def measured(self) -> list[ItemStability]:
        """Items with a rating in at least two repeats."""
        return [i for i in self.per_item if i.flip_rate is not None]

    @property
    def flip_rate(self) -> float | None:
        """Mean flip rate over the measured items."""
        rates = [i.flip_rate for i in self.measured if i.flip_rate is not None]  # measured: all of them
        return statistics.fmean(rates) if rates else None

    @property
    def items_changed(self) -> int:
        """Items whose likeliest rating changes between repeats."""
        return sum(i.changed for i in self.per_item)

    @property
    def items_moved_half_point(self) -> int:
        """Items whose weighted score moves by more than half a point."""
        return sum(i.moved for i in self.per_item)

    @property
    def mean_sd(self) -> float | None:
        """Mean per-item sd of the weighted score."""
        sds = [i.sd for i in self.per_item if i.sd is not None]
        return statistics.fmean(sds) if sds else None

    @property
    def unmeasured(self) -> int:
        """Items with a rating in fewer than two repeats."""
        return self.items - len(self.measured)

    def summary(self) -> str:
        """One sentence, e.g. "3 of 20 items change rating between repeats"."""
        n = len(self.measured)
        text = (
            f"{self.items_changed} of {n} items change rating between repeats; "
            f"{self.items_moved_half_point} of {n} move by more than half a point "
            f"({self.repeats} repeats"
        )
        if self.flip_rate is not None:
            text += f", mean flip rate {self.flip_rate:.2f}"
        if self.mean_sd is not None:
            text += f", mean score sd {self.mean_sd:.2f}"
        text += ")"
        if self.unmeasured:
            text += f"; {self.unmeasured} item(s) had a rating in fewer than 2 repeats and are not counted"
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: repeats, items, flip_rate (mean), items_changed, items_moved_half_point, per_item."""
        return {
            "repeats": self.repeats,
            "items": self.items,
            "flip_rate": self.flip_rate,
            "items_changed": self.items_changed,
            "items_moved_half_point": self.items_moved_half_point,
            "mean_sd": self.mean_sd,
            "unmeasured": self.unmeasured,
            "summary": self.summary(),
            "per_item": [
                {
                    **asdict(i),
                    "ratings": [_whole(r) for r in i.ratings],
                    "changed": i.changed,
                    "moved": i.moved,
                }
                for i in self.per_item
            ],
        }


def report_from_dict(data: dict[str, Any]) -> StabilityReport:
    """The report `StabilityReport.to_dict` wrote (a job's stored result read back); figures are recomputed."""
    fields = ("id", "ratings", "scores", "flip_rate", "sd", "range")
    return StabilityReport(
        int(data["repeats"]), [ItemStability(**{k: row[k] for k in fields}) for row in data["per_item"]]
    )


def _whole(value: float | None) -> float | int | None:
    """3.0 -> 3 (a rating reads as the scale point); 3.5 and None stay."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def likeliest_rating(judgment: Judgment) -> float | None:
    """Top rating (logprobs) or the modal reply's rating (sampling); None when there is none."""
    if judgment.error is not None or judgment.score is None:
        return None
    if judgment.mode == "logprobs":
        return judgment.top_rating
    shares = {r: p for r, p in judgment.distribution.items() if p > 0}
    if not shares:
        return judgment.first_rating
    best = max(shares.values())
    tied = sorted(r for r, p in shares.items() if abs(p - best) < 1e-9)
    first = judgment.first_rating
    if first is not None and float(first).is_integer() and int(first) in tied:
        return float(first)
    return float(tied[0])


def flip_rate(ratings: Sequence[float | None]) -> float | None:
    """Share of pairs of (non-missing) ratings that differ; None with fewer than two."""
    known = [r for r in ratings if r is not None]
    pairs = list(itertools.combinations(known, 2))
    return sum(a != b for a, b in pairs) / len(pairs) if pairs else None


def spread(scores: Sequence[float | None]) -> tuple[float | None, float | None]:
    """(sample sd, range) of the non-missing scores; (None, None) with fewer than two."""
    known = [s for s in scores if s is not None]
    if len(known) < 2:
        return None, None
    return statistics.stdev(known), max(known) - min(known)


def _judgment(value: Judgment | Mapping[str, Any]) -> Judgment:
    return value if isinstance(value, Judgment) else Judgment.from_dict(dict(value))


def stability(repeats: Sequence[Sequence[Judgment | Mapping[str, Any]]]) -> StabilityReport:
    """Per-item flip rate and score spread over K lists of judgments (items matched by id)."""
    by_repeat = [{j.item_id: j for j in map(_judgment, run)} for run in repeats]
    ids = list(dict.fromkeys(i for run in by_repeat for i in run))
    per_item = []
    for item_id in ids:
        judged = [run.get(item_id) for run in by_repeat]
        ratings = [None if j is None else likeliest_rating(j) for j in judged]
        scores = [None if j is None or j.error is not None else j.score for j in judged]
        sd, width = spread(scores)
        per_item.append(ItemStability(item_id, ratings, scores, flip_rate(ratings), sd, width))
    return StabilityReport(len(repeats), per_item)
