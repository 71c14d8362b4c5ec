"""A cascade on a known mixture: a cheap judge sure and right on easy items, unsure and noisy on hard ones (35 %),
a strong judge right everywhere. Calibrated on 40 documents, frozen at the threshold that routes the unsure items,
run on 40 new documents: prints the curve, then the measured routed share, agreement and spend against the
curve's prediction and its interval.

    python bench/bench_cascade.py
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "diagnostics"))

import test_cascade as mixture  # noqa: E402  (the test's judges and data, so bench and test measure one thing)

from geval_core.diagnostics.cascade import cascade_curve, freeze_cascade, score_cascade  # noqa: E402
from geval_core.stats import agreement  # noqa: E402


def main() -> None:
    gen = mixture.lib.__wrapped__(Path(tempfile.mkdtemp()))
    library, cheap, strong = next(gen)
    cal_cheap, cal_strong = mixture.both_runs(library, cheap, strong, "calibration")
    curve = cascade_curve(
        library, cal_cheap, cal_strong, "coherence", "entropy", thresholds=11, bootstrap=1000
    )
    print(f"calibration: {curve['items']} items, {curve['resampled']} resampled")
    for row in curve["curve"]:
        lo, hi = row["interval"]
        print(
            f"  threshold {row['threshold']:7.4f}: strong on {row['routed_share']:6.1%}, Spearman with people "
            f"{row['spearman']:.3f} [{lo:.3f}, {hi:.3f}], with the strong judge {row['with_strong']:.3f}"
        )
    chosen = next(r for r in curve["curve"] if r["routed_share"] < 0.5 and r["threshold"] >= 0)
    cascade, _ = freeze_cascade(library, "casc", cheap.label, strong.label, "entropy", chosen["threshold"])
    result = score_cascade(library, cascade, library.get_dataset("fresh")["id"], mixture.judge_for)
    people = {i.id: i.human["coherence"] for i in library.dataset_items("fresh")}
    measured = agreement(
        [r["score"] for r in result["rows"]], [people[r["id"]] for r in result["rows"]]
    ).spearman
    n, share = result["items"], chosen["routed_share"]
    band = 1.96 * math.sqrt(share * (1 - share) / n)
    print(f"\nfrozen at {chosen['threshold']:.4f}; on {n} new items:")
    print(f"  routed {result['routed_share']:.1%} (predicted {share:.1%} ± {band:.1%})")
    print(
        f"  Spearman with people {measured:.3f} (predicted {chosen['spearman']:.3f}, interval "
        f"[{chosen['interval'][0]:.3f}, {chosen['interval'][1]:.3f}]); cheap alone "
        f"{curve['curve'][-1]['spearman']:.3f}, strong alone {curve['curve'][0]['spearman']:.3f}"
    )
    spend = result["spend"]
    print(
        f"  strong judge calls {result['judge_calls']['strong']} of {n} (saved {spend['strong_calls_saved']}); "
        f"strong tokens saved {spend['strong_tokens_saved_share']:.1%} against the strong judge on every item"
    )
    library.close()


if __name__ == "__main__":
    main()
