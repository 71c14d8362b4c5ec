"""The rating budget by simulation: does the planned number of ratings give an interval of the target width in
about the planned share of repeats?

The population is SummEval's 1600 summaries with the experts' coherence as the people and a judge that carries
signal (tests/judge_population.py; Spearman ~0.80 with people). Each repeat draws a pilot (items with
replacement: rated items for the agreement figure; judged items, a few of them rated, for PPI), plans the
ratings for the target width at the asked assurance (stats.budget, as `geval budget` does), then rates the
further items the plan asks for, drawn the same way, and computes the workbench's own interval on all of them.
A plan that is right reaches the target in about its assurance of the repeats (a plan at 50% is the size whose
expected width is the target).

    python bench/bench_budget.py [--reps 300] [--ppi-only]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from judge_population import load  # noqa: E402

from geval_core.stats import agreement  # noqa: E402
from geval_core.stats.budget import agreement_plan  # noqa: E402
from geval_core.stats.budget_ppi import ppi_plan  # noqa: E402
from geval_core.stats.ppi import ppi_mean  # noqa: E402
from geval_core.types import Scale  # noqa: E402

FIVE = Scale(1, 5)
BOOT = 500
AGREEMENT = [  # (figure, pilot items, target width, assurance)
    ("spearman", 40, 0.15, 0.8),
    ("spearman", 40, 0.15, 0.5),
    ("spearman", 80, 0.10, 0.8),
    ("kendall", 60, 0.10, 0.8),
    ("pearson", 60, 0.10, 0.8),
]
GROUPED = [("spearman", 12, 0.20, 0.8), ("spearman", 12, 0.20, 0.5)]  # group-level: pilot documents
PPI = [  # (judged items, pilot rated, target width, assurance)
    (1500, 40, 0.20, 0.8),
    (1500, 40, 0.20, 0.5),
    (1500, 60, 0.15, 0.8),
    (600, 40, 0.20, 0.8),
]


def agreement_row(
    pop, figure: str, n0: int, width: float, assurance: float, reps: int, rng
) -> dict[str, float]:
    """Share of repeats reaching the width at the planned items; the median plan and the median width reached."""
    hits, sizes, widths = 0, [], []
    for rep in range(reps):
        idx = rng.integers(0, len(pop.human), n0)
        plan = agreement_plan(
            pop.score[idx], pop.human[idx], width, figure, assurance, scale=FIVE, bootstrap=0
        )
        more = rng.integers(0, len(pop.human), plan["planned_units"] - n0)
        full = np.concatenate([idx, more])
        ci = agreement(pop.score[full], pop.human[full], scale=FIVE, bootstrap=BOOT, seed=rep).ci[figure]
        widths.append(ci[1] - ci[0])
        hits += widths[-1] <= width
        sizes.append(plan["planned_units"])
    return {"share": hits / reps, "planned": float(np.median(sizes)), "width": float(np.median(widths))}


def documents(pop, count: int, rng) -> tuple[np.ndarray, list[int]]:
    """The items of `count` documents drawn with replacement, and their group labels (a repeat a new group)."""
    members = [np.flatnonzero(pop.doc == d) for d in rng.integers(0, pop.doc.max() + 1, count)]
    return np.concatenate(members), np.repeat(np.arange(count), [len(m) for m in members]).tolist()


def grouped_row(
    pop, figure: str, g0: int, width: float, assurance: float, reps: int, rng
) -> dict[str, float]:
    """As agreement_row for the group-level reading: whole documents are the units planned and drawn."""
    hits, sizes, widths = 0, [], []
    for rep in range(reps):
        idx, labels = documents(pop, g0, rng)
        plan = agreement_plan(
            pop.score[idx], pop.human[idx], width, figure, assurance, groups=labels, scale=FIVE, bootstrap=0
        )
        more, more_labels = (
            documents(pop, plan["planned_units"] - g0, rng)
            if plan["planned_units"] > g0
            else (np.zeros(0, dtype=int), [])
        )
        full = np.concatenate([idx, more])
        groups = labels + [g0 + k for k in more_labels]
        ci = agreement(pop.score[full], pop.human[full], groups, FIVE, BOOT, rep).ci[figure]
        widths.append(ci[1] - ci[0])
        hits += widths[-1] <= width
        sizes.append(plan["planned_units"])
    return {"share": hits / reps, "planned": float(np.median(sizes)), "width": float(np.median(widths))}


def ppi_row(pop, judged: int, n0: int, width: float, assurance: float, reps: int, rng) -> dict[str, float]:
    """Share of repeats whose PPI++ interval reaches the width once the planned items are rated."""
    hits, sizes, widths, unreached = 0, [], [], 0
    for _ in range(reps):
        idx = rng.integers(0, len(pop.human), judged)
        order = rng.permutation(judged)  # items are rated in this order: the pilot first
        human = np.full(judged, np.nan)
        human[order[:n0]] = pop.human[idx[order[:n0]]]
        plan = ppi_plan(pop.score[idx], human, width, "ppi++", assurance)
        if plan["planned_rated"] is None:
            unreached += 1
            continue
        human[order[: plan["planned_rated"]]] = pop.human[idx[order[: plan["planned_rated"]]]]
        ci = ppi_mean(pop.score[idx], human, "ppi++").ci
        widths.append(ci[1] - ci[0])
        hits += widths[-1] <= width
        sizes.append(plan["planned_rated"])
    done = reps - unreached
    return {
        "share": hits / done if done else math.nan,
        "planned": float(np.median(sizes)) if sizes else math.nan,
        "width": float(np.median(widths)) if widths else math.nan,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--ppi-only", action="store_true", help="Only the PPI rows.")
    args = parser.parse_args()
    reps, agreement_rows = args.reps, not args.ppi_only
    pop, rng = load(), np.random.default_rng(43)
    print(
        f"{reps} repeats per row; intervals with {BOOT} resamples; population {len(pop.human)} SummEval summaries"
    )
    print(
        f"{'what':42} {'pilot':>5} {'width':>5} {'assur.':>6} | {'planned':>7} {'reached':>7} {'median width':>12}"
    )
    for figure, n0, width, assurance in AGREEMENT if agreement_rows else []:
        r = agreement_row(pop, figure, n0, width, assurance, reps, rng)
        print(
            f"{figure + ', items (dataset-level)':42} {n0:5d} {width:5.2f} {assurance:6.0%} | {r['planned']:7.0f} "
            f"{r['share']:7.1%} {r['width']:12.3f}"
        )
    for figure, g0, width, assurance in GROUPED if agreement_rows else []:
        r = grouped_row(pop, figure, g0, width, assurance, reps, rng)
        print(
            f"{figure + ', documents (group-level)':42} {g0:5d} {width:5.2f} {assurance:6.0%} | "
            f"{r['planned']:7.0f} {r['share']:7.1%} {r['width']:12.3f}"
        )
    for judged, n0, width, assurance in PPI:
        r = ppi_row(pop, judged, n0, width, assurance, reps, rng)
        print(
            f"{f'PPI++ mean, {judged} judged items, rated':42} {n0:5d} {width:5.2f} {assurance:6.0%} | "
            f"{r['planned']:7.0f} {r['share']:7.1%} {r['width']:12.3f}"
        )
    print(
        "planned: median planned size (items, documents, or rated items); reached: share of repeats whose interval "
        "was at most the target width at the planned size (should be about the assurance)"
    )


if __name__ == "__main__":
    main()
