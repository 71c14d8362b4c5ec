"""Coverage of `geval compare`'s paired intervals: two judges with real signal and strong document effects,
documents drawn with replacement from a known population, 10 / 20 / 50 documents; prints coverage of the 95%
interval of each figure's difference with its binomial standard error (withheld rows say so).

    python bench/bench_compare_coverage.py [REPEATS]     (default 200)
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from geval_core.diagnostics.compare import FIGURES, paired_difference  # noqa: E402

DOCS, PER_DOC, REPEATS, RESAMPLES = 500, 4, 200, 200


def population(seed: int = 0):
    rng = np.random.default_rng(seed)
    effect = np.repeat(rng.normal(0, 1.0, DOCS), PER_DOC)  # strong document effects
    human = np.clip(np.round(3 + effect + rng.normal(0, 0.7, DOCS * PER_DOC)), 1, 5)
    weak = human + rng.normal(0, 1.6, len(human)) + np.repeat(rng.normal(0, 0.8, DOCS), PER_DOC)
    strong = human + rng.normal(0, 0.8, len(human))
    return human, weak, strong, np.repeat(np.arange(DOCS), PER_DOC)


def figure(name, a, b):
    return {"spearman": sps.spearmanr, "kendall": sps.kendalltau, "pearson": sps.pearsonr}[name](a, b).statistic


def main(repeats: int = REPEATS) -> None:
    human, weak, strong, docs = population()
    truth = {f: figure(f, strong, human) - figure(f, weak, human) for f in FIGURES}
    print(f"population: {DOCS} documents x {PER_DOC}; true differences "
          + ", ".join(f"{f} {v:+.3f}" for f, v in truth.items()))
    print(f"signal: weak judge spearman {figure('spearman', weak, human):.2f}, strong "
          f"{figure('spearman', strong, human):.2f}")
    rng = np.random.default_rng(1)
    for groups in (10, 20, 50):
        began, hits, shown = time.perf_counter(), dict.fromkeys(FIGURES, 0), 0
        for _ in range(repeats):
            chosen = rng.integers(0, DOCS, groups)
            index = np.concatenate([np.flatnonzero(docs == d) for d in chosen])
            labels = np.repeat(np.arange(groups), PER_DOC)  # a document drawn twice counts as two groups
            result = paired_difference(list(weak[index]), list(strong[index]), list(human[index]), list(labels),
                                       RESAMPLES, seed=int(rng.integers(1 << 30)))
            if result["figures"]["spearman"]["interval"] is None:
                continue
            shown += 1
            for f in FIGURES:
                low, high = result["figures"][f]["interval"]
                hits[f] += low <= truth[f] <= high
        if not shown:
            print(f"{groups} documents: interval withheld in every repeat ({time.perf_counter() - began:.0f} s)")
            continue
        cells = ", ".join(f"{f} {hits[f] / shown:.1%} ± {math.sqrt(hits[f] / shown * (1 - hits[f] / shown) / shown):.1%}"
                          for f in FIGURES)
        print(f"{groups} documents, {shown} repeats: coverage {cells} ({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
