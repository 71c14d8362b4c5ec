"""Throughput and client CPU of `geval score` against a loopback OpenAI-compatible server (issue 15).

One run prints each row of issue 15's throughput table as a ratio measured here, with the figure from
before and the target:
- the scoring loop's items/s over the ideal (concurrency / server latency), 200 ms server, at
  concurrency 16 (400 items) and 64 (1,600 items): target >= 0.95 and >= 0.90;
- client CPU per judge call against a server that answers at once: the process CPU time of the scoring
  loop (`run_scoring` in this process, the server in another) / calls, target <= 1 ms; also the same for
  the old typed SDK path (tests/typed_judge.py) and the whole `geval score` process's CPU per call;
- the whole `geval score` process (start-up, import, library, output), 400 items at concurrency 16,
  over the ideal: target >= 0.90;
- DeepEval's GEval on the same server at the same concurrency and items, when the Python named by
  GEVAL_DEEPEVAL_PYTHON has deepeval (else a line says why it is skipped).
Then, for reference, a sequential loop like the paper's released script, and the same command again
(0 judge calls). The server is bench_deepeval.py's (a process of its own, answering both clients), so
the CPU measured here is the client's alone. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))  # the fault server and the typed judge live with the tests

from bench_deepeval import children_cpu, deepeval, item_texts  # noqa: E402

ITEMS = 500  # setup()'s default, which bench_faults.py and bench_fixed_cost.py use
DELAY = 0.2
SCORE_ITEMS, CONCURRENCY = 400, 16  # the loop and the whole process at C=16, and DeepEval beside them
WIDE_ITEMS, WIDE_CONCURRENCY = 1600, 64
CPU_ITEMS, TYPED_ITEMS, WARM_ITEMS, CPU_REPEATS = 1000, 400, 48, 3
SEQUENTIAL_ITEMS, PAPER_ITEMS, PAPER_SLEEP = 40, 10, 0.5
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]
# The same command, also printing the scoring loop's seconds unrounded (the summary line rounds to 0.1 s).
CLI_TIMED = [
    sys.executable,
    "-c",
    """
import sys
import geval_core.run.runner as runner
from geval_core.cli import cli
scoring = runner.run_scoring
def timed(*args, **kwargs):
    summary = scoring(*args, **kwargs)
    print(f"bench: scoring loop {summary.seconds!r} s, judge made in {summary.setup_seconds!r} s", file=sys.stderr)
    return summary
runner.run_scoring = timed
cli()
""",
]
KEY = "sk-bench-not-a-real-key"
# measure: (before, target, higher is better)
TABLE: dict[str, tuple[str, float, bool]] = {
    "scoring loop vs ideal, 200 ms server, C=16": ("0.85", 0.95, True),
    "scoring loop vs ideal, 200 ms server, C=64": ("0.53", 0.90, True),
    "client CPU per judge call, 0 ms server (ms)": ("3.0-3.4", 1.0, False),
    "whole geval score, 400 items, C=16, vs ideal": ("0.62", 0.90, True),
}


def dimension(base_url: str) -> Any:
    from geval_core.types import Dimension, JudgeSettings, Scale

    return Dimension(
        name="Coherence",
        definition="The collective quality of all sentences in the summary.",
        scale=Scale(1, 5),
        anchors={
            1: "Incoherent.",
            2: "Poor.",
            3: "Partly coherent.",
            4: "Mostly coherent.",
            5: "Well structured.",
        },
        steps=("Read the document.", "Read the summary.", "Assign a score."),
        judge=JudgeSettings(provider="openai", model="bench-model", base_url=base_url),
    )


def setup(folder: Path, base_url: str, items: int = ITEMS) -> tuple[Path, str]:
    """A library with one openai-judged prompt, and a JSONL file of `items` items.

    The library is seeded with the examples, as a user's is after the first command that opened it: the
    one-time seeding is not part of a run."""
    from prompt_library import Library

    folder.mkdir(parents=True, exist_ok=True)
    library = Library(folder / "bench.db")
    prompt = library.freeze(dimension(base_url)).prompt
    library.close()
    data = folder / "items.jsonl"
    rows = (dict(zip(("document", "summary"), item_texts(k), strict=True)) for k in range(items))
    data.write_text("".join(json.dumps({"id": f"b{k:04d}", **row}) + "\n" for k, row in enumerate(rows)))
    return data, prompt.label


class Server:
    """bench_deepeval.py's loopback server in a process of its own: `with Server(delay) as server:`."""

    def __init__(self, delay: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH / "bench_deepeval.py"), "serve", str(delay)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise SystemExit(f"the bench server did not start (it said {self.base_url!r})")

    @property
    def count(self) -> int:
        """Chat completions answered so far."""
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats", timeout=10) as answer:
            return json.load(answer)["count"]

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_cli(
    folder: Path,
    label: str,
    data: Path,
    base_url: str,
    concurrency: int = CONCURRENCY,
    command: list[str] | None = None,
) -> tuple[float, float, float, str, float]:
    """(wall seconds of the process, seconds of its scoring loop, its CPU seconds, its summary line, seconds
    spent making the judge: the SDK's import, on the first call, outside the loop's seconds). `command`: run
    it instead of the timed CLI (the loop and judge seconds are then NaN)."""
    env = {**os.environ, "OPENAI_API_KEY": KEY, "HOME": str(folder)}
    args = [
        *(command or CLI_TIMED),
        "score",
        "--prompt",
        label,
        "--data",
        str(data),
        "--db",
        str(folder / "bench.db"),
        "--concurrency",
        str(concurrency),
        "--base-url",
        base_url,
        "--out",
        str(folder / "out.jsonl"),
    ]
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    timing = re.search(r"bench: scoring loop ([0-9.e-]+) s, judge made in ([0-9.e-]+) s", proc.stderr)
    if timing is None:
        return wall, math.nan, cpu, proc.stderr.strip().splitlines()[-1], math.nan
    return wall, float(timing.group(1)), cpu, proc.stderr.strip().splitlines()[-1], float(timing.group(2))


def import_cpu(module: str) -> float:
    """CPU seconds of a process that imports `module` (median of 3)."""
    spent = []
    for _ in range(3):
        cpu = children_cpu()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, timeout=120)
        spent.append(children_cpu() - cpu)
    return sorted(spent)[1]


def loop_cpu(folder: Path, base_url: str, items: int, judge: Any) -> tuple[float, int, float]:
    """(process CPU seconds, judge calls, wall seconds) of `run_scoring` in this process over `items` new
    items at CONCURRENCY, as `geval score` runs it (the library, the cache, the scoring, the writes)."""
    from geval_core.cli.common import resolve_inputs
    from geval_core.run.options import RunOptions
    from geval_core.run.runner import run_scoring

    data, label = setup(folder, base_url, items)
    library, prompt, settings, dataset = resolve_inputs(
        str(folder / "bench.db"), label, str(data), None, base_url, None, None, None
    )
    todo = library.dataset_items(dataset["id"])
    run_id = library.create_run(prompt.id, dataset["id"], settings)
    options = RunOptions(settings=settings, concurrency=CONCURRENCY)
    cpu, start = time.process_time(), time.perf_counter()
    summary = run_scoring(prompt, todo, judge, library, run_id, options)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    library.close()
    if summary.scored != items:
        raise SystemExit(f"{type(judge).__name__}: {summary.scored} of {items} scored ({summary.error})")
    return cpu, summary.judge_calls, wall


def judge_cpu(folder: Path, base_url: str, typed: bool, items: int, repeats: int = 1) -> tuple[float, float]:
    """(ms of CPU per judge call, items/s) of the scoring loop with a new judge, after a warm-up run; the
    median of `repeats` runs (the figure moves by +-15 % from run to run on this shared machine)."""
    from typed_judge import TypedJudge

    from geval_core.providers.openai_judge import OpenAIJudge

    judge = (TypedJudge if typed else OpenAIJudge)("bench-model", KEY, base_url=base_url)
    loop_cpu(folder / "warm", base_url, WARM_ITEMS, judge)  # first-call imports, connections
    runs = sorted(
        (cpu / calls * 1000, items / wall)
        for cpu, calls, wall in (
            loop_cpu(folder / f"measured-{k}", base_url, items, judge) for k in range(repeats)
        )
    )
    return runs[len(runs) // 2]


def core_each(server: Server) -> bool:
    """Put the server on the last core and this process on the others (the server's work then never takes
    the client's core, as a remote server's would not); False where affinity cannot be set."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else []
    if len(cores) < 2:
        return False
    os.sched_setaffinity(server.proc.pid, {cores[-1]})
    os.sched_setaffinity(0, set(cores[:-1]))
    return True


def sequential(base_url: str, count: int, sleep: float) -> float:
    """Seconds per item of a plain loop: one SDK call per item, as the paper's script does."""
    from openai import OpenAI

    client = OpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    start = time.perf_counter()
    for k in range(count):
        client.chat.completions.create(
            model="bench-model",
            max_tokens=5,
            temperature=0,
            logprobs=True,
            top_logprobs=20,
            messages=[{"role": "user", "content": f"Item {k}"}],
        )
        time.sleep(sleep)
    return (time.perf_counter() - start) / count


def verdict(measure: str, value: float) -> str:
    before, target, higher = TABLE[measure]
    met = value >= target if higher else value <= target
    return (
        f"before {before}, target {'>=' if higher else '<='} {target}: {'meets' if met else 'MISSES'} target"
    )


def main() -> None:
    results: dict[str, float] = {}
    ideal = CONCURRENCY / DELAY
    with tempfile.TemporaryDirectory() as tmp, Server(DELAY) as server, Server(0.0) as instant:
        folder = Path(tmp)
        print(
            f"geval score against a loopback server waiting {DELAY * 1000:.0f} ms (ideal: concurrency / "
            f"{DELAY} s)"
        )
        data, label = setup(folder / "c16", server.base_url, SCORE_ITEMS)
        before = server.count
        wall, loop, cpu, summary, made = run_cli(folder / "c16", label, data, server.base_url)
        calls = server.count - before
        assert calls == SCORE_ITEMS, f"expected {SCORE_ITEMS} requests, the server saw {calls}"
        print(f"  {SCORE_ITEMS} items, C={CONCURRENCY}: {summary}")
        key = "scoring loop vs ideal, 200 ms server, C=16"
        results[key] = SCORE_ITEMS / loop / ideal
        print(
            f"  scoring loop {loop:.3f} s = {SCORE_ITEMS / loop:.1f} items/s of {ideal:.0f}: ratio "
            f"{results[key]:.3f} ({verdict(key, results[key])})"
        )
        key = "whole geval score, 400 items, C=16, vs ideal"
        results[key] = SCORE_ITEMS / wall / ideal
        print(
            f"  whole process {wall:.3f} s = {SCORE_ITEMS / wall:.1f} items/s: ratio {results[key]:.3f} "
            f"({verdict(key, results[key])}); {cpu:.2f} s CPU = {cpu / calls * 1000:.2f} ms per call"
        )
        print(
            f"    = scoring loop {loop:.3f} s + making the judge (the SDK's import) {made:.3f} s + the rest "
            f"(start-up, imports, library, data, output) {wall - loop - made:.3f} s"
        )

        wide_ideal = WIDE_CONCURRENCY / DELAY
        data64, label64 = setup(folder / "c64", server.base_url, WIDE_ITEMS)
        wall64, loop64, cpu64, _, _ = run_cli(
            folder / "c64", label64, data64, server.base_url, WIDE_CONCURRENCY
        )
        key = "scoring loop vs ideal, 200 ms server, C=64"
        results[key] = WIDE_ITEMS / loop64 / wide_ideal
        print(
            f"  {WIDE_ITEMS} items, C={WIDE_CONCURRENCY}: scoring loop {loop64:.3f} s = "
            f"{WIDE_ITEMS / loop64:.1f} items/s of {wide_ideal:.0f}: ratio {results[key]:.3f} "
            f"({verdict(key, results[key])}); whole process {wall64:.3f} s (ratio "
            f"{WIDE_ITEMS / wall64 / wide_ideal:.3f}), {cpu64 / WIDE_ITEMS * 1000:.2f} ms CPU per call"
        )

        print(f"client CPU against a server answering at once, C={CONCURRENCY}:")
        key = "client CPU per judge call, 0 ms server (ms)"
        results[key], rate = judge_cpu(folder / "cpu", instant.base_url, False, CPU_ITEMS, CPU_REPEATS)
        print(
            f"  scoring loop in process, {CPU_ITEMS} items, median of {CPU_REPEATS}: {results[key]:.3f} ms CPU per "
            f"call ({rate:.0f} items/s) ({verdict(key, results[key])})"
        )
        typed, typed_rate = judge_cpu(folder / "typed", instant.base_url, True, TYPED_ITEMS)
        print(
            f"  the same with the old typed SDK path (tests/typed_judge.py), {TYPED_ITEMS} items: {typed:.3f} ms "
            f"CPU per call ({typed_rate:.0f} items/s) = {typed / results[key]:.1f}x"
        )
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if core_each(instant):
            apart, apart_rate = judge_cpu(folder / "apart", instant.base_url, False, CPU_ITEMS, CPU_REPEATS)
            os.sched_setaffinity(0, set(cores))
            os.sched_setaffinity(instant.proc.pid, set(cores))
            print(
                f"  the same with the server on a core of its own, this process on the other: {apart:.3f} ms "
                f"({apart_rate:.0f} items/s); the threads' GIL hand-offs across two cores cost the difference"
            )
        data0, label0 = setup(folder / "cli0", instant.base_url, CPU_ITEMS)
        wall0, _, cpu0, _, _ = run_cli(folder / "cli0", label0, data0, instant.base_url)
        _, _, cpu0b, _, _ = run_cli(
            folder / "cli0", label0, data0, instant.base_url
        )  # 0 calls: the fixed cost
        # The re-run makes no judge, so imports no SDK: its import is taken out too.
        sdk = import_cpu("geval_core.cli, geval_core.providers.openai_judge, openai") - import_cpu(
            "geval_core.cli"
        )
        print(
            f"  whole geval score process, {CPU_ITEMS} items: {cpu0:.2f} s CPU in {wall0:.2f} s; less the identical "
            f"re-run's {cpu0b:.2f} s (0 calls) and the SDK's import {sdk:.2f} s (the re-run needs none): "
            f"{(cpu0 - cpu0b - sdk) / CPU_ITEMS * 1000:.3f} ms per call"
        )

        print(
            f"DeepEval's GEval on the same {DELAY * 1000:.0f} ms server, {SCORE_ITEMS} items, "
            f"C={CONCURRENCY} (asyncio, one a_measure per item):"
        )
        other = deepeval(folder / "deepeval", server, SCORE_ITEMS, CONCURRENCY)
        if isinstance(other, str):
            print(f"  skipped: {other}")
        else:
            print(
                f"  deepeval {other['version']}: {other['seconds']:.3f} s = {other['items'] / other['seconds']:.1f}"
                f" items/s, ratio to ideal {other['items'] / other['seconds'] / ideal:.3f} (geval score's loop "
                f"{results['scoring loop vs ideal, 200 ms server, C=16']:.3f}, "
                f"{loop / other['seconds']:.2f}x the time); {other['calls'] / other['items']:.2f} calls per "
                f"item, {other['errors']} errors, mean score {other['mean_score']}"
            )
            print(
                f"  whole process {other['wall']:.2f} s (geval score {wall:.2f} s); CPU "
                f"{other['cpu_s'] * 1000 / other['items']:.2f} ms per item in its loop, "
                f"{other['process_cpu']:.2f} s in all (geval score {cpu:.2f} s)"
            )
            if other["first_error"]:
                print(f"  first error: {other['first_error']}")

        per_item = sequential(server.base_url, SEQUENTIAL_ITEMS, 0.0)
        paper = sequential(server.base_url, PAPER_ITEMS, PAPER_SLEEP)
        print(
            f"sequential loop ({SEQUENTIAL_ITEMS} items): {per_item * 1000:.0f} ms/item = {1 / per_item:.2f} "
            f"items/s; geval score at C={CONCURRENCY} is {SCORE_ITEMS / loop * per_item:.1f}x faster (process "
            f"wall: {SCORE_ITEMS / wall * per_item:.1f}x); paper-like loop with {PAPER_SLEEP} s sleep "
            f"({PAPER_ITEMS} items): {paper * 1000:.0f} ms/item, {SCORE_ITEMS / loop * paper:.1f}x"
        )
        before = server.count
        wall2, _, _, summary2, _ = run_cli(folder / "c16", label, data, server.base_url)
        print(
            f"same C={CONCURRENCY} command again: {server.count - before} judge calls (target 0); wall "
            f"{wall2:.2f} s vs {wall:.2f} s = ratio {wall2 / wall:.3f}"
        )
        print(f"  {summary2}")

    print("\n| measure | before | now | target | |\n| --- | --- | --- | --- | --- |")
    for measure, (before_text, target, higher) in TABLE.items():
        value = results[measure]
        met = value >= target if higher else value <= target
        print(
            f"| {measure} | {before_text} | {value:.3f} | {'>=' if higher else '<='} {target} | "
            f"{'ok' if met else 'MISSES'} |"
        )


if __name__ == "__main__":
    main()
