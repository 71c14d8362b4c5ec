"""Coverage of every 95% interval the workbench shows, measured by simulation (printed; not a timed test).

Two kinds of truth:
- held back: real SummEval ratings (1,200 summaries of 100 documents with crowd and expert scores);
  the crowd mean plays the judge, the expert mean the people. The figure on all 100 documents is the
  truth; each repeat draws 20 documents (all their summaries), computes the interval and checks it
  covers the truth. Drawing 20 of a finite 100 makes true spread a little smaller (factor ~0.9), so
  these coverages lean high, never low.
- synthetic: data drawn from a model whose true value is known.

Run: .venv/bin/python bench/bench_coverage.py [--reps 200] [--resamples 200]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from geval_core.stats import agreement
from geval_core.stats.ppi import ppi_difference, ppi_mean
from geval_core.types import Scale

SUMMEVAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "summeval" / "summeval.jsonl"
SCALE = Scale(1, 5)


def summeval() -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(crowd mean, expert mean, document index) of the rows with crowd coherence ratings."""
    if not SUMMEVAL.is_file():
        return None
    rows = [json.loads(line) for line in SUMMEVAL.open(encoding="utf-8")]
    rows = [r for r in rows if r.get("turker_annotations")]
    docs = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    crowd = np.array([np.mean(r["turker_annotations"]["coherence"]) for r in rows])
    expert = np.array([r["scores"]["coherence"] for r in rows])
    return crowd, expert, np.array([docs[r["doc_id"]] for r in rows])


def held_back(data, metric: str, reps: int, resamples: int, how: str) -> float:
    """Coverage of one reading's interval on 20-document draws against the 100-document value."""
    x, y, doc = data
    grouped = how == "group"
    truth = getattr(agreement(x, y, doc.tolist() if grouped else None, SCALE), metric)
    rng = np.random.default_rng(1)
    hits = 0
    for rep in range(reps):
        keep = np.isin(doc, rng.choice(doc.max() + 1, size=20, replace=False))
        groups = doc[keep].tolist()
        r = agreement(x[keep], y[keep], groups if grouped else None, SCALE, resamples, rep,
                      clusters=groups if how == "cluster" else None)
        lo, hi = r.ci[metric]
        hits += lo is not None and lo <= truth <= hi
    return hits / reps


def experts() -> tuple[np.ndarray, np.ndarray] | None:
    """(units x 3 expert coherence ratings, document index) of the SummEval rows with expert annotations."""
    if not SUMMEVAL.is_file():
        return None
    rows = [json.loads(line) for line in SUMMEVAL.open(encoding="utf-8")]
    rows = [r for r in rows if r.get("expert_annotations")]
    docs = {d: k for k, d in enumerate(dict.fromkeys(r["doc_id"] for r in rows))}
    values = np.array([r["expert_annotations"]["coherence"] for r in rows], dtype=float)
    return values, np.array([docs[r["doc_id"]] for r in rows])


def alpha_coverage(data, reps: int, resamples: int) -> float:
    """Interval alpha of the experts: the bootstrap over items on 20-document draws vs the 100-document value."""
    from geval_core.stats.raters import alpha_intervals, krippendorff_alpha

    values, doc = data
    truth = krippendorff_alpha(values, "interval")
    rng = np.random.default_rng(4)
    hits = 0
    for rep in range(reps):
        keep = np.isin(doc, rng.choice(doc.max() + 1, size=20, replace=False))
        lo, hi = alpha_intervals(values[keep], resamples, rep, ("interval",))["interval"]
        hits += lo is not None and lo <= truth <= hi
    return hits / reps


def wilson_coverage(reps: int) -> float:
    """The perturbation probe's Wilson interval for sensitivity: 20 damaged copies, true rate 0.7."""
    from geval_core.stats.bias import wilson

    rng = np.random.default_rng(5)
    draws = rng.binomial(20, 0.7, size=reps)
    return float(np.mean([wilson(int(k), 20)[0] <= 0.7 <= wilson(int(k), 20)[1] for k in draws]))


def independent_items(reps: int, resamples: int) -> float:
    """Dataset-level reading of independent items (items resampled): bivariate normal, rho 0.6, n 80."""
    rng = np.random.default_rng(2)
    rho = 0.6
    hits = 0
    for rep in range(reps):
        d = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=80)
        lo, hi = agreement(d[:, 0], d[:, 1], None, Scale(-10, 10), resamples, rep).ci["pearson"]
        hits += lo is not None and lo <= rho <= hi
    return hits / reps


def synthetic_ppi(rng, n_total: int, n_rated: int, bias: float):
    probs = np.array([0.1, 0.15, 0.3, 0.3, 0.15])
    human = rng.choice(np.arange(1, 6), size=n_total, p=probs).astype(float)
    judge = np.clip(0.6 * human + 1.0 + bias + rng.normal(0, 0.6, n_total), 1, 5)
    return judge, [h if i < n_rated else None for i, h in enumerate(human)], float(probs @ np.arange(1, 6))


def ppi_coverage(reps: int) -> dict[str, float]:
    """PPI classic, PPI++, their difference of two systems, and the human-only mean, n=40 of 400."""
    rng = np.random.default_rng(3)
    hits = {"PPI classic": 0, "PPI++": 0, "PPI++ difference": 0, "human-only mean": 0}
    for _ in range(reps):
        ja, ha, ta = synthetic_ppi(rng, 400, 40, 0.2)
        jb, hb, tb = synthetic_ppi(rng, 400, 40, 0.8)
        classic, plus, plus_b = ppi_mean(ja, ha, "classic"), ppi_mean(ja, ha), ppi_mean(jb, hb)
        hits["PPI classic"] += classic.ci[0] <= ta <= classic.ci[1]
        hits["PPI++"] += plus.ci[0] <= ta <= plus.ci[1]
        d = ppi_difference(plus, plus_b)["ci"]
        hits["PPI++ difference"] += d[0] <= ta - tb <= d[1]
        hits["human-only mean"] += plus.human_ci[0] <= ta <= plus.human_ci[1]
    return {k: v / reps for k, v in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    rows: list[tuple[str, float]] = []
    data = summeval()
    if data is None:
        print(f"SummEval not found at {SUMMEVAL}: held-back rows skipped", file=sys.stderr)
    else:
        for label, metric, how in (
                ("group-level Spearman (groups resampled), SummEval held back", "spearman", "group"),
                ("dataset-level Spearman, groups resampled (cluster), SummEval held back", "spearman", "cluster"),
                ("dataset-level Spearman, items resampled (before), SummEval held back", "spearman", "items"),
                ("group-level Kendall tau-b (groups resampled), SummEval held back", "kendall", "group"),
                ("dataset-level Kendall tau-b (cluster), SummEval held back", "kendall", "cluster"),
                ("dataset-level Pearson (cluster), SummEval held back", "pearson", "cluster"),
                ("dataset-level kappa quadratic (cluster), SummEval held back", "kappa_quadratic", "cluster")):
            rows.append((label, held_back(data, metric, args.reps, args.resamples, how)))
            print(f"{label:<76} {rows[-1][1]:6.1%}", flush=True)
    rater_data = experts()
    if rater_data is not None:
        rows.append(("Krippendorff's alpha (interval), experts, items resampled, SummEval held back",
                     alpha_coverage(rater_data, args.reps, args.resamples)))
        print(f"{rows[-1][0]:<76} {rows[-1][1]:6.1%}", flush=True)
    rows.append(("perturbation sensitivity, Wilson interval, 20 copies at 0.7, synthetic", wilson_coverage(10_000)))
    print(f"{rows[-1][0]:<76} {rows[-1][1]:6.1%}", flush=True)
    rows.append(("dataset-level Pearson, independent items, synthetic", independent_items(args.reps, args.resamples)))
    print(f"{rows[-1][0]:<76} {rows[-1][1]:6.1%}", flush=True)
    for label, value in ppi_coverage(max(args.reps, 2000)).items():
        print(f"{label + ', synthetic (n=40 rated of 400)':<76} {value:6.1%}")
    print(f"({args.reps} repeats x {args.resamples} resamples; PPI {max(args.reps, 2000)} repeats; "
          f"{time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
