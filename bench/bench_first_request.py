"""Seconds from the Score page's Start to the judge's first request, for a 20,000-item run (target ≤ 1 s).

What the page does on Start, in the same order: plan the run on the chosen 20,000 item ids (the judge and its
server, the seal, the pre-run checks in SQL), record it, start its job; the job's worker process then imports the
workbench, opens the library, plans the stored run again and streams its items. The judge is an OpenAI-compatible
server on loopback (named by OPENAI_BASE_URL, as a user's environment would) that notes when its first request
arrives. Beside it, the item filter the worker used before (`item.id in set(wanted)` inside a comprehension: the
set rebuilt per item) timed on the same ids, to show what the stream replaced.

Run: .venv/bin/python bench/bench_first_request.py [--items N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the loopback judge server lives with the tests
sys.path.insert(0, str(ROOT))
TARGET_S = 1.0


def build(path: Path, count: int):
    """A library with `count` items and a prompt pinned to an OpenAI-compatible judge; (prompt, dataset)."""
    from geval_core.types import Dimension, Item, JudgeSettings, Scale
    from prompt_library import Library

    lib = Library(path, seed_examples=False)
    dimension = Dimension(
        name="Coherence",
        definition="The collective quality of all sentences.",
        scale=Scale(1, 5),
        anchors={p: f"Point {p}." for p in range(1, 6)},
        inputs=("document", "summary"),
        steps=("Read the document.", "Read the summary.", "Rate it."),
        judge=JudgeSettings(provider="openai", model="bench-model"),
    )
    prompt = lib.freeze(dimension, name="bench").prompt
    items = [
        Item(
            f"d{k // 16:05d}-{k % 16:02d}",
            {"document": f"Article {k // 16}. " * 30, "summary": f"Summary {k}."},
            {},
            f"d{k // 16:05d}",
        )
        for k in range(count)
    ]
    dataset = lib.import_items("many", items)
    return lib, prompt, dataset


def start_to_first_request(lib, prompt, dataset, server) -> float:
    """Seconds from Start (plan, record, start the job) to the server's first request."""
    from geval_core.run.plan import RunScope, plan_run, record_run
    from prompt_library.job_worker import start_job

    ids = tuple(item.id for item in lib.iter_dataset_items(dataset["id"]))  # the page holds the chosen items
    before = server.count
    began = time.perf_counter()
    plan = plan_run(lib, prompt, dataset, scope=RunScope(item_ids=ids, new_run=True), concurrency=8)
    run_id = record_run(lib, plan).run_id
    start_job(lib, run_id, {"concurrency": 8})
    while server.count == before:
        time.sleep(0.002)
    seconds = time.perf_counter() - began
    lib.request_stop(run_id)
    while lib.job_state(run_id) not in ("ended", "lost", None):
        time.sleep(0.05)
    return seconds


def old_filter_seconds(lib, dataset, ids: tuple[str, ...]) -> float:
    """The worker's former item filter on the same ids (bounded to 2,000 items, scaled: it is quadratic)."""
    items = lib.dataset_items(dataset["id"])[:2000]
    wanted = list(ids)
    began = time.perf_counter()
    kept = [item for item in items if item.id in set(wanted)]
    assert len(kept) == len(items)
    return (time.perf_counter() - began) * len(ids) / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from faultserver import FaultServer

    with tempfile.TemporaryDirectory() as folder, FaultServer(delay=0.05) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ.pop("OPENAI_API_KEY", None)
        lib, prompt, dataset = build(Path(folder) / "bench.db", args.items)
        times = [start_to_first_request(lib, prompt, dataset, server) for _ in range(args.repeats)]
        ids = tuple(item.id for item in lib.iter_dataset_items(dataset["id"]))
        old = old_filter_seconds(lib, dataset, ids)
        lib.close()
    load = os.getloadavg()[0]
    median = statistics.median(times)
    print(f"{args.items} items, load {load:.2f} on {os.cpu_count()} cores")
    print(
        f"Start -> first request: median {median:.2f} s over {args.repeats} (each: "
        f"{', '.join(f'{t:.2f}' for t in times)}); target {TARGET_S:.1f} s: {'met' if median <= TARGET_S else 'MISSED'}"
    )
    print(
        f"the former item filter alone on these ids: about {old:.1f} s ({old / median:.0f}x the whole start now)"
    )


if __name__ == "__main__":
    main()
