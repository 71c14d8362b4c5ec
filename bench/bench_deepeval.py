"""DeepEval's GEval against the same loopback server as `geval score`, for bench_throughput.py (issue 15).

Two modes, each a process of its own:
- `python bench/bench_deepeval.py serve DELAY` (the workbench's Python): a loopback OpenAI-compatible server
  that waits DELAY seconds and answers both clients: a one-token rating with top log-probabilities for
  the workbench (it sends max_tokens), and for DeepEval (it sends none) the JSON reply its GEval parses,
  {"reason": ..., "score": N}, with top_logprobs at every token, as a real model gives them. It prints
  its base URL, then serves until killed; GET /stats says how many completions it answered.
- `python bench/bench_deepeval.py run URL ITEMS CONCURRENCY` (DeepEval's Python, only stdlib and deepeval):
  GEval with the workbench's evaluation steps (so no steps are generated), one metric per item, at most
  CONCURRENCY `a_measure` calls at once on one event loop; prints one JSON line with the seconds taken.
`deepeval()` runs that second mode from bench_throughput.py, with the Python GEVAL_DEEPEVAL_PYTHON names.
The items are the workbench bench's own texts. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

KEY = "sk-bench-not-a-real-key"
STEPS = ["Read the document.", "Read the summary.", "Assign a score."]
CRITERIA = "Coherence: the collective quality of all sentences in the summary."
REASON = (
    "The summary follows the order of the document and its sentences build on each other, so it reads "
    "as one account; one transition is abrupt, which keeps it from the top of the scale."
)
SCORES = {"7": 0.55, "8": 0.3, "6": 0.1, "9": 0.05}  # DeepEval's default scale is 0-10
FILLER = [
    " the",
    " a",
    " and",
    " of",
    ",",
    ".",
    " to",
    " in",
    " is",
    " it",
    " that",
    " as",
    " with",
    " for",
    " on",
    " was",
    " by",
    " at",
    " an",
    " be",
    " this",
]


def item_texts(k: int) -> tuple[str, str]:
    """(document, summary) of bench item k, as bench_throughput writes them."""
    return f"Document {k}. " * 40, f"Summary of document {k}."


# ---- the orchestration, from bench_throughput.py ------------------------------------------------


def deepeval(folder: Path, server: Any, items: int, concurrency: int) -> dict[str, Any] | str:
    """For bench_throughput.py (the workbench's Python): DeepEval's GEval over `items` items (this script's
    `run`) with the Python GEVAL_DEEPEVAL_PYTHON names, against `server` (its base_url and its count of
    answers): its figures, or why it was skipped."""
    python = os.environ.get("GEVAL_DEEPEVAL_PYTHON")
    if not python:
        return (
            "GEVAL_DEEPEVAL_PYTHON is not set (the Python of a separate venv with deepeval, e.g. "
            "python3 -m venv /tmp/deepeval-venv && /tmp/deepeval-venv/bin/pip install deepeval)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(folder), "DEEPEVAL_TELEMETRY_OPT_OUT": "YES"}
    try:
        probe = subprocess.run(
            [python, "-c", "from importlib.metadata import version; print(version('deepeval'))"],
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except OSError as exc:
        return f"GEVAL_DEEPEVAL_PYTHON={python} cannot be run ({exc})"
    if probe.returncode != 0:
        return f"deepeval is not installed for GEVAL_DEEPEVAL_PYTHON={python}"
    before = server.count
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), "run", server.base_url, str(items), str(concurrency)],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        return f"deepeval {probe.stdout.strip()} failed: {proc.stderr.strip()[-400:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        **result,
        "version": probe.stdout.strip(),
        "wall": wall,
        "process_cpu": cpu,
        "calls": server.count - before,
    }


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---- the server ---------------------------------------------------------------------------------


def deepeval_reply(model: str, top: int) -> dict:
    """A chat completion whose content is GEval's JSON, with `top` alternatives at every token."""
    content = json.dumps({"reason": REASON, "score": int(max(SCORES, key=SCORES.get))}, indent=2)
    tokens = re.findall(r"\s?[A-Za-z]+|\d|\s+|[^\w\s]", content)  # the rating digit: a token of its own
    positions = []
    for token in tokens:
        if token in SCORES:
            alternatives = [(t, math.log(p)) for t, p in SCORES.items()]
        else:
            alternatives = [(token, math.log(0.9))]
        alternatives += [(f, math.log(0.1 / top)) for f in FILLER if f != token][
            : max(0, top - len(alternatives))
        ]
        chosen = next(lp for t, lp in alternatives if t == token)
        positions.append(
            {
                "token": token,
                "logprob": chosen,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives[:top]
                ],
            }
        )
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_bench",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": {"content": positions, "refusal": None},
                "message": {"role": "assistant", "content": content, "refusal": None},
            }
        ],
        "usage": {"prompt_tokens": 400, "completion_tokens": len(tokens), "total_tokens": 400 + len(tokens)},
    }


def serve(delay: float) -> None:
    """Serve until killed (see the module docstring)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from faultserver import WORKED_EXAMPLE, completion

    answers: dict[
        tuple, bytes
    ] = {}  # answers depend on the options only: built once each, the server stays light
    count = [0]
    lock = threading.Lock()

    def answer(body: dict) -> bytes:
        key = (
            body.get("model"),
            "max_tokens" in body or "max_completion_tokens" in body,
            body.get("n"),
            body.get("logprobs"),
            body.get("top_logprobs"),
            body.get("temperature"),
        )
        if key not in answers:
            model = body.get("model") or "bench-model"
            reply = (
                completion(body, WORKED_EXAMPLE, True, model)
                if key[1]
                else deepeval_reply(model, int(body.get("top_logprobs") or 0))
            )
            answers[key] = json.dumps(reply).encode()
        return answers[key]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive
        disable_nagle_algorithm = True  # headers and body in separate writes: no delayed-ACK stall

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
                self._send(json.dumps({"count": count[0]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            with lock:
                count[0] += 1
            time.sleep(delay)
            self._send(answer(body))

    ThreadingHTTPServer.request_queue_size = 256  # 64+ clients connect at once
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    print(f"http://127.0.0.1:{httpd.server_address[1]}/v1", flush=True)
    httpd.serve_forever()


# ---- DeepEval's side ------------------------------------------------------------------------------


def run(url: str, items: int, concurrency: int) -> None:
    """GEval over `items` items at `concurrency`; one JSON line: items, seconds, cpu_s, mean score, errors."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
    import asyncio

    from deepeval.metrics import GEval
    from deepeval.test_case import LLMTestCase

    try:  # the names of DeepEval 4; older releases only have the ones below
        from deepeval.models import OpenAIModel
        from deepeval.test_case import SingleTurnParams as Params
    except ImportError:
        from deepeval.models import GPTModel as OpenAIModel
        from deepeval.test_case import LLMTestCaseParams as Params

    model = OpenAIModel(model="gpt-4o", api_key=KEY, base_url=url, temperature=0)
    params = [Params.INPUT, Params.ACTUAL_OUTPUT]
    cases = [LLMTestCase(input=doc, actual_output=summary) for doc, summary in map(item_texts, range(items))]
    metrics = [
        GEval(
            name="Coherence",
            criteria=CRITERIA,
            evaluation_steps=STEPS,
            evaluation_params=params,
            model=model,
            async_mode=True,
        )
        for _ in cases
    ]

    async def measure_all() -> list:
        gate = asyncio.Semaphore(concurrency)

        async def one(metric, case):
            async with gate:
                try:
                    return await metric.a_measure(case, _show_indicator=False)
                except Exception as exc:  # counted, not fatal: the figure says how many failed
                    return exc

        return await asyncio.gather(*(one(m, c) for m, c in zip(metrics, cases, strict=True)))

    cpu, start = time.process_time(), time.perf_counter()
    scores = asyncio.run(measure_all())
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    good = [s for s in scores if isinstance(s, (int, float))]
    errors = [repr(s)[:200] for s in scores if not isinstance(s, (int, float))]
    print(
        json.dumps(
            {
                "items": items,
                "seconds": seconds,
                "cpu_s": cpu,
                "errors": len(errors),
                "first_error": errors[0] if errors else None,
                "mean_score": sum(good) / len(good) if good else None,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(float(sys.argv[2]))
    elif sys.argv[1:2] == ["run"]:
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        raise SystemExit("usage: bench_deepeval.py serve DELAY | run URL ITEMS CONCURRENCY")
