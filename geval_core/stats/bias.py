"""Bias probes' statistics: verbosity (score vs length), per-system offsets, sensitivity to damage."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .agreement import spearman
from .onepass import DECIMALS, average_ranks
from .paired import to_floats
from .ppi import Z95


def partial_spearman(
    x: Iterable[float | None], y: Iterable[float | None], z: Iterable[float | None]
) -> float | None:
    """Spearman of x and y with z held fixed: the partial correlation of their ranks."""
    a, b, c = to_floats(x), to_floats(y), to_floats(z)
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    if keep.sum() < 4:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant side: NaN, reported as None
        r = np.corrcoef(np.vstack([average_ranks(a[keep]), average_ranks(b[keep]), average_ranks(c[keep])]))
    if not np.all(np.isfinite(r)):
        return None
    rxy, rxz, ryz = r[0, 1], r[0, 2], r[1, 2]
    denominator = np.sqrt((1 - rxz**2) * (1 - ryz**2))
    return None if denominator == 0 else float((rxy - rxz * ryz) / denominator)


def length_bias(
    scores: Sequence[float | None], lengths: Sequence[int], human: Sequence[float | None] | None = None
) -> dict[str, Any]:
    """Spearman of judge score with output length in words, and of human rating with length, and the partial."""
    out: dict[str, Any] = {
        "length_spearman": spearman(scores, lengths),
        "items": int(np.isfinite(to_floats(scores)).sum()),
    }
    if human is not None and any(h is not None for h in human):
        out["human_length_spearman"] = spearman(human, lengths)
        out["length_partial_spearman"] = partial_spearman(scores, lengths, human)
    return out


def per_system(
    scores: Sequence[float | None],
    human: Sequence[float | None],
    systems: Sequence[str | None],
    judge_model: str | None = None,
    families: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Per system: mean judge score, mean human rating, their difference, and the family warning.

    families maps a system to its model family (e.g. M8 -> gpt); a system is flagged when its family
    appears in the judge's model name (G-Eval's paper saw GPT-4 favour GPT-3.5 summaries).
    """
    x, y = to_floats(scores), to_floats(human)
    rows = []
    for system in sorted({s for s in systems if s is not None}):
        pick = np.array([s == system for s in systems]) & np.isfinite(x)
        both = pick & np.isfinite(y)
        family = (families or {}).get(system)
        same = bool(judge_model and family and family.lower() in judge_model.lower())
        rows.append(
            {
                "system": system,
                "items": int(pick.sum()),
                "judge_mean": float(x[pick].mean()) if pick.any() else None,
                "human_mean": float(y[both].mean()) if both.any() else None,
                "judge_minus_human": float((x[both] - y[both]).mean()) if both.any() else None,
                "family": family,
                "same_family_as_judge": same,
            }
        )
    return rows


def wilson(successes: int, trials: int) -> list[float | None]:
    """Wilson's 95% score interval for a proportion (holds near 0 and 1, unlike the normal one)."""
    if trials == 0:
        return [None, None]
    p, z2 = successes / trials, Z95**2
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = Z95 * np.sqrt(p * (1 - p) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
    return [float(centre - half), float(centre + half)]


def sensitivity(original: Sequence[float | None], damaged: Sequence[float | None]) -> dict[str, Any]:
    """How often the damaged copy scores strictly lower than the original, with Wilson's 95% interval."""
    a, b = to_floats(original), to_floats(damaged)
    keep = np.isfinite(a) & np.isfinite(b)
    drop = a[keep] - b[keep]
    lower = int((np.round(drop, DECIMALS) > 0).sum())
    n = int(keep.sum())
    return {
        "pairs": n,
        "lower": lower,
        "same": int((np.round(drop, DECIMALS) == 0).sum()),
        "sensitivity": lower / n if n else None,
        "ci": wilson(lower, n),
        "mean_drop": float(drop.mean()) if n else None,
    }
