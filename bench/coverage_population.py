"""A known population for coverage simulations: SummEval documents with a judge that carries signal.

The people are SummEval's experts (coherence: the mean of 3 experts per summary, 16 summaries of each
of 100 documents; per-expert ratings on 12 of them). The judge is a noisy transform of the people's
rating with strong document effects, so that items of one document are not independent:

    judge = human + shift[doc] + noise, noise ~ N(0, NOISE * spread[doc]), rounded to 2 decimals in 1-5

shift[doc] ~ N(0, SHIFT) moves every summary of a document together (a judge that likes some articles);
spread[doc] ~ lognormal(0, SPREAD) makes the judge better on some documents than others (per-document
correlations differ). The population is fixed by its seed; its figures are the truth a draw of
documents WITH replacement (an i.i.d. sample of the population's documents) must cover.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SUMMEVAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "summeval" / "summeval.jsonl"
NOISE, SHIFT, SPREAD = 1.1, 0.5, 0.5


@dataclass(frozen=True)
class Population:
    """Items of the population: judge score, human rating, document code, per-expert ratings (NaN if none)."""

    judge: np.ndarray
    human: np.ndarray
    doc: np.ndarray
    experts: np.ndarray  # items x 3

    @property
    def docs(self) -> int:
        """How many documents."""
        return int(self.doc.max()) + 1


def load(
    path: Path = SUMMEVAL, seed: int = 0, noise: float = NOISE, shift: float = SHIFT, spread: float = SPREAD
) -> Population:
    """The SummEval population with a simulated judge (see the module docstring)."""
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    codes = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    doc = np.array([codes[r["doc_id"]] for r in rows])
    human = np.array([r["scores"]["coherence"] for r in rows], dtype=float)
    experts = np.array(
        [(r.get("expert_annotations") or {}).get("coherence") or [np.nan] * 3 for r in rows], dtype=float
    )
    rng = np.random.default_rng(seed)
    n_docs = len(codes)
    sd = noise * np.exp(rng.normal(0, spread, n_docs))[doc]
    judge = human + rng.normal(0, shift, n_docs)[doc] + rng.normal(0, 1, len(rows)) * sd
    return Population(np.round(np.clip(judge, 1, 5), 2), human, doc, experts)


def draw(pop: Population, n_groups: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(item indices, group labels) of n_groups documents drawn with replacement; a repeat is a new group."""
    picks = rng.integers(0, pop.docs, size=n_groups)
    members = [np.flatnonzero(pop.doc == d) for d in picks]
    idx = np.concatenate(members)
    labels = np.repeat(np.arange(n_groups), [len(m) for m in members])
    return idx, labels
