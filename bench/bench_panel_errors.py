"""A panel's effective number of independent judges by simulation: the coverage of its 95% interval.

The people are SummEval's experts (coherence, the mean of 3 per summary; 16 summaries of each of 100 documents).
K members each err by a shared part (an item part and a document part, the same for every member) and a part of
their own: judge_k = human + shared + own_k. The population's K_eff = K / (1 + (K - 1) rho) is the truth; each
repeat draws documents with replacement and asks stats.panel_errors.effective_judges (as `geval panel score
--human` does) for its interval, which should hold the truth in about 95% of repeats.

    python bench/bench_panel_errors.py [--reps 500]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from paths import SHARED  # noqa: E402

from geval_core.stats.panel_errors import effective_judges  # noqa: E402

CASES = [  # (members, shared part's SD, own part's SD, documents drawn)
    (3, 0.6, 0.6, 20),
    (5, 0.6, 0.6, 20),
    (9, 0.6, 0.6, 20),
    (9, 0.6, 0.6, 40),
    (5, 0.3, 0.8, 20),
    (5, 1.0, 0.4, 20),
    (9, 0.8, 0.4, 10),
]


def population(k: int, shared: float, own: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(members' scores, people's ratings, document codes) of the population."""
    path = SHARED / "data" / "summeval" / "summeval.jsonl"
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    codes = {d: j for j, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    doc = np.array([codes[r["doc_id"]] for r in rows])
    human = np.array([r["scores"]["coherence"] for r in rows], dtype=float)
    rng = np.random.default_rng(seed)
    common = rng.normal(0, shared, len(human)) + rng.normal(0, shared / 2, doc.max() + 1)[doc]
    return human[:, None] + common[:, None] + rng.normal(0, own, (len(human), k)), human, doc


def coverage(k: int, shared: float, own: float, docs: int, reps: int) -> dict[str, float]:
    """The truth, and the share of repeats whose interval holds it, with the median interval."""
    judges, human, doc = population(k, shared, own)
    truth = effective_judges({f"m{j}": judges[:, j] for j in range(k)}, human, resamples=0)[
        "effective_judges"
    ]
    members = [np.flatnonzero(doc == d) for d in range(doc.max() + 1)]
    rng = np.random.default_rng(1)
    hits, lows, highs = 0, [], []
    for rep in range(reps):
        picks = rng.integers(0, len(members), docs)
        idx = np.concatenate([members[d] for d in picks])
        groups = np.repeat(np.arange(docs), [len(members[d]) for d in picks]).tolist()
        out = effective_judges({f"m{j}": judges[idx, j] for j in range(k)}, human[idx], groups, 400, rep)
        low, high = out["effective_judges_interval"]
        high = np.inf if high is None else high
        hits += low <= truth <= high
        lows.append(low)
        highs.append(high)
    return {
        "truth": truth,
        "coverage": hits / reps,
        "low": float(np.median(lows)),
        "high": float(np.median(highs)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=500)
    reps = parser.parse_args().reps
    print(f"{reps} repeats per row; 400 resamples of the drawn documents per interval")
    print(
        f"{'K':>2} {'shared':>6} {'own':>5} {'docs':>4} | {'K_eff':>6} {'covered':>7} {'median interval':>17}"
    )
    for k, shared, own, docs in CASES:
        r = coverage(k, shared, own, docs, reps)
        print(
            f"{k:2d} {shared:6.1f} {own:5.1f} {docs:4d} | {r['truth']:6.2f} {r['coverage']:7.1%} "
            f"  [{r['low']:5.2f}, {r['high']:5.2f}]"
        )
    print(
        "K_eff: the population's K / (1 + (K - 1) rho), rho the mean correlation of the members' errors against "
        "people; covered: share of repeats whose 95% interval holds it"
    )


if __name__ == "__main__":
    main()
