"""The two judge families every interval's coverage is measured on (bench/bench_coverage.py).

Both are SummEval populations (the people: the experts' mean coherence), each with a judge, a second judge (for
`compare`), a panel of two judges (the panel's inter-judge alpha), raters (the raters' alpha) and a near-perfect
judge (intervals near +-1). A draw of documents WITH replacement is an i.i.d. sample of the family's documents;
the family's own figures are the truth its intervals must cover.

- independent: coverage_population.load's judge (the people plus its own document shift and noise); the second
  judge and the panel's other member are the same recipe with other draws (seed 1), so judges share nothing but
  the people's rating; the raters are the 3 experts (on the 1,200 summaries that have them).
- shared: judges that share item-level signal, as judges reading the same text do. Judge k = 0.7 x expert k's
  rating + 0.3 x the crowd's mean (5 Mechanical Turk ratings, nearly unrelated to the experts') + its own
  document shift N(0, 0.5) + noise N(0, 0.5 x lognormal(0, 0.5) per document), 2 decimals, in 1-5. The judge
  is judge 0, the second judge judge 1, the panel judges 0 and 1, the raters the 3 judges rounded to points.
  1,200 summaries (100 documents x 12): the experts' ratings exist for those only.

The near-perfect judge of either family is the people's rating on each item but 2% of them (at random), where
it is the family's judge: a cascade that hands a few items to its cheap judge agrees with its strong one so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from coverage_population import SUMMEVAL, load

CROWD, SHIFT, NOISE, SPREAD = 0.3, 0.5, 0.5, 0.5  # the shared family's recipe (see the module docstring)
NEAR_SHARE = 0.02  # items where the near-perfect judge is the family's judge


@dataclass(frozen=True)
class Family:
    """A population of items: judge, second judge, near-perfect judge, people, document code, panel, raters."""

    name: str
    judge: np.ndarray
    second: np.ndarray
    near: np.ndarray
    human: np.ndarray
    doc: np.ndarray
    panel: np.ndarray  # items x 2 judges
    raters: np.ndarray  # rated items x raters (the raters' alpha)
    raters_doc: np.ndarray  # document code of each rated item

    @property
    def docs(self) -> int:
        """How many documents."""
        return int(self.doc.max()) + 1


def _near(judge: np.ndarray, human: np.ndarray, seed: int) -> np.ndarray:
    moved = np.random.default_rng(seed).random(len(human)) < NEAR_SHARE
    return np.where(moved, judge, human)


def _codes(docs: np.ndarray) -> np.ndarray:
    return np.unique(docs, return_inverse=True)[1]


def independent(path: Path = SUMMEVAL) -> Family:
    """Judges that share nothing but the people's rating (coverage_population.load)."""
    pop, other = load(path), load(path, seed=1)
    rated = np.isfinite(pop.experts).all(axis=1)
    return Family(
        "independent",
        pop.judge,
        other.judge,
        _near(pop.judge, pop.human, 7),
        pop.human,
        pop.doc,
        np.column_stack([pop.judge, other.judge]),
        pop.experts[rated],
        _codes(pop.doc[rated]),
    )


def shared(path: Path = SUMMEVAL, seed: int = 0) -> Family:
    """Judges that share item-level signal: one expert's rating plus the crowd's mean (see the docstring)."""
    rows = [r for r in map(json.loads, path.open(encoding="utf-8")) if r.get("expert_annotations")]
    doc = _codes(np.array([r["doc_id"] for r in rows]))
    experts = np.array([r["expert_annotations"]["coherence"] for r in rows], dtype=float)
    crowd = np.array([r["turker_annotations"]["coherence"] for r in rows], dtype=float).mean(axis=1)
    rng = np.random.default_rng(seed)
    n_docs, judges = int(doc.max()) + 1, []
    for k in range(experts.shape[1]):
        sd = NOISE * np.exp(rng.normal(0, SPREAD, n_docs))[doc]
        raw = (
            (1 - CROWD) * experts[:, k]
            + CROWD * crowd
            + rng.normal(0, SHIFT, n_docs)[doc]
            + rng.normal(0, 1, len(rows)) * sd
        )
        judges.append(np.round(np.clip(raw, 1, 5), 2))
    human = experts.mean(axis=1)
    table = np.column_stack(judges)
    return Family(
        "shared",
        table[:, 0],
        table[:, 1],
        _near(table[:, 0], human, 7),
        human,
        doc,
        table[:, :2],
        np.round(table),
        doc,
    )


def draw(docs: np.ndarray, n_groups: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(item indices, group labels) of n_groups documents drawn with replacement; a repeat is a new group."""
    members = [np.flatnonzero(docs == d) for d in rng.integers(0, int(docs.max()) + 1, size=n_groups)]
    return np.concatenate(members), np.repeat(np.arange(n_groups), [len(m) for m in members])
