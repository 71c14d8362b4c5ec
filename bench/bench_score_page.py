"""Seconds per rerun of the Score page showing a finished 20,000-item run (target: median ≤ 0.3 s).

The library gets 20,000 synthetic items in 1,250 groups of 16 (SummEval has only 1,600) and one
finished run of the coherence prompt, judged by the scripted judge through the real runner and
library. Then Streamlit's AppTest reruns the Score page with the new-run form on the same dataset
(its cost estimate covers every item): plain reruns (what every widget click costs) and reruns that
open another item. bench_agreement_page.py builds its library with build_library below.

Run: .venv/bin/python bench/bench_score_page.py [--reruns N] [--groups G] [--library FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the app tests' scripted judge plugin lives with the tests
SETTINGS = {"provider": "scripted", "model": "scripted-1"}
GROUPS, PER_GROUP = 1250, 16  # 20,000 items, SummEval-shaped groups
TARGET_S = 0.3
T = TypeVar("T")


def build_library(path: Path, groups: int = GROUPS) -> tuple[str, int]:
    """A library with a synthetic grouped dataset and one finished scripted run of it; (run id, items)."""
    from geval_core.providers.scripted import ScriptedJudge
    from geval_core.run import RunOptions
    from geval_core.run.runner import run_scoring
    from geval_core.types import Item, JudgeSettings
    from prompt_library import Library

    lib = Library(path)
    items = [
        Item(
            f"d{d:04d}-m{m:02d}",
            {"document": f"Article {d}. " * 40, "summary": f"Summary {m} of {d}."},
            {"coherence": 1 + (d * 7 + m * 3) % 5},
            f"d{d:04d}",
        )
        for d in range(groups)
        for m in range(PER_GROUP)
    ]
    dataset = lib.import_items("synthetic", items)
    settings = JudgeSettings(**SETTINGS)
    prompt = lib.get_prompt("coherence")
    run_id = lib.create_run(prompt.id, dataset["id"], settings)
    items = lib.dataset_items(dataset["id"])
    run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(concurrency=8, settings=settings))
    lib.close()
    return run_id, len(items)


def prepared(path: Path, groups: int) -> Path:
    """Build the library (unless the file exists: --library reuses one), point the app at it (GEVAL_DB,
    the scripted judge) and say how long it took."""
    os.environ["GEVAL_DB"] = str(path)
    from scripted_app_judge import plugin_env

    from geval_core.providers.registry import load_plugins

    os.environ.update(plugin_env())  # the scripted judge, as the app tests offer it
    load_plugins()  # in this process too: its registry loaded before the plugin was named
    if path.exists():
        print(f"library: reusing {path}")
        return path
    start = time.perf_counter()
    run_id, count = build_library(path, groups)
    print(
        f"library: {count:,} synthetic items in {groups:,} groups, run {run_id} "
        f"built in {time.perf_counter() - start:.1f} s"
    )
    return path


def timed_run(at) -> float:
    """Seconds of one AppTest rerun, which must raise nothing."""
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    assert not at.exception, [e.value for e in at.exception]
    return elapsed


def time_reruns(reruns: int, count: int) -> tuple[list[float], list[float], float]:
    """(plain rerun seconds, open-another-item rerun seconds, first render seconds)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    start = time.perf_counter()
    at.switch_page("app_pages/score.py").run()
    first = time.perf_counter() - start
    # The new-run form on the same items too: its cost estimate renders every prompt.
    big = [o for o in at.selectbox(key="score_dataset").options if o.startswith("synthetic@")]
    at.selectbox(key="score_dataset").set_value(big[0]).run()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Items"] == str(count) and shown["Judged"] == f"{count} / {count}", shown
    assert not at.exception, [e.value for e in at.exception]
    ids = at.selectbox(key="score_item").options
    plain, opening = [], []
    for n in range(reruns):
        plain.append(timed_run(at))
        at.selectbox(key="score_item").set_value(ids[(n * 997 + 13) % len(ids)])
        opening.append(timed_run(at))
    return plain, opening, first


def measured(doc: str, reruns: int, measure: Callable[[int, int], T]) -> T:
    """A page bench's common part: its arguments (see `arguments`), the library built (or reused) and the
    app pointed at it; then measure(reruns, items)."""
    args = arguments(doc, reruns)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        prepared(args.library or Path(tmp) / "bench.db", args.groups)
        return measure(args.reruns, args.groups * PER_GROUP)


def arguments(doc: str, reruns: int) -> argparse.Namespace:
    """--reruns, --groups and --library (a file to build once and reuse: the build takes about a minute)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=reruns)
    parser.add_argument("--groups", type=int, default=GROUPS, help=f"groups of {PER_GROUP} items")
    parser.add_argument("--library", type=Path, help="library file to reuse (built there when absent)")
    return parser.parse_args()


def main() -> None:
    """Build the library, time the reruns, print the figures."""
    plain, opening, first = measured(__doc__, 7, time_reruns)
    median = statistics.median(plain)
    print(f"first render of the Score page (cold caches): {first:.2f} s")
    print(f"rerun, open another item: median {statistics.median(opening):.3f} s, max {max(opening):.3f} s")
    print(f"rerun, nothing changed:   median {median:.3f} s, max {max(plain):.3f} s ({len(plain)} reruns)")
    print(
        f"Score page rerun: {median:.3f} s / {TARGET_S} s = ratio {median / TARGET_S:.2f} "
        f"(target ≤ 1: {'met' if median <= TARGET_S else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
