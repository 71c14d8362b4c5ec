"""Runs that finish honestly, measured with a fault-injecting OpenAI-compatible server on loopback.

Prints the figures issue 10 asks for, as shares and ratios from one run:
- 30 % transient faults on 500 items (429 with Retry-After, 500, 503, hangs past the timeout, closed
  connections, truncated and malformed bodies, empty choices, NaN log-probabilities, chosen per item
  and attempt from a seed): share scored (target >= 0.99), items missing (0), the most requests any
  item needed against the attempt limit;
- a judge that always fails, one way at a time: items written before the run stopped (target <= 5)
  and the exit code (non-zero);
- two identical commands at once: requests / items (target <= 1.05);
- Ctrl-C while every request hangs: seconds to exit (target <= 2) and the exit code;
- tracebacks in every stderr above (target 0).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fault server lives with the tests

from bench_throughput import CLI, ITEMS, KEY, setup  # noqa: E402
from faultserver import FaultServer  # noqa: E402

TRANSIENT = ("429", "500", "503", "hang", "close", "truncated", "malformed", "empty", "nan")
ALWAYS = ("500", "401", "malformed", "empty", "nologprobs")
MAX_ATTEMPTS, RATE, SEED = 5, 0.30, 7


def item_of(body: dict) -> str:
    """The item a request is for: its summary line names it."""
    text = body["messages"][-1]["content"]
    return text[text.index("Summary of document") :][:40]


class Faults:
    """Per item and attempt, a fault with probability RATE, from a seed (so a rerun sees the same)."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()

    def __call__(self, index: int, body: dict) -> str:
        item = item_of(body)
        self.attempts[item] += 1
        rng = random.Random(f"{SEED}:{item}:{self.attempts[item]}")
        return rng.choice(TRANSIENT) if rng.random() < RATE else "ok"


def score(folder: Path, label: str, data: Path, server: FaultServer, *extra: str) -> subprocess.Popen:
    """Start `geval score` on the bench library."""
    env = {**os.environ, "OPENAI_API_KEY": KEY, "HOME": str(folder)}
    args = [
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
        "--max-attempts",
        str(MAX_ATTEMPTS),
        "--timeout",
        "1",
        "--out",
        str(folder / "out.jsonl"),
        *extra,
    ]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def transient(errors: list[str]) -> None:
    faults = Faults()
    with (
        tempfile.TemporaryDirectory() as tmp,
        FaultServer(script=faults, hang_s=3.0, retry_after="0.2") as server,
    ):
        folder = Path(tmp)
        data, label = setup(folder, server.base_url)
        process = score(folder, label, data, server, "--concurrency", "16")
        _, err = process.communicate(timeout=900)
        errors.append(err)
        lines = [json.loads(x) for x in (folder / "out.jsonl").read_text().splitlines()]
    scored = sum(x["score"] is not None for x in lines)
    total = ITEMS
    print(
        f"30 % transient faults, {total} items: {scored / total:.3f} scored (target >= 0.99), "
        f"{total - len(lines)} missing (target 0), most requests for one item {max(faults.attempts.values())} "
        f"(attempt limit {MAX_ATTEMPTS}), requests / items {server.count / total:.2f}, exit {process.returncode}"
    )


def always_failing(errors: list[str]) -> None:
    for fault in ALWAYS:
        with tempfile.TemporaryDirectory() as tmp, FaultServer(script=lambda i, b, f=fault: f) as server:
            folder = Path(tmp)
            data, label = setup(folder, server.base_url)
            start = time.perf_counter()
            process = score(folder, label, data, server, "--concurrency", "4", "--mode", "logprobs")
            _, err = process.communicate(timeout=600)
            errors.append(err)
            out = folder / "out.jsonl"
            written = len(out.read_text().splitlines()) if out.exists() else 0
            print(
                f"judge always answering {fault!r}: stopped after {written} items written (target <= 5, "
                f"+ items in flight), {server.count} requests, exit {process.returncode}, "
                f"{time.perf_counter() - start:.1f} s; {err.strip().splitlines()[-1][:160]}"
            )


def two_commands(errors: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, FaultServer(delay=0.05) as server:
        folder = Path(tmp)
        data, label = setup(folder, server.base_url)
        both = [score(folder, label, data, server, "--concurrency", "8") for _ in range(2)]
        codes = [p.wait(timeout=600) for p in both]
        errors.extend(p.stderr.read() for p in both)
        total = ITEMS
        print(
            f"two identical commands at once: requests / items {server.count / total:.3f} (target <= 1.05), "
            f"exit codes {codes}"
        )


def ctrl_c(errors: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, FaultServer(script=lambda i, b: "hang", hang_s=120) as server:
        folder = Path(tmp)
        data, label = setup(folder, server.base_url)
        process = score(folder, label, data, server, "--concurrency", "8", "--timeout", "120")
        while server.count < 8:
            time.sleep(0.05)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
        errors.append(err)
        print(
            f"Ctrl-C with 8 hung requests: exit in {time.monotonic() - sent:.2f} s (target <= 2), "
            f"exit code {process.returncode}"
        )


def main() -> None:
    errors: list[str] = []
    transient(errors)
    always_failing(errors)
    two_commands(errors)
    ctrl_c(errors)
    print(f"tracebacks in {len(errors)} stderr streams: {sum('Traceback' in e for e in errors)} (target 0)")


if __name__ == "__main__":
    main()
