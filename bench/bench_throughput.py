"""Throughput of `geval score` against a loopback OpenAI-compatible server that waits 200 ms per request.

Prints: items/s of 500 items at concurrency 16 and its ratio to the ideal 16 / 0.2 s = 80 items/s
(target >= 0.85); the ratio to a sequential loop like the paper's released script (one request at a
time; the script also sleeps 0.5 s after each call, shown separately); then the same command again:
judge calls (target 0) and the wall-time ratio. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fault server lives with the tests

from faultserver import FaultServer  # noqa: E402

ITEMS, CONCURRENCY, DELAY = 500, 16, 0.2
SEQUENTIAL_ITEMS, PAPER_ITEMS, PAPER_SLEEP = 40, 10, 0.5
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]
KEY = "sk-bench-not-a-real-key"


def setup(folder: Path, base_url: str) -> tuple[Path, str]:
    """A library with one openai-judged prompt, and a JSONL file of ITEMS items."""
    from geval_core.types import Dimension, JudgeSettings, Scale
    from prompt_library import Library

    library = Library(folder / "bench.db", seed_examples=False)
    dimension = Dimension(
        name="Coherence", definition="The collective quality of all sentences in the summary.", scale=Scale(1, 5),
        anchors={1: "Incoherent.", 2: "Poor.", 3: "Partly coherent.", 4: "Mostly coherent.", 5: "Well structured."},
        steps=("Read the document.", "Read the summary.", "Assign a score."),
        judge=JudgeSettings(provider="openai", model="bench-model", base_url=base_url),
    )
    prompt = library.freeze(dimension).prompt
    library.close()
    data = folder / "items.jsonl"
    data.write_text("".join(json.dumps({"id": f"b{k:04d}", "document": f"Document {k}. " * 40,
                                        "summary": f"Summary of document {k}."}) + "\n" for k in range(ITEMS)))
    return data, prompt.label


def run_cli(folder: Path, label: str, data: Path, base_url: str) -> tuple[float, float, str]:
    """(wall seconds of the process, seconds of the scoring loop as the command reports, stderr)."""
    env = {**os.environ, "OPENAI_API_KEY": KEY, "HOME": str(folder)}
    args = [*CLI, "score", "--prompt", label, "--data", str(data), "--db", str(folder / "bench.db"),
            "--concurrency", str(CONCURRENCY), "--base-url", base_url, "--out", str(folder / "out.jsonl")]
    start = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    loop = float(re.search(r"judge calls in ([0-9.]+)s", proc.stderr).group(1))
    return wall, loop, proc.stderr.strip().splitlines()[-1]


def sequential(base_url: str, count: int, sleep: float) -> float:
    """Seconds per item of a plain loop: one SDK call per item, as the paper's script does."""
    from openai import OpenAI

    client = OpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    start = time.perf_counter()
    for k in range(count):
        client.chat.completions.create(model="bench-model", max_tokens=5, temperature=0, logprobs=True,
                                       top_logprobs=20, messages=[{"role": "user", "content": f"Item {k}"}])
        time.sleep(sleep)
    return (time.perf_counter() - start) / count


def main() -> None:
    ideal = CONCURRENCY / DELAY
    with tempfile.TemporaryDirectory() as tmp, FaultServer(delay=DELAY) as server:
        folder = Path(tmp)
        data, label = setup(folder, server.base_url)
        wall, loop, summary = run_cli(folder, label, data, server.base_url)
        calls = server.count
        print(f"geval score: {ITEMS} items, concurrency {CONCURRENCY}, server delay {DELAY * 1000:.0f} ms")
        print(f"  {summary}")
        print(f"  scoring loop: {loop:.2f} s = {ITEMS / loop:.1f} items/s, ratio to ideal {ideal:.0f}/s: "
              f"{ITEMS / loop / ideal:.3f} (target >= 0.85)")
        print(f"  whole process (start-up, import, library, output): {wall:.2f} s = {ITEMS / wall:.1f} items/s, "
              f"ratio {ITEMS / wall / ideal:.3f}")
        per_item = sequential(server.base_url, SEQUENTIAL_ITEMS, 0.0)
        paper = sequential(server.base_url, PAPER_ITEMS, PAPER_SLEEP)
        print(f"sequential loop ({SEQUENTIAL_ITEMS} items): {per_item * 1000:.0f} ms/item = {1 / per_item:.2f} items/s; "
              f"geval score is {ITEMS / loop * per_item:.1f}x faster (process wall: {ITEMS / wall * per_item:.1f}x)")
        print(f"paper-like loop with {PAPER_SLEEP} s sleep ({PAPER_ITEMS} items): {paper * 1000:.0f} ms/item; "
              f"geval score is {ITEMS / loop * paper:.1f}x faster")
        before = server.count
        wall2, loop2, summary2 = run_cli(folder, label, data, server.base_url)
        print(f"same command again: {server.count - before} judge calls (target 0); wall {wall2:.2f} s vs {wall:.2f} s "
              f"= ratio {wall2 / wall:.3f}; scoring loop {loop2:.2f} s vs {loop:.2f} s = {loop2 / loop:.3f}")
        print(f"  {summary2}")
        assert calls == ITEMS, f"expected {ITEMS} requests, the server saw {calls}"


if __name__ == "__main__":
    main()
