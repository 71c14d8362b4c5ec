"""A panel's judgment of one item from its members' judgments: the mean of their weighted scores, Eq. 1 over
their pooled rating distribution (the average of the members' distributions), or the median score."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..types import Scale

RULES = ("mean", "pooled", "median")


@dataclass(frozen=True)
class PanelScore:
    """What a panel says about one item, and how far its members are apart."""

    score: float | None
    distribution: dict[int, float]  # pooled: the average distribution; else the members' average, for display
    members: int  # members that scored the item
    spread: float | None  # the largest minus the smallest member score


def panel_score(
    scores: Sequence[float | None],
    distributions: Sequence[dict[int, float]],
    scale: Scale,
    rule: str,
    valid_masses: Sequence[float | None] | None = None,
) -> PanelScore:
    """The panel's score of one item by `rule` from each member's score, rating distribution (renormalised,
    as judgments store it) and valid mass; members without a score are left out.

    Pooled averages the members' raw probabilities (distribution x valid mass; a sampling member counts with
    mass 1) before Eq. 1, so a member that put little probability on the ratings weighs less; with equal
    masses it equals the mean of the members' scores.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    masses = list(valid_masses) if valid_masses is not None else [None] * len(scores)
    kept = [
        (s, d, 1.0 if m is None else float(m))
        for s, d, m in zip(scores, distributions, masses, strict=True)
        if s is not None
    ]
    if not kept:
        return PanelScore(None, dict.fromkeys(scale.points, 0.0), 0, None)
    raw = {r: sum(float(d.get(r, 0.0)) * m for _, d, m in kept) / len(kept) for r in scale.points}
    mass = sum(raw.values())
    pooled = {r: p / mass for r, p in raw.items()} if mass > 0 else raw
    values = [s for s, _, _ in kept]
    score: float | None
    if rule == "mean":
        score = statistics.fmean(values)
    elif rule == "median":
        score = float(statistics.median(values))
    else:
        score = sum(r * p for r, p in pooled.items()) if mass > 0 else None
    return PanelScore(score, pooled, len(kept), max(values) - min(values))
