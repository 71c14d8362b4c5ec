"""Coverage of every 95% interval the workbench shows, the way a user's data breaks them (printed, not timed).

The population (bench/coverage_population.py) is SummEval's 100 documents x 16 summaries with the
experts' coherence as the people and a simulated judge with real signal (group Spearman ~0.61) and
strong document effects. Each repeat draws 10, 20 or 50 documents WITH replacement (an i.i.d. sample
of the population's documents, the sampling the bootstrap assumes), calls the workbench's own
functions and checks the interval covers the population's value. "before" is the interval the
workbench gave until issue 25 (percentile bootstrap; a file's --pooled reading resampled items; PPI
with z and no minimum, items treated as independent), computed from the same resamples; "after" is
today's. `--only panel` adds a panel's inter-judge alpha on weighted scores: the judge and a second one with
its own document shifts ("before" there: items resampled). Coverage is over the intervals shown; "withheld" counts the draws that got none. The binomial
standard error is sqrt(p(1-p)/repeats).

Run: nice .venv/bin/python bench/bench_coverage.py [--reps 400] [--resamples 400] [--groups 10 20 50]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coverage_population import SUMMEVAL, Population, draw, load  # noqa: E402

from geval_core.stats import agreement, bootstrap, raters  # noqa: E402
from geval_core.stats.raters import alpha_intervals, krippendorff_alpha  # noqa: E402
from geval_core.types import Scale  # noqa: E402

SCALE = Scale(1, 5)
SHOWN = ("spearman", "kendall", "pearson", "tie_rate", "kappa_quadratic")
ALPHAS = ("interval", "ordinal", "nominal")


class Tally:
    """Hits, shown and withheld intervals per (row, groups, before/after)."""

    def __init__(self) -> None:
        self.hits: dict[tuple, int] = defaultdict(int)
        self.shown: dict[tuple, int] = defaultdict(int)
        self.withheld: dict[tuple, int] = defaultdict(int)

    def add(self, key: tuple, ci: list[float | None] | None, truth: float) -> None:
        """Count one interval (None or [None, None]: withheld)."""
        if not ci or ci[0] is None:
            self.withheld[key] += 1
            return
        self.shown[key] += 1
        self.hits[key] += ci[0] - 1e-12 <= truth <= ci[1] + 1e-12

    def cell(self, key: tuple) -> str:
        """'94.5 ± 1.1 %' (and how many were withheld)."""
        n = self.shown[key]
        if not n:
            return f"withheld ({self.withheld[key]})" if self.withheld[key] else "-"
        p = self.hits[key] / n
        text = f"{100 * p:5.1f} ± {100 * np.sqrt(p * (1 - p) / n):.1f} %"
        return text + (f" ({self.withheld[key]} withheld)" if self.withheld[key] else "")


class Recorder:
    """Replaces bootstrap.interval while running: returns today's interval, keeps the percentile one."""

    def __init__(self) -> None:
        self.product = bootstrap.interval
        self.percentiles: list[list[float | None]] = []

    def __call__(self, values, estimate, units, bounded=True):
        arr = np.array([np.nan if v is None else v for v in values], dtype=float)
        finite = arr[np.isfinite(arr)]
        too_many = not len(finite) or len(arr) - len(finite) > bootstrap.UNDEFINED_LIMIT * len(arr)
        self.percentiles.append([None, None] if too_many else np.percentile(finite, [2.5, 97.5]).tolist())
        return self.product(values, estimate, units, bounded)

    def __enter__(self) -> Recorder:
        bootstrap.interval = raters.interval = self
        return self

    def __exit__(self, *exc) -> None:
        bootstrap.interval = raters.interval = self.product


def percentile_of(rec: Recorder, call, *args, **kwargs):
    """(the product's result, the percentile intervals in the order they were made) of one call."""
    rec.percentiles.clear()
    result = call(*args, **kwargs)
    return result, list(rec.percentiles)


def agreement_rows(pop: Population, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """Group-level and pooled readings: every figure, before and after, from the same resamples."""
    truth_g = agreement(pop.judge, pop.human, pop.doc.tolist(), SCALE)
    truth_d = agreement(pop.judge, pop.human, None, SCALE)
    rng = np.random.default_rng(1)
    order = list(bootstrap.CI_METRICS)
    with Recorder() as rec:
        for g in sizes:
            for rep in range(reps):
                idx, labels = draw(pop, g, rng)
                x, y, lab = pop.judge[idx], pop.human[idx], labels.tolist()
                for reading, kw, truth in (("group-level", {"groups": lab}, truth_g),
                                           ("pooled, groups resampled", {"clusters": lab}, truth_d)):
                    r, pct = percentile_of(rec, agreement, x, y, scale=SCALE, bootstrap=resamples, seed=rep, **kw)
                    for m in SHOWN:
                        tally.add((f"{reading} {m}", g, "after"), r.ci[m], getattr(truth, m))
                        tally.add((f"{reading} {m}", g, "before"), pct[order.index(m)], getattr(truth, m))
                # What a file's --pooled reading got before: items resampled (percentile).
                r, pct = percentile_of(rec, agreement, x, y, scale=SCALE, bootstrap=resamples, seed=rep)
                tally.add(("pooled spearman, items resampled", g, "before"), pct[0], truth_d.spearman)
            print(f"  agreement, {g} groups done", file=sys.stderr, flush=True)


def alpha_rows(pop: Population, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """Krippendorff's alpha of the experts: documents resampled (after) vs items, percentile (before)."""
    rated = np.isfinite(pop.experts).all(axis=1)
    sub = Population(pop.judge[rated], pop.human[rated], np.unique(pop.doc[rated], return_inverse=True)[1],
                     pop.experts[rated])
    truth = {m: krippendorff_alpha(sub.experts, m) for m in ALPHAS}
    rng = np.random.default_rng(4)
    with Recorder() as rec:
        for g in sizes:
            for rep in range(reps):
                idx, labels = draw(sub, g, rng)
                after = alpha_intervals(sub.experts[idx], resamples, rep, ALPHAS, clusters=labels.tolist())
                _, before = percentile_of(rec, alpha_intervals, sub.experts[idx], resamples, rep, ALPHAS)
                for k, m in enumerate(ALPHAS):
                    tally.add((f"alpha {m}", g, "after"), after[m], truth[m])
                    tally.add((f"alpha {m}", g, "before"), before[k], truth[m])


def panel_rows(pop: Population, tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """A panel's inter-judge alpha (interval) on weighted scores: the population's judge and a second one with its
    own document shifts and noise (load's seed 1), scores to 2 decimals, nearly all distinct. "after": documents
    resampled, as the panel's summary does; "before": items resampled, the documents ignored."""
    judges = np.column_stack([pop.judge, load(seed=1).judge])
    truth = krippendorff_alpha(judges, "interval")
    print(f"panel: inter-judge alpha (interval) of the population {truth:.3f}", file=sys.stderr)
    rng = np.random.default_rng(5)
    for g in sizes:
        for rep in range(reps):
            idx, labels = draw(pop, g, rng)
            after = alpha_intervals(judges[idx], resamples, rep, ("interval",), clusters=labels.tolist())
            before = alpha_intervals(judges[idx], resamples, rep, ("interval",))
            tally.add(("panel alpha interval", g, "after"), after["interval"], truth)
            tally.add(("panel alpha interval", g, "before"), before["interval"], truth)


def independent_rows(tally: Tally, sizes: list[int], reps: int, resamples: int) -> None:
    """Ungrouped data (items resampled): n independent items from a bivariate normal with rho 0.6."""
    rho = 0.6
    truth = {"pearson": rho, "spearman": 6 / np.pi * np.arcsin(rho / 2)}
    rng = np.random.default_rng(2)
    with Recorder() as rec:
        for n in sizes:
            for rep in range(reps):
                d = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
                r, pct = percentile_of(rec, agreement, d[:, 0], d[:, 1], None, Scale(-10, 10), resamples, rep)
                for m in truth:
                    key = f"independent items (no groups) {m}"
                    tally.add((key, n, "after"), r.ci[m], truth[m])
                    tally.add((key, n, "before"), pct[list(bootstrap.CI_METRICS).index(m)], truth[m])


def report(tally: Tally) -> None:
    """One table row per interval and number of groups (of rated items for the i.i.d. PPI rows)."""
    rows = sorted({k[:2] for k in list(tally.shown) + list(tally.withheld)})
    print("\n| interval | groups (PPI i.i.d.: rated) | before | after |\n|---|---|---|---|")
    for row, g in rows:
        print(f"| {row} | {g} | {tally.cell((row, g, 'before'))} | {tally.cell((row, g, 'after'))} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--groups", type=int, nargs="+", default=[10, 20, 50])
    parser.add_argument("--only", choices=["agreement", "alpha", "panel", "ppi", "independent"], nargs="*", default=None)
    args = parser.parse_args()
    if not SUMMEVAL.is_file():
        sys.exit(f"SummEval not found at {SUMMEVAL}")
    from coverage_ppi import ppi_rows

    start, pop, tally = time.perf_counter(), load(), Tally()
    truth = agreement(pop.judge, pop.human, pop.doc.tolist(), SCALE)
    print(f"population: {len(pop.human)} items, {pop.docs} documents; judge group Spearman {truth.spearman:.3f}, "
          f"pooled {agreement(pop.judge, pop.human, None, SCALE).spearman:.3f}")
    only = set(args.only or ["agreement", "alpha", "panel", "ppi", "independent"])
    if "independent" in only:
        independent_rows(tally, args.groups, args.reps, args.resamples)
    if "alpha" in only:
        alpha_rows(pop, tally, args.groups, args.reps, args.resamples)
    if "panel" in only:
        panel_rows(pop, tally, args.groups, args.reps, args.resamples)
    if "ppi" in only:
        ppi_rows(pop, tally, args.groups, max(args.reps, 1000))
    if "agreement" in only:
        agreement_rows(pop, tally, args.groups, args.reps, args.resamples)
    report(tally)
    print(f"\n({args.reps} repeats x {args.resamples} resamples per row, PPI {max(args.reps, 1000)} repeats; "
          f"{time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
