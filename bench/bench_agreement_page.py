"""Seconds of the Agreement page's first render for a finished 20,000-item run (target: ≤ 2 s).

The same library as bench_score_page.py (20,000 synthetic items in 1,250 groups of 16, judged by the
scripted judge through the real runner). A fresh process, so every cache is cold: the first render
reads the run, computes the readings with their 1,000-draw bootstrap and draws the page. Then plain
reruns (what every widget click costs) and, for information, asking for every reading's interval.

Run: .venv/bin/python bench/bench_agreement_page.py [--reruns N] [--groups G] [--library FILE]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_score_page import measured, timed_run  # noqa: E402

TARGET_S = 2.0


def time_page(reruns: int, count: int) -> tuple[float, list[float], float]:
    """(first render seconds, plain rerun seconds, seconds to show every reading's interval)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    start = time.perf_counter()
    at.switch_page("app_pages/agreement.py").run()
    first = time.perf_counter() - start
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Items"] == str(count), shown
    plain = [timed_run(at) for _ in range(reruns)]
    at.toggle(key="ag_every_ci").set_value(True)
    every = timed_run(at)
    return first, plain, every


def main() -> None:
    """Build the library, time the page, print the figures."""
    first, plain, every = measured(__doc__, 5, time_page)
    print(f"rerun, nothing changed: median {statistics.median(plain):.3f} s, max {max(plain):.3f} s "
          f"({len(plain)} reruns)")
    print(f"intervals for every reading, on request: {every:.2f} s (once; cached after)")
    print(f"Agreement page first render: {first:.2f} s / {TARGET_S} s = ratio {first / TARGET_S:.2f} "
          f"(target ≤ 1: {'met' if first <= TARGET_S else 'NOT met'})")


if __name__ == "__main__":
    main()
