"""Seconds per item of the embedded judge (SmolLM2 in llama.cpp) by thread settings, on an idle machine and beside
one competing CPU-bound process, and `geval score`'s s/item with the shipped default against the direct floor.

The direct floor: the same judge called in a loop in this process (no runner, no library), the best thread setting
measured under the same competition. Target: `geval score` ≤ 1.2 × that floor with one competing process.

Run: .venv/bin/python bench/bench_local_threads.py [ITEMS]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SETTINGS = ((1, 1), (1, 2), (2, 1), (2, 2))  # (n_threads, n_threads_batch)
TARGET = 1.2


@contextmanager
def competitor(on: bool):
    """One CPU-bound process beside the measurement (or none)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        time.sleep(0.5 if on else 0.0)
        yield
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


def requests(count: int):
    """The seeded coherence prompt's requests for the first `count` sample items."""
    from geval_core.run.calls import build_request
    from prompt_library import Library

    with tempfile.TemporaryDirectory() as folder, Library(Path(folder) / "b.db") as lib:
        prompt = lib.get_prompt("coherence")
        items = lib.dataset_items("sample")[:count]
        return [build_request(prompt, item, prompt.dimension.judge, "logprobs") for item in items], items


def direct(reqs, n_threads: int, n_threads_batch: int) -> float:
    """Seconds per item of the judge called directly over every request. The model loads at a first call on a short
    unrelated prompt, left out: `geval score` keeps its model load apart too, and its first item, like this loop's,
    reads the rubric cold (leaving out the first real item instead made the floor look faster than any run)."""
    from dataclasses import replace

    from geval_core.providers.local_judge import LocalJudge

    judge = LocalJudge(n_threads=n_threads, n_threads_batch=n_threads_batch)
    judge.judge(replace(reqs[0], messages=({"role": "user", "content": "Rate: A."},)))
    began = time.perf_counter()
    for request in reqs:
        judge.judge(request)
    return (time.perf_counter() - began) / len(reqs)


def cli_seconds(items, folder: Path) -> float:
    """`geval score --judge local` on these items, judge cache off: scoring seconds per item (model load apart)."""
    data = folder / "items.jsonl"
    data.write_text("".join(json.dumps({"id": i.id, **i.fields}) + "\n" for i in items), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from geval_core.cli import cli; cli()",
            "score",
            "--prompt",
            "coherence",
            "--data",
            str(data),
            "--judge",
            "local",
            "--no-cache",
            "--json",
            "-q",
            "--db",
            str(folder / "cli.db"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return summary["seconds"] / summary["judged"]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    reqs, items = requests(count)
    rows = {}
    for busy in (False, True):
        with competitor(busy):
            for n_threads, n_threads_batch in SETTINGS:
                rows[(busy, n_threads, n_threads_batch)] = direct(reqs, n_threads, n_threads_batch)
    from geval_core.providers.local_judge import batch_threads

    with tempfile.TemporaryDirectory() as folder, competitor(True):
        cli = cli_seconds(items, Path(folder))
    print(
        f"{count} sample items, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; s/item called directly:"
    )
    print("n_threads n_threads_batch   idle    one competing process")
    for n_threads, n_threads_batch in SETTINGS:
        print(
            f"{n_threads:>9} {n_threads_batch:>15}  {rows[(False, n_threads, n_threads_batch)]:6.3f}  "
            f"{rows[(True, n_threads, n_threads_batch)]:6.3f}"
        )
    floor = min(v for (busy, *_), v in rows.items() if busy)
    print(
        f"geval score --judge local (default: n_threads_batch {batch_threads()}), one competing process: "
        f"{cli:.3f} s/item = {cli / floor:.2f} x the direct floor {floor:.3f} (target {TARGET}: "
        f"{'met' if cli / floor <= TARGET else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
