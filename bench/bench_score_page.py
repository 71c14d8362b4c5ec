"""Seconds per rerun of the Score page showing a finished 1,600-item run (target: under 2 s).

The library gets SummEval's 1,600 summaries (../shared/data/summeval when present, else 1,600
synthetic items in 100 groups of 16) and one finished run of the coherence prompt, judged by the
scripted judge through the real runner and library. Then Streamlit's AppTest reruns the Score
page: plain reruns (what every widget click costs) and reruns that open another item.

Run: .venv/bin/python bench/bench_score_page.py [--reruns N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from geval_core.run import RunOptions

ROOT = Path(__file__).resolve().parent.parent
SUMMEVAL = ROOT.parent / "shared" / "data" / "summeval" / "summeval.jsonl"
SETTINGS = {"provider": "scripted", "model": "scripted-1"}


def build_library(path: Path) -> tuple[str, int]:
    """A library with a 1,600-item dataset and one finished run of it; returns (run id, items)."""
    from geval_core.providers.scripted import ScriptedJudge
    from geval_core.run.runner import run_scoring
    from geval_core.types import Item, JudgeSettings
    from prompt_library import DatasetMapping, Library

    lib = Library(path)
    if SUMMEVAL.exists():
        mapping = DatasetMapping(id="id", inputs={"document": "source", "summary": "output"},
                                 human={"coherence": "scores.coherence"}, group="doc_id")
        dataset = lib.import_dataset(SUMMEVAL, "summeval", mapping)
    else:
        items = [Item(f"d{d:03d}-m{m:02d}", {"document": f"Article {d}. " * 40, "summary": f"Summary {m} of {d}."},
                      {"coherence": 1 + (d * 7 + m * 3) % 5}, f"d{d:03d}") for d in range(100) for m in range(16)]
        dataset = lib.import_items("synthetic", items)
    settings = JudgeSettings(**SETTINGS)
    prompt = lib.get_prompt("coherence")
    run_id = lib.create_run(prompt.id, dataset["id"], settings)
    items = lib.dataset_items(dataset["id"])
    run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(concurrency=8, settings=settings))
    return run_id, len(items)


def time_reruns(reruns: int) -> tuple[list[float], list[float], float]:
    """(plain rerun seconds, open-another-item rerun seconds, first render seconds)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    start = time.perf_counter()
    at.switch_page("app_pages/score.py").run()
    first = time.perf_counter() - start
    # The new-run form on the same 1,600 items too: its cost estimate renders every prompt.
    big = [o for o in at.selectbox(key="score_dataset").options if not o.startswith("sample@")]
    at.selectbox(key="score_dataset").set_value(big[0]).run()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Items"] == "1600" and shown["Judged"] == "1600 / 1600", shown
    assert not at.exception, [e.value for e in at.exception]
    assert at.metric, "the Score page drew no run"
    ids = at.selectbox(key="score_item").options
    plain, opening = [], []
    for n in range(reruns):
        start = time.perf_counter()
        at.run()
        plain.append(time.perf_counter() - start)
        at.selectbox(key="score_item").set_value(ids[(n * 97 + 13) % len(ids)])
        start = time.perf_counter()
        at.run()
        opening.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]
    return plain, opening, first


def main() -> None:
    """Build the library, time the reruns, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=10)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        os.environ["GEVAL_DB"] = str(path)
        os.environ["GEVAL_TEST_JUDGE"] = "scripted"
        start = time.perf_counter()
        run_id, count = build_library(path)
        print(f"library: {count} items ({'SummEval' if SUMMEVAL.exists() else 'synthetic'}), run {run_id} "
              f"built in {time.perf_counter() - start:.1f} s")
        plain, opening, first = time_reruns(args.reruns)
    print(f"first render of the Score page (cold caches): {first:.2f} s")
    print(f"rerun, nothing changed:   median {statistics.median(plain):.3f} s, max {max(plain):.3f} s "
          f"({len(plain)} reruns)")
    print(f"rerun, open another item: median {statistics.median(opening):.3f} s, max {max(opening):.3f} s")
    worst = max(plain + opening)
    print(f"seconds per rerun (worst): {worst:.3f} s; target < 2 s: {'met' if worst < 2 else 'NOT met'}")


if __name__ == "__main__":
    main()
