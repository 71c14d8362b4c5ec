"""A known population for the guarantee and budget simulations (tests, bench/bench_guarantee.py and
bench/bench_budget.py): SummEval's expert ratings with a judge that carries signal and says, imperfectly, how
sure it is.

The people are SummEval's experts (the mean of 3 expert ratings per summary, 16 summaries of each of 100
documents). The judge's latent rating is the people's plus a document shift and item noise whose size varies by
document and item; its reply is a rating distribution on the 1-5 points (a normal around the latent rating,
discretised), whose spread is the noise's size times an over-confidence factor and a per-item miscalibration.
So a wide distribution does mean a likelier miss, but not exactly: the judge's uncertainty is informative and
imperfect, as a real judge's is. Its score is Eq. 1 over that distribution (renormalised).

Every figure of the population (its agreement on the items a threshold keeps, its correlation, its mean) is the
truth a draw of items must be judged against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from paths import SHARED

from geval_core.diagnostics.cascade import uncertainty

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
POINTS = np.arange(1, 6)


@dataclass(frozen=True)
class Population:
    """Items: people's rating, judge score, judge distribution (items x 5), document code, uncertainties."""

    human: np.ndarray
    score: np.ndarray
    distribution: np.ndarray
    doc: np.ndarray
    signals: dict[str, np.ndarray]

    def agree(self, within: float) -> np.ndarray:
        """Per item: the judge's score within `within` of the people's rating."""
        return np.abs(self.score - self.human) <= within + 1e-9


def _distribution(centre: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """A normal around each centre, discretised on the 1-5 points (mass beyond the ends on the ends)."""
    from scipy.stats import norm

    edges = np.array([-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf])
    cdf = norm.cdf((edges[None, :] - centre[:, None]) / sd[:, None])
    return np.clip(np.diff(cdf, axis=1), 0, None)


def load(
    dimension: str = "coherence",
    seed: int = 0,
    noise: float = 0.5,
    shift: float = 0.1,
    spread: float = 0.8,
    overconfidence: float = 0.7,
    miscalibration: float = 0.3,
    path: Path = SUMMEVAL,
) -> Population:
    """The population (see the module docstring); its figures are fixed by the seed."""
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    codes = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    doc = np.array([codes[r["doc_id"]] for r in rows])
    human = np.array([r["scores"][dimension] for r in rows], dtype=float)
    rng = np.random.default_rng(seed)
    size = noise * np.exp(rng.normal(0, spread, len(codes)))[doc] * np.exp(rng.normal(0, 0.3, len(rows)))
    latent = human + rng.normal(0, shift, len(codes))[doc] + rng.normal(0, 1, len(rows)) * size
    said = size * overconfidence * np.exp(rng.normal(0, miscalibration, len(rows)))
    dist = _distribution(latent, np.maximum(said, 0.05))
    dist = dist / dist.sum(axis=1, keepdims=True)
    score = dist @ POINTS
    judgments = [
        {"score": s, "distribution": {str(p): float(q) for p, q in zip(POINTS, d, strict=True)}}
        for s, d in zip(score, dist, strict=True)
    ]
    signals = {
        name: np.array([uncertainty(j, name) for j in judgments])
        for name in ("entropy", "sd", "margin", "flip")
    }
    return Population(human, score, dist, doc, signals)
