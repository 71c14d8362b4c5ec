"""Seconds of the Agreement page's first render for a finished 20,000-item run (target: ≤ 2 s).

The same library as bench_score_page.py (20,000 synthetic items in 1,250 groups of 16, judged by the
scripted judge through the real runner). Each first render is timed in a fresh process, so every cache
is cold: it reads the run, computes the readings with their 1,000-draw bootstrap and draws the page.
The figure is the median of PROCESSES such processes (one process's figure moves by ±30 % with this
machine's load). Then plain reruns (what every widget click costs) and, for information, asking for
every reading's interval and opening the diagnostics panels (in the first process only).

Run: .venv/bin/python bench/bench_agreement_page.py [--reruns N] [--groups G] [--library FILE]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_score_page import measured, timed_run  # noqa: E402

TARGET_S = 2.0
EVERY_TARGET_S = 3.0  # every reading's intervals on request (issue 29: 5.8-17.9 s before)
PROCESSES = 3
CHILD = "GEVAL_BENCH_AGREEMENT_CHILD"  # set in the processes that time one first render


def time_page(reruns: int, count: int) -> tuple[float, list[float], float | None, float | None]:
    """(first render seconds, plain rerun seconds, then in the "every" process the seconds to show every
    reading's interval and to open the three diagnostics panels, else None and None)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    start = time.perf_counter()
    at.switch_page("app_pages/agreement.py").run()
    first = time.perf_counter() - start
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Items"] == str(count), shown
    plain = [timed_run(at) for _ in range(reruns)]
    every = panels = None
    if os.environ.get(CHILD) == "every":
        at.toggle(key="ag_every_ci").set_value(True)
        every = timed_run(at)
        from workbench_ui.diagnostics import OPEN

        for name in ("calibration", "estimate", "bias"):  # computed when opened, one click each
            at.session_state[OPEN + name] = True
        panels = timed_run(at)
        assert any(m.label == "ECE" for m in at.metric), [m.label for m in at.metric]
    return first, plain, every, panels


def in_processes(reruns: int, count: int) -> list[tuple[float, list[float], float | None, float | None]]:
    """time_page in PROCESSES fresh processes on the library just prepared (GEVAL_DB)."""
    results = []
    for n in range(PROCESSES):
        env = {**os.environ, CHILD: "every" if n == 0 else "first"}
        args = [sys.executable, __file__, "--library", env["GEVAL_DB"], "--reruns", str(reruns)]
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not line:
            raise SystemExit(f"the page process failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        results.append(json.loads(line[0].removeprefix("RESULT ")))
    return results


def main() -> None:
    """Build the library, time the page in fresh processes, print the figures."""
    if os.environ.get(CHILD):
        print("RESULT " + json.dumps(measured(__doc__, 5, time_page)))
        return
    results = measured(__doc__, 5, in_processes)
    firsts = [first for first, *_ in results]
    _, plain, every, panels = results[0]
    first = statistics.median(firsts)
    print(
        f"rerun, nothing changed: median {statistics.median(plain):.3f} s, max {max(plain):.3f} s "
        f"({len(plain)} reruns)"
    )
    print(
        f"intervals for every reading, on request: {every:.2f} s (once; cached after) / {EVERY_TARGET_S} s = "
        f"ratio {every / EVERY_TARGET_S:.2f} (target ≤ 1: {'met' if every <= EVERY_TARGET_S else 'NOT met'})"
    )
    print(f"the three diagnostics panels, computed when opened: {panels:.2f} s (once; cached after)")
    print(f"first render in {PROCESSES} fresh processes: " + ", ".join(f"{f:.2f} s" for f in firsts))
    print(
        f"Agreement page first render (median): {first:.2f} s / {TARGET_S} s = ratio {first / TARGET_S:.2f} "
        f"(target ≤ 1: {'met' if first <= TARGET_S else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
