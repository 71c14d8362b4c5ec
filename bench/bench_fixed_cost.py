"""The fixed cost of a `geval` process (issue 15), measured in one run as ratios against the targets.

Builds a library in a temporary folder and times whole processes (start-up, imports, work, teardown):
- an identical re-run of `geval score` (500 items, all judged before against a loopback OpenAI-compatible
  server: 0 judge calls, the command reports the finished run), target <= 0.5 s;
- `geval runs list` on a library of 50 runs x 1,600 judgments, target <= 0.2 s;
- `geval --help` and `geval prompts list`, and the import of geval_core.cli alone (for reference).
Each figure is the median (and the best) of REPEATS processes after a warm-up; `python -c pass` is printed
as this machine's own floor (the figures move with the load of the machine). Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fault server lives with the tests
sys.path.insert(0, str(ROOT / "bench"))

from bench_throughput import CLI, KEY, setup  # noqa: E402
from faultserver import FaultServer  # noqa: E402

RUNS, JUDGMENTS, REPEATS = 50, 1600, 7
RERUN_TARGET, LIST_TARGET = 0.5, 0.2
RERUN_BEFORE, LIST_BEFORE = 2.4, 0.66  # seconds, issue 15's table


def timed(
    args: list[str],
    env: dict[str, str],
    expect_calls: FaultServer | None = None,
) -> tuple[float, float, str]:
    """(median and best wall seconds of REPEATS processes after one untimed warm-up, the last stderr).

    The warm-up takes the one-time work out (a library's first open migrates and seeds it)."""
    subprocess.run(args, env=env, capture_output=True, timeout=600)
    walls, err = [], ""
    for _ in range(REPEATS):
        before = expect_calls.count if expect_calls else 0
        start = time.perf_counter()
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        walls.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args[3:])} failed ({proc.returncode}):\n{proc.stderr}")
        if expect_calls and expect_calls.count != before:
            raise SystemExit(f"the re-run made {expect_calls.count - before} judge calls (expected 0)")
        err = proc.stderr
    return statistics.median(walls), min(walls), err


def big_library(path: Path) -> None:
    """RUNS runs of one prompt on a dataset of JUDGMENTS items, each with every item judged (2 % errors)."""
    from geval_core.types import Dimension, JudgeSettings, Scale
    from prompt_library import Library

    library = Library(path, seed_examples=False)
    dimension = Dimension(
        name="Fluency",
        definition="How well the summary reads.",
        scale=Scale(1, 5),
        anchors={1: "Unreadable.", 2: "Poor.", 3: "Readable.", 4: "Good.", 5: "Fluent."},
        steps=("Read the summary.", "Assign a score."),
        judge=JudgeSettings(provider="openai", model="bench-model"),
    )
    prompt = library.freeze(dimension).prompt
    data = path.parent / "big.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"i{k:05d}", "summary": f"Summary {k}."}) + "\n" for k in range(JUDGMENTS))
    )
    dataset = library.import_dataset(data, "big", _mapping())
    run_ids = [library.create_run(prompt.id, dataset["id"], dimension.judge) for _ in range(RUNS)]
    library.close()
    rng = random.Random(15)
    rows = [
        (
            run_id,
            f"i{k:05d}",
            rng.uniform(1, 5),
            None if rng.random() > 0.02 else "judge error",
            '{"3":0.6,"4":0.4}',
            "logprobs",
            "2025-01-01T00:00:00+00:00",
            "{}",
        )
        for run_id in run_ids
        for k in range(JUDGMENTS)
    ]
    with (
        closing(sqlite3.connect(path)) as conn,
        conn,
    ):  # closed: an open connection would keep the WAL growing
        conn.executemany(
            "INSERT INTO judgments (run_id, item_id, score, error, distribution, mode, created_at, "
            "extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def _mapping():  # noqa: ANN202
    from prompt_library import DatasetMapping

    return DatasetMapping(id="id", inputs={"summary": "summary"})


def ratio(label: str, seconds: float, best: float, target: float, before: float) -> str:
    """Print one row against its target; return its line of the closing table."""
    verdict = "ok" if seconds <= target else "MISSES"
    print(
        f"{label}: {seconds:.3f} s = {seconds / target:.2f} x target ({target} s; before {before} s): "
        f"{'meets' if seconds <= target else 'MISSES'} target; best of {REPEATS} {best:.3f} s = "
        f"{best / target:.2f} x"
    )
    return f"| {label} | {before} s | {seconds:.3f} s ({seconds / target:.2f} x target) | <= {target} s | {verdict} |"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FaultServer() as server:
        folder = Path(tmp)
        env = {**os.environ, "OPENAI_API_KEY": KEY, "HOME": str(folder)}
        data, label = setup(folder, server.base_url)
        score = [
            *CLI,
            "score",
            "--prompt",
            label,
            "--data",
            str(data),
            "--db",
            str(folder / "bench.db"),
            "--base-url",
            server.base_url,
            "--out",
            str(folder / "out.jsonl"),
        ]
        first = subprocess.run(score, env=env, capture_output=True, text=True, timeout=600)
        if first.returncode != 0:
            raise SystemExit(first.stderr)
        calls = server.count
        rerun, best, err = timed(score, env, expect_calls=server)
        print(
            f"first run: {calls} judge calls; re-run: 0 judge calls ({err.strip().splitlines()[-1][:90]}...)"
        )
        rows = [
            ratio(
                "identical re-run of geval score (whole process, median)",
                rerun,
                best,
                RERUN_TARGET,
                RERUN_BEFORE,
            )
        ]

        big = folder / "big" / "library.db"
        big.parent.mkdir()
        big_library(big)
        listing, best, _ = timed([*CLI, "runs", "list", "--db", str(big)], env)
        rows.append(
            ratio(
                f"geval runs list, {RUNS} runs x {JUDGMENTS} judgments (whole process, median)",
                listing,
                best,
                LIST_TARGET,
                LIST_BEFORE,
            )
        )
        from prompt_library import Library

        with Library(big) as library:
            start = time.perf_counter()
            library.list_runs()
            query = time.perf_counter() - start
        print(f"  of which list_runs() in process: {query:.3f} s")

        helped, *_ = timed([*CLI, "--help"], env)
        prompts, *_ = timed([*CLI, "prompts", "list", "--db", str(folder / "bench.db")], env)
        bare, *_ = timed([sys.executable, "-c", "pass"], env)
        imported, *_ = timed([sys.executable, "-c", "from geval_core.cli import cli"], env)
        print(
            f"geval --help: {helped:.3f} s; geval prompts list: {prompts:.3f} s; "
            f"python -c pass: {bare:.3f} s; import geval_core.cli: {imported:.3f} s (whole processes, "
            f"median of {REPEATS})"
        )
    print("\n| measure | before | now | target | |\n| --- | --- | --- | --- | --- |", *rows, sep="\n")


if __name__ == "__main__":
    main()
