"""Coverage of every 95% interval the workbench shows, on two judge families (printed, not timed).

The families (bench/coverage_families.py) are SummEval populations with the experts' coherence as the people:
"independent", a judge that is the people plus its own document shift and noise (other judges share nothing
else), and "shared", judges that share item-level signal (one expert's rating plus the crowd's mean plus their
own document shift and noise), as judges reading the same text do. Each repeat draws n documents WITH
replacement (an i.i.d. sample of the family's documents, the sampling the bootstrap assumes), calls the
workbench's own functions and checks the interval covers the family's value. One table: a row per interval, a
column per (family, documents). A cell is the share of shown intervals that covered (%); "f" when the
workbench showed every one with a caution (fNN%: that share of them), "wNN%" the share withheld, "withheld" when
none was shown. The binomial standard error of a cell is sqrt(p(1-p)/repeats); the largest is printed below.

Run: nice .venv/bin/python bench/bench_coverage.py [--reps 400] [--resamples 400] [--groups 5 10 20 50]
     [--only agreement items near alpha panel compare ppi] [--family independent shared]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from coverage_families import SUMMEVAL, independent, shared  # noqa: E402
from coverage_rows import (  # noqa: E402
    Tally,
    agreement_rows,
    alpha_rows,
    compare_rows,
    item_rows,
    near_rows,
    panel_rows,
    ppi_rows,
)

from geval_core.stats import agreement  # noqa: E402

ROWS = {
    "agreement": agreement_rows,
    "items": item_rows,
    "near": near_rows,
    "alpha": alpha_rows,
    "panel": panel_rows,
    "compare": compare_rows,
}
FAMILIES = {"independent": independent, "shared": shared}
PPI_REPS = 4000  # PPI is cheap: more repeats make its cells' standard error small


def report(tally: Tally, families: list[str], sizes: list[int]) -> None:
    """One row per interval, one column per (family, documents)."""
    columns = [(f, g) for f in families for g in sizes]
    print("\n| interval | " + " | ".join(f"{f} {g}" for f, g in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for row in sorted({k[0] for k in tally.counted()}):
        print(f"| {row} | " + " | ".join(tally.cell((row, g, f)) for f, g in columns) + " |")


def describe(fam) -> str:
    """The family's own figures (what its intervals must cover)."""
    g = agreement(fam.judge, fam.human, fam.doc.tolist())
    p = agreement(fam.judge, fam.human)
    near = agreement(fam.near, fam.human, fam.doc.tolist())
    return (
        f"{fam.name}: {len(fam.human)} items, {fam.docs} documents; judge group Spearman {g.spearman:.3f}, "
        f"pooled {p.spearman:.3f}, group tie rate {g.tie_rate:.3f}; near-perfect judge group Spearman "
        f"{near.spearman:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--groups", type=int, nargs="+", default=[5, 10, 20, 50])
    parser.add_argument("--only", choices=[*ROWS, "ppi"], nargs="*", default=None)
    parser.add_argument("--family", choices=list(FAMILIES), nargs="*", default=None)
    args = parser.parse_args()
    if not SUMMEVAL.is_file():
        sys.exit(f"SummEval not found at {SUMMEVAL}")
    start, tally = time.perf_counter(), Tally()
    only, families = args.only or [*ROWS, "ppi"], args.family or list(FAMILIES)
    for name in families:
        fam = FAMILIES[name]()
        print(describe(fam))
        for row in only:
            if row == "ppi":
                ppi_rows(fam, tally, args.groups, max(args.reps, PPI_REPS))
            else:
                ROWS[row](fam, tally, args.groups, args.reps, args.resamples)
    report(tally, families, args.groups)
    print(
        f"\n({args.reps} repeats x {args.resamples} resamples per cell, PPI {max(args.reps, PPI_REPS)} repeats; largest "
        f"standard error {tally.worst_se():.1f} points; {time.perf_counter() - start:.0f} s)"
    )


if __name__ == "__main__":
    main()
