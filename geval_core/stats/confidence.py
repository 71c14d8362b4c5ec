"""How sure the judge was about one item: the spread of its rating distribution.

In logprobs mode the distribution is the judge's probability on each allowed rating (renormalised
here); in sampling mode it is the share of the parsed replies at each value, so the same figures are
the spread of the replies. Entropy is in bits (0 = every bit of belief on one rating); the standard
deviation is over the rating values; the margin is the probability of the likeliest rating minus the
next one (1 = certain, 0 = a coin toss between two).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

CONFIDENCE_KEYS = ("entropy", "sd", "margin")


def _normalised(distribution: Mapping[Any, float] | None) -> dict[float, float]:
    pairs = {float(k): float(v or 0.0) for k, v in (distribution or {}).items()}
    total = sum(v for v in pairs.values() if v > 0)
    return {k: v / total for k, v in pairs.items() if v > 0} if total > 0 else {}


def confidence(distribution: Mapping[Any, float] | None) -> dict[str, float | None]:
    """{entropy (bits), sd (rating units), margin (top-two probability gap)}; Nones without a distribution."""
    p = _normalised(distribution)
    if not p:
        return dict.fromkeys(CONFIDENCE_KEYS)
    mean = sum(r * q for r, q in p.items())
    top = sorted(p.values(), reverse=True) + [0.0]
    return {
        "entropy": max(0.0, -sum(q * math.log2(q) for q in p.values())),
        "sd": math.sqrt(max(0.0, sum(q * (r - mean) ** 2 for r, q in p.items()))),
        "margin": top[0] - top[1],
    }


def share_at(distribution: Mapping[Any, float] | None, rating: float) -> float | None:
    """The share of a rating distribution (renormalised over its ratings) at one rating; None without one."""
    p = _normalised(distribution)
    return p.get(float(rating), 0.0) if p else None


def describe(distribution: Mapping[Any, float] | None, sampled: bool = False) -> str:
    """'Judge's spread: sd 0.42, entropy 1.10 bits, margin 0.35 between the two likeliest ratings.'"""
    c = confidence(distribution)
    if c["sd"] is None:
        return "No distribution, so no spread."
    what = "Spread of the replies" if sampled else "Judge's spread"
    return (
        f"{what}: sd {c['sd']:.2f}, entropy {c['entropy']:.2f} bits, margin {c['margin']:.2f} "
        "between the two likeliest ratings."
    )
