"""Calibration of a judge's rating probabilities against people: reliability bins, ECE, histograms.

What "how often people gave rating r" means for one item:
- with per-rater ratings (human ratings named NAME.0, NAME.1, ... beside the mean NAME, as an import
  of `expert_annotations.coherence.0` ... gives), the share of raters whose rating, rounded to the
  nearest scale point (halves up), is r;
- otherwise the mean rating rounded to the nearest scale point (halves up, clipped into the scale: the
  kappa rule), counted as one observation. A SummEval expert mean of 3.67 counts as a 4.
Every (item, rating) pair is one prediction, the judge's p(r), against that observed share
(class-wise, one-vs-rest). Bins are equal-width on the predicted probability; the expected calibration
error is the count-weighted mean of |mean predicted - mean observed| over the bins.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..types import Scale
from .kappa import to_points

DEFAULT_BINS = 10


def rater_ratings(human: dict[str, float], name: str) -> list[float]:
    """The per-rater ratings NAME.<digits> of an item, else its mean rating NAME alone ([] if neither)."""
    pattern = _rater_pattern(name)
    raters = [v for k, v in human.items() if pattern.fullmatch(k) and v is not None]
    if raters:
        return [float(v) for v in raters]
    return [float(human[name])] if human.get(name) is not None else []


@functools.lru_cache(maxsize=32)
def _rater_pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name) + r"\.\d+")


def observed_shares(ratings: Sequence[float], scale: Scale) -> np.ndarray:
    """Share of the ratings at each scale point after rounding halves up and clipping into the scale."""
    return _observed([ratings], [0], scale)[0]


def _observed(ratings: Sequence[Sequence[float]], keep: list[int], scale: Scale) -> np.ndarray:
    """observed_shares of every kept item as rows, in one pass over all their ratings."""
    k = scale.max - scale.min + 1
    sizes = np.array([len(ratings[i]) for i in keep], dtype=np.int64)
    flat = np.fromiter((v for i in keep for v in ratings[i]), dtype=float, count=int(sizes.sum()))
    counts = np.zeros((len(keep), k))
    np.add.at(counts, (np.repeat(np.arange(len(keep)), sizes), to_points(flat, scale)), 1.0)
    return counts / np.maximum(sizes, 1)[:, None]


def predicted_shares(distribution: dict[Any, float], scale: Scale) -> np.ndarray:
    """The judge's probability at each scale point, renormalised over the scale (zeros when it has none)."""
    return _predicted([distribution], scale)[0]


def _predicted(distributions: Sequence[dict[Any, float]], scale: Scale) -> np.ndarray:
    """predicted_shares of every distribution as rows, in one array (20,000 items: 1 array, not 20,000)."""
    keys = [(r, str(r)) for r in scale.points]  # stored distributions have int keys, imported ones may not
    p = np.array(
        [[d.get(r) or d.get(s) or 0.0 for r, s in keys] for d in distributions], dtype=float
    ).reshape(len(distributions), len(keys))
    total = p.sum(axis=1, keepdims=True)
    return np.divide(p, total, out=p.copy(), where=total > 0)


def reliability(
    predicted: np.ndarray, observed: np.ndarray, bins: int = DEFAULT_BINS
) -> tuple[float | None, list[dict[str, Any]]]:
    """(ECE, bins) of flat predicted probabilities against observed shares; bins with lo, hi, counts."""
    p, o = predicted.ravel(), observed.ravel()
    if not len(p):
        return None, []
    which = np.minimum((p * bins).astype(int), bins - 1)  # p == 1 goes in the last bin
    count = np.bincount(which, minlength=bins)
    pred = np.bincount(which, weights=p, minlength=bins)
    obs = np.bincount(which, weights=o, minlength=bins)
    out = [
        {
            "lo": b / bins,
            "hi": (b + 1) / bins,
            "predicted": pred[b] / count[b],
            "observed": obs[b] / count[b],
            "count": int(count[b]),
        }
        for b in range(bins)
        if count[b]
    ]
    ece = float(sum(r["count"] * abs(r["predicted"] - r["observed"]) for r in out) / len(p))
    return ece, out


NULL_DRAWS = 200  # simulated rating sets for the calibrated judge's ECE: its 95th percentile within ~0.01
# Past this many items fewer draws: the calibrated judge's ECE is then tiny beside any ECE worth a caution.
NULL_DRAW_ITEMS = 10_000


def calibrated_ece(
    predicted: np.ndarray, raters: Sequence[int], bins: int = DEFAULT_BINS, seed: int = 0
) -> dict[str, float]:
    """The ECE a perfectly calibrated judge shows on these items: people's ratings drawn from the judge's own
    probabilities (as many raters per item as the data has), NULL_DRAWS times; its mean and 95th percentile.

    ECE is biased upward on few items (every bin's observed share is noisy), so an ECE at or below the
    calibrated judge's 95th percentile cannot tell miscalibration from that noise."""
    rng = np.random.default_rng(seed)
    sizes = np.maximum(np.asarray(raters, dtype=np.int64), 1)
    values = []
    draws = max(50, NULL_DRAWS * min(1, NULL_DRAW_ITEMS / max(len(sizes), 1)))
    for _ in range(int(draws)):
        counts = rng.multinomial(sizes, predicted)
        values.append(reliability(predicted, counts / sizes[:, None], bins)[0] or 0.0)
    return {"mean": float(np.mean(values)), "q95": float(np.quantile(values, 0.95))}


def ece_context(result: dict[str, Any]) -> tuple[str, str | None]:
    """(what a perfectly calibrated judge's ECE is on these items, a caution when this ECE is no higher)."""
    null = result.get("ece_calibrated")
    if not null or result.get("ece") is None:
        return "", None
    context = (
        f"a perfectly calibrated judge on these items: {null['mean']:.3f} on average, "
        f"{null['q95']:.3f} at most 95% of the time"
    )
    if result["ece"] > null["q95"]:
        return context, None
    return (
        context,
        "no higher than a calibrated judge's ECE on this many items: it cannot tell miscalibration from noise",
    )


def score_bins(judge: np.ndarray, human: np.ndarray, scale: Scale) -> list[dict[str, Any]]:
    """Items binned by their weighted score's nearest scale point: mean judge vs mean human per bin."""
    points = to_points(judge, scale)
    out = []
    for k, r in enumerate(scale.points):
        mask = points == k
        if mask.any():
            out.append(
                {
                    "point": r,
                    "count": int(mask.sum()),
                    "judge_mean": float(judge[mask].mean()),
                    "human_mean": float(human[mask].mean()),
                }
            )
    return out


def calibration(
    distributions: Sequence[dict[Any, float]],
    ratings: Sequence[Sequence[float]],
    scale: Scale,
    scores: Sequence[float | None] | None = None,
    bins: int = DEFAULT_BINS,
) -> dict[str, Any]:
    """Reliability bins, ECE and expected vs observed histograms of the items with a distribution and a rating.

    ratings: per item the raters' ratings (or its mean alone); scores: the weighted scores, for the
    mean judge vs mean human per score bin.
    """
    candidates = [i for i, (d, r) in enumerate(zip(distributions, ratings, strict=True)) if d and r]
    shares = _predicted([distributions[i] for i in candidates], scale)
    has_mass = shares.sum(axis=1) > 0
    keep = [i for i, ok in zip(candidates, has_mass.tolist(), strict=True) if ok]
    pred = shares[has_mass]
    obs = _observed(ratings, keep, scale)
    ece, reliability_bins = reliability(pred, obs, bins)
    result = {
        "ece": ece,
        # What the same ECE is for a judge calibrated by construction, on these items (None without items).
        "ece_calibrated": calibrated_ece(pred, [len(ratings[i]) for i in keep], bins) if keep else None,
        "bins": reliability_bins,
        "items": len(keep),
        "scale": str(scale),
        "points": list(scale.points),
        "expected": pred.sum(axis=0).tolist(),
        "observed": obs.sum(axis=0).tolist(),
        "per_rater": any(len(ratings[i]) > 1 for i in keep),
    }
    if scores is not None:
        pairs = [(scores[i], sum(ratings[i]) / len(ratings[i])) for i in keep if scores[i] is not None]
        judge = np.array([s for s, _ in pairs], dtype=float)
        human = np.array([h for _, h in pairs], dtype=float)
        result["score_bins"] = score_bins(judge, human, scale)
    return result
