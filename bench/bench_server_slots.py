"""Items per second of a real llama.cpp server (llama-server, SmolLM2, 2-4 slots) on a SummEval subset stored in
shuffled order, sent in dataset order and in prefix-aware order, side by side in one run; the prompt tokens the
server evaluated per item (its `timings.prompt_n`: what its slots' prompt caches did not spare); and the largest
difference of any rating's probability between the two orders.

llama-server keeps a prompt cache per slot and gives a request the slot whose cached prompt is most like it: sent
together, a document's summaries find the document already read. Target: prefix-aware >= 1.5x shuffled.

The server binary: GEVAL_LLAMA_SERVER, else `llama-server` on PATH. It is not part of llama-cpp-python's wheel;
build it from the llama.cpp source that llama-cpp-python's sdist vendors:
    pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps && tar xzf llama_cpp_python-0.3.36.tar.gz
    cd llama_cpp_python-0.3.36/vendor/llama.cpp && cmake -B build -DLLAMA_CURL=OFF && cmake --build build \
        --target llama-server -j 2      # then GEVAL_LLAMA_SERVER=$PWD/build/bin/llama-server

Run: .venv/bin/python bench/bench_server_slots.py [SLOTS] [DOCUMENTS] [SUMMARIES]
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bench_prefix_order import subset  # noqa: E402

TARGET = 1.5


def server_binary() -> str | None:
    """The llama-server to start, or None."""
    return os.environ.get("GEVAL_LLAMA_SERVER") or shutil.which("llama-server")


def start_server(binary: str, model: str, slots: int) -> tuple[subprocess.Popen, str]:
    """llama-server on a free loopback port with `slots` slots of 4,096 tokens each; (process, base URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [
        binary,
        "-m",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--parallel",
        str(slots),
        "-c",
        str(4096 * slots),
        "-t",
        "2",
        "--no-webui",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if json.load(answer).get("status") == "ok":
                    return proc, url + "/v1"
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama-server did not become healthy within 120 s")


class Counting:
    """The OpenAI-compatible judge, counting the prompt tokens the server evaluated (timings.prompt_n)."""

    def __init__(self, judge) -> None:
        self.inner, self.provider = judge, judge.provider
        self.evaluated, self.cached = 0, 0

    def judge(self, request):
        reply = self.inner.judge(request)
        timings = (reply.raw or {}).get("timings") or {}
        self.evaluated += int(timings.get("prompt_n") or 0)
        self.cached += int(timings.get("cache_n") or 0)
        return reply


def run(lib, prompt, dataset, judge, base_url: str, slots: int, prefix_order: bool) -> tuple[float, dict]:
    """(seconds, distributions by item) of one run with the judge cache off, `slots` requests in flight."""
    from geval_core.run.options import RunOptions
    from geval_core.run.plan import JudgeChoice, RunScope, plan_run, record_run, start_run

    choice = JudgeChoice("openai:smollm2", base_url)
    options = RunOptions(use_cache=False, prefix_order=prefix_order)
    plan = record_run(
        lib,
        plan_run(lib, prompt, dataset, choice, RunScope(new_run=True), concurrency=slots, options=options),
    )
    began = time.perf_counter()
    start_run(lib, plan, judge)
    seconds = time.perf_counter() - began
    return seconds, {r["item_id"]: r["distribution"] for r in lib.judgments(plan.run_id) if r["distribution"]}


def main() -> None:
    """Both orders against one server, then the figures."""
    from geval_core.providers.local_judge import local_model_path
    from geval_core.providers.openai_judge import OpenAIJudge
    from prompt_library import Library

    binary = server_binary()
    if binary is None:
        print(
            "not measured: no llama-server (set GEVAL_LLAMA_SERVER; this script's docstring says how to build it)"
        )
        return
    slots = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    documents = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    summaries = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    items = subset(documents, summaries)
    proc, base_url = start_server(binary, local_model_path(), slots)
    try:
        with tempfile.TemporaryDirectory() as folder, Library(Path(folder) / "b.db") as lib:
            prompt = lib.get_prompt("coherence")
            dataset = lib.import_items("summeval-shuffled", items)
            judge = Counting(OpenAIJudge("smollm2", "no-key", base_url=base_url))
            results = {}
            for name, prefix_order in (("dataset", False), ("prefix", True), ("prefix again", True)):
                judge.evaluated = judge.cached = 0
                seconds, dists = run(lib, prompt, dataset, judge, base_url, slots, prefix_order)
                results[name] = (seconds, dists, judge.evaluated, judge.cached)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (s_off, d_off, t_off, c_off), (s_on, d_on, t_on, c_on) = results["dataset"], results["prefix"]
    shared = [i for i in d_off if i in d_on]
    worst = largest_difference(d_off, d_on)
    again = largest_difference(d_on, results["prefix again"][1])
    n = len(items)
    print(
        f"SummEval, {documents} documents x {summaries} summaries stored shuffled; llama-server, {slots} slots, "
        f"{slots} requests in flight; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    print(
        f"dataset order:      {n / s_off:6.2f} items/s, {t_off / n:6.0f} prompt tokens evaluated per item "
        f"({c_off / n:.0f} from a slot's cache)"
    )
    print(
        f"prefix-aware order: {n / s_on:6.2f} items/s, {t_on / n:6.0f} prompt tokens evaluated per item "
        f"({c_on / n:.0f} from a slot's cache)"
    )
    print(f"speed-up {s_off / s_on:.2f}x (target {TARGET}x: {'met' if s_off / s_on >= TARGET else 'MISSED'})")
    print(
        f"largest difference of any rating's probability over {len(shared)} items: between the two orders "
        f"{worst:.2e}; between two runs in the same prefix-aware order {again:.2e} (the server's own variation: "
        "a slot's batch and its cached prefix change the float sums)"
    )
    print(
        f"mean |difference| of the weighted score: between the orders {mean_score_gap(d_off, d_on):.3f}; "
        f"between two runs in one order {mean_score_gap(d_on, results['prefix again'][1]):.3f}"
    )


def mean_score_gap(first: dict, second: dict) -> float:
    """The mean absolute difference of the probability-weighted rating between two runs, items of both."""

    def score(dist: dict) -> float:
        mass = sum(dist.values())
        return sum(float(k) * v for k, v in dist.items()) / mass if mass else float("nan")

    gaps = [abs(score(first[i]) - score(second[i])) for i in first if i in second]
    return sum(gaps) / len(gaps) if gaps else float("nan")


def largest_difference(first: dict, second: dict) -> float:
    """The largest difference of any rating's probability between two runs' distributions, items of both."""
    shared = [i for i in first if i in second]
    return max(
        (abs(first[i].get(k, 0.0) - second[i].get(k, 0.0)) for i in shared for k in {*first[i], *second[i]}),
        default=float("nan"),
    )


if __name__ == "__main__":
    main()
