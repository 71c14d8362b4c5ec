"""The drift test by simulation: how often 50 checks of an unchanged judge raise a false alarm (it must be at most
alpha), and how often and how soon a changed judge is found.

The population is SummEval's 1600 summaries with the experts' coherence as the people and a judge that carries
signal (tests/judge_population.py: Spearman ~0.80 with people). A watch freezes N anchors drawn from it with one
reference score each; each check re-scores K of them drawn at random, as `geval drift check --sample K` does. A
score is the judge's own score of the item (its item-level error is part of the judge) plus a repeat noise per
call: 0 for a judge that repeats itself to the digit (logprobs at temperature 0 on a steady server), 0.1 or 0.3
otherwise. Changed judges, from the first check on: every score shifted by 0.1, 0.2 or 0.4 points; a noisier
judge (repeat noise tripled); another judge of the same quality (each item's own error drawn again, so the mean
does not move), also with two reference runs frozen (each anchor's repeat noise is then known from the first
check on); and, on a watch already 25 checks old, a shift of 0.2. Beside the unchanged rows, the naive test
(the same bets on each new score against the reference score alone, reused by every check) shows what the
conformal p-values buy: its false alarms grow with the checks.

    python bench/bench_drift.py [--watches 500] [--checks 50]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from judge_population import load  # noqa: E402

from geval_core.stats.eprocess import ALPHA, Wealth, step  # noqa: E402

ANCHORS, SAMPLE = 200, 20


@dataclass(frozen=True)
class Case:
    """A judge to watch: its repeat noise, and how it changes (at which check)."""

    label: str
    noise: float
    shift: float = 0.0
    noisier: float = 1.0
    redraw: bool = False
    change_at: int = 0  # checks before the change (0: changed since the reference)
    changed: bool = True
    refs: int = 1  # reference runs frozen with the anchors (`geval drift freeze --run A --run B`)
    anchors: int = ANCHORS
    sample: int = SAMPLE  # anchors re-scored per check


CASES = [
    Case("unchanged, repeats itself", 0.0, changed=False),
    Case("unchanged", 0.1, changed=False),
    Case("unchanged, noisy", 0.3, changed=False),
    Case("shift +0.1", 0.1, shift=0.1),
    Case("shift +0.2", 0.1, shift=0.2),
    Case("shift +0.4", 0.1, shift=0.4),
    Case("shift +0.2, noisy", 0.3, shift=0.2),
    Case("shift +0.1, repeats itself", 0.0, shift=0.1),
    Case("noisier (x3)", 0.1, noisier=3.0),
    Case("noisier (x3), 2 reference runs", 0.1, noisier=3.0, refs=2),
    Case("same quality, errors redrawn", 0.1, redraw=True),
    Case("same quality, 2 reference runs", 0.1, redraw=True, refs=2),
    Case("shift +0.2 after 25 checks", 0.1, shift=0.2, change_at=25),
    Case("unchanged, 50 anchors, all each check", 0.1, changed=False, anchors=50, sample=50),
    Case("unchanged, noisy, 50 anchors, all", 0.3, changed=False, anchors=50, sample=50),
]
UNCHANGED = [case for case in CASES if not case.changed]


def watch(pop, case: Case, checks: int, rng: np.random.Generator, naive: bool = False) -> int | None:
    """One watch: the check (1-based) at which the alarm rose, or None."""
    idx = rng.choice(len(pop.human), case.anchors, replace=False)
    own = pop.score[idx]
    other = np.clip(pop.human[idx] + rng.permutation(pop.score - pop.human)[: case.anchors], 1, 5)

    def draw(i: int, changed: bool) -> float:
        base = other[i] if changed and case.redraw else own[i]
        noise = case.noise * (case.noisier if changed else 1.0)
        return float(
            np.clip(base + (case.shift if changed else 0.0) + (rng.normal(0, noise) if noise else 0), 1, 5)
        )

    history = [[draw(i, False) for _ in range(case.refs)] for i in range(case.anchors)]
    wealth = Wealth()
    for t in range(checks):
        changed = case.changed and t >= case.change_at
        ids = rng.choice(case.anchors, case.sample, replace=False)
        new = [draw(i, changed) for i in ids]
        seen = [(history[i][:1] if naive else history[i], x) for i, x in zip(ids, new, strict=True)]
        wealth, _ = step(wealth, seen, rng)
        for i, x in zip(ids, new, strict=True):
            history[i].append(x)
        if wealth.e_value >= 1 / ALPHA:
            return t + 1
    return None


def row(pop, case: Case, watches: int, checks: int, rng: np.random.Generator, naive: bool = False) -> str:
    """The case's line: share of watches with an alarm, its interval, the median check of the alarm."""
    found = [watch(pop, case, checks, rng, naive) for _ in range(watches)]
    hits = [f for f in found if f is not None]
    share = len(hits) / watches
    se = math.sqrt(max(share * (1 - share), 1e-12) / watches)
    when = f"{np.median(hits) - case.change_at:.0f}" if hits else "-"
    verdict = "" if case.changed else ("  <= alpha" if share <= ALPHA else "  ABOVE alpha")
    name = ("naive: " if naive else "") + case.label
    return (
        f"{name:44} {case.noise:5.2f} | {share:7.1%} [{max(0.0, share - 1.96 * se):5.1%}, "
        f"{min(1.0, share + 1.96 * se):5.1%}] {when:>7}{verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watches", type=int, default=500)
    parser.add_argument("--checks", type=int, default=50)
    args = parser.parse_args()
    pop = load()
    rng = np.random.default_rng(2026)
    print(
        f"{args.watches} watches per row, {args.checks} checks each; {ANCHORS} anchors, {SAMPLE} re-scored per "
        f"check unless the row says otherwise; alpha {ALPHA}"
    )
    print(f"{'judge':44} {'noise':>5} | {'alarms':>7} {'95% interval':>14} {'checks':>7}")
    for case in CASES:
        print(row(pop, case, args.watches, args.checks, rng))
    for case in UNCHANGED:
        print(row(pop, case, args.watches, args.checks, rng, naive=True))
    print(
        "alarms: share of watches whose e-value reached 1/alpha within the checks (for an unchanged judge, the "
        "false-alarm rate over every check); checks: median number of checks after the change until the alarm; "
        "noise: the judge's repeat noise (sd of a re-score); naive: the bets against the reference score alone"
    )


if __name__ == "__main__":
    main()
