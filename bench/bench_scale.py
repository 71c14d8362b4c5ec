"""Streamed runs in constant memory (issue 29, item 1 and the scaling rows of item 4).

`geval score` as a subprocess against a loopback OpenAI-compatible server that answers at once (0 ms),
concurrency 16, over library datasets of 1,000 / 10,000 / 100,000 items (imported once through the
library API, outside the measured runs). Per size:
- max RSS of the `geval score` process (os.wait4's rusage of that child alone), target <= 150 MB and flat in N;
- exec -> first request: from just before the process is started to the server's first request, target
  <= 2 s at 100k (the server, a process of its own, stamps its requests with the same monotonic clock);
- last answer -> exit: from the server's last answer to the process's exit, target <= 2 s at 100k;
then the same command again on the finished 100k run (zero judge calls): seconds and max RSS, target
<= 3 s (wall and, with --out, CPU) and <= 150 MB, with --out (every line streamed from the library) and with
--json alone.
One run prints every figure and its ratio to the target (ratio <= 1 meets it).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))  # the documented completion shape lives with the tests' fault server
sys.path.insert(0, str(BENCH))

from bench_deepeval import item_texts  # noqa: E402

# GEVAL_SCALE_SIZES=1000,5000 for a quick look; the figures below are for the default sizes.
SIZES = tuple(int(n) for n in os.environ.get("GEVAL_SCALE_SIZES", "1000,10000,100000").split(","))
CONCURRENCY = 16
KEY = "sk-bench-not-a-real-key"
CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]
# measure: (before, as issue 29 measured it; target; unit)
TARGETS = {
    "max RSS, 100k items (MB)": ("493", 150.0),
    "exec -> first request, 100k (s)": ("16.3", 2.0),
    "last answer -> exit, 100k (s)": ("14.1", 2.0),
    "zero-call re-run, 100k, --out (s)": ("15.8", 3.0),
    "zero-call re-run, 100k, --out: CPU (s)": ("3.6", 3.0),
    "zero-call re-run, 100k, --out: max RSS (MB)": ("452", 150.0),
    "zero-call re-run, 100k, --json only (s)": ("15.8", 3.0),
    "zero-call re-run, 100k, --json only: max RSS (MB)": ("452", 150.0),
}


# ---- the server ---------------------------------------------------------------------------------


def serve() -> None:
    """Answer chat completions at once; GET /stats: {count, first, last} (time.monotonic of the first request
    received and of the last answer sent since GET /reset)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from faultserver import WORKED_EXAMPLE, completion

    state: dict[str, Any] = {"count": 0, "first": None, "last": None}
    answers: dict[tuple, bytes] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args) -> None:
            pass

        def _send(self, payload: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            with lock:
                if self.path.endswith("/reset"):
                    state.update(count=0, first=None, last=None)
                self._send(json.dumps(state).encode())

        def do_POST(self) -> None:
            received = time.monotonic()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            key = (body.get("model"), body.get("n"), body.get("logprobs"), body.get("top_logprobs"))
            with lock:
                state["count"] += 1
                state["first"] = state["first"] or received
                if key not in answers:
                    answers[key] = json.dumps(
                        completion(body, WORKED_EXAMPLE, True, body.get("model") or "m")
                    ).encode()
            self._send(answers[key])
            with lock:
                state["last"] = time.monotonic()

    ThreadingHTTPServer.request_queue_size = 256
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    print(f"http://127.0.0.1:{httpd.server_address[1]}/v1", flush=True)
    httpd.serve_forever()


class Server:
    """This script's server in a process of its own."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "serve"], stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise SystemExit(f"the bench server did not start (it said {self.base_url!r})")

    def stats(self, reset: bool = False) -> dict[str, Any]:
        path = "/reset" if reset else "/stats"
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + path, timeout=10) as answer:
            return json.load(answer)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# ---- the runs -----------------------------------------------------------------------------------


def setup(db: Path, base_url: str, items: int) -> tuple[str, str]:
    """(prompt label, dataset label): a library with one openai-judged prompt and a dataset of `items` items,
    made in a process of its own. A child's max RSS starts at its parent's (Linux keeps the high-water mark
    across fork and exec), so this process never holds the 100,000 items it imports."""
    made = subprocess.run(
        [sys.executable, __file__, "setup", str(db), base_url, str(items)],
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    prompt, dataset = json.loads(made.stdout)
    return prompt, dataset


def make_library(db: Path, base_url: str, items: int) -> None:
    """`setup`'s child: import the dataset through the library API, print the labels."""
    from bench_throughput import dimension

    from geval_core.types import Item
    from prompt_library import Library

    library = Library(db)  # seeded, as a user's library is after its first command
    prompt = library.freeze(dimension(base_url)).prompt
    rows = (
        Item(f"b{k:06d}", dict(zip(("document", "summary"), item_texts(k), strict=True)))
        for k in range(items)
    )
    dataset = library.import_items(f"scale{items}", list(rows))
    library.close()
    print(json.dumps([prompt.label, dataset["label"]]))


def score(db: Path, prompt: str, dataset: str, base_url: str, out: Path | None) -> dict[str, Any]:
    """One `geval score` process: its start and exit times, wall seconds, max RSS (MB), its --json summary."""
    args = [
        *CLI,
        "score",
        "--prompt",
        prompt,
        "--data",
        dataset,
        "--db",
        str(db),
        "--concurrency",
        str(CONCURRENCY),
        "--base-url",
        base_url,
        "--quiet",
    ]
    args += ["--out", str(out)] if out else ["--json"]
    env = {**os.environ, "OPENAI_API_KEY": KEY, "HOME": str(db.parent), "GEVAL_PRICES": ""}
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        start = time.monotonic()
        proc = subprocess.Popen(args, env=env, stdout=stdout, stderr=stderr, text=True)
        _, status, usage = os.wait4(
            proc.pid, 0
        )  # this child's own rusage (RUSAGE_CHILDREN is a max over all)
        ended = time.monotonic()
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        printed, said = stdout.read(), stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"geval score exited {proc.returncode}: {said[-2000:]}")
    return {
        "start": start,
        "ended": ended,
        "wall": ended - start,
        "rss_mb": usage.ru_maxrss * 1024 / 1e6,
        "cpu": usage.ru_utime + usage.ru_stime,
        "json": json.loads(printed) if printed.strip() else None,
    }


def measure(folder: Path, server: Server, items: int) -> dict[str, Any]:
    """A fresh run over `items` items: the figures of the scaling rows."""
    db = folder / f"scale{items}.db"
    prompt, dataset = setup(db, server.base_url, items)
    server.stats(reset=True)
    run = score(db, prompt, dataset, server.base_url, folder / f"out{items}.jsonl")
    stats = server.stats()
    if stats["count"] != items:
        raise SystemExit(f"{items} items: the server answered {stats['count']} requests")
    lines = sum(1 for _ in (folder / f"out{items}.jsonl").open())
    if lines != items:
        raise SystemExit(f"{items} items: the results file has {lines} lines")
    return {
        "db": db,
        "prompt": prompt,
        "dataset": dataset,
        "rss_mb": run["rss_mb"],
        "wall": run["wall"],
        "first": stats["first"] - run["start"],
        "tail": run["ended"] - stats["last"],
    }


def rerun(folder: Path, server: Server, done: dict[str, Any], with_out: bool) -> dict[str, Any]:
    """The same command on the finished run: zero judge calls; seconds and max RSS."""
    server.stats(reset=True)
    out = folder / "rerun.jsonl" if with_out else None
    run = score(done["db"], done["prompt"], done["dataset"], server.base_url, out)
    calls = server.stats()["count"]
    if calls:
        raise SystemExit(f"the re-run sent {calls} requests")
    if with_out and sum(1 for _ in out.open()) != SIZES[-1]:
        raise SystemExit("the re-run's results file is not whole")
    return run


def verdict(measure_name: str, value: float) -> str:
    before, target = TARGETS[measure_name]
    return (
        f"{value:.2f} (before {before}, target <= {target:g}: ratio {value / target:.2f}, "
        f"{'meets' if value <= target else 'MISSES'})"
    )


def main() -> None:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, Server() as server:
        folder = Path(tmp)
        print(f"geval score, loopback server answering at once, C={CONCURRENCY}, --out FILE")
        runs = {}
        for items in SIZES:
            runs[items] = measure(folder, server, items)
            r = runs[items]
            print(
                f"  {items:>7,} items: {r['wall']:.1f} s ({items / r['wall']:.0f} items/s), max RSS "
                f"{r['rss_mb']:.1f} MB, exec -> first request {r['first']:.2f} s, last answer -> exit "
                f"{r['tail']:.2f} s"
            )
        big = runs[SIZES[-1]]
        curve = " / ".join(f"{runs[n]['rss_mb']:.1f}" for n in SIZES)
        print(
            f"  max RSS curve 1k / 10k / 100k: {curve} MB; 100k over 1k = "
            f"{big['rss_mb'] / runs[SIZES[0]]['rss_mb']:.2f}x (flat: ~1)"
        )
        results["max RSS, 100k items (MB)"] = max(r["rss_mb"] for r in runs.values())
        results["exec -> first request, 100k (s)"] = big["first"]
        results["last answer -> exit, 100k (s)"] = big["tail"]
        print("zero-call re-run of the finished 100k run:")
        for with_out, name in (
            (True, "zero-call re-run, 100k, --out"),
            (False, "zero-call re-run, 100k, --json only"),
        ):
            again = rerun(folder, server, big, with_out)
            results[f"{name} (s)"], results[f"{name}: max RSS (MB)"] = again["wall"], again["rss_mb"]
            results[f"{name}: CPU (s)"] = again["cpu"]
            print(
                f"  {'--out FILE' if with_out else '--json   '}: {again['wall']:.2f} s ({again['cpu']:.2f} s of CPU), "
                f"max RSS {again['rss_mb']:.1f} MB, 0 judge calls"
            )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"(this script's own max RSS, the floor of every child's figure: {own:.1f} MB; load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores: wall times stretch with it, CPU times do not)"
    )
    print("\n| measure | before | now | target | ratio | |\n| --- | --- | --- | --- | --- | --- |")
    for name, (before, target) in TARGETS.items():
        value = results[name]
        print(
            f"| {name} | {before} | {value:.2f} | <= {target:g} | {value / target:.2f} | "
            f"{'ok' if value <= target else 'MISSES'} |"
        )
    print("\n" + "\n".join(f"{name}: {verdict(name, results[name])}" for name in TARGETS))


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    elif sys.argv[1:2] == ["setup"]:
        make_library(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        main()
