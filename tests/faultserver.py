"""A loopback OpenAI-compatible chat-completions server whose answer to each request can be scripted.

Behaviours: "ok" (answer with logprobs), "nologprobs", "429" (with Retry-After), "500", "503", "401",
"hang" (wait past the client's timeout), "malformed" (200 with broken JSON), "close" (the connection
ends with no answer), "truncated" (the body stops half way), "empty" (no choices), "nan" (a NaN
log-probability). `script` picks one per request: a list
(request index -> behaviour, "ok" past its end) or a function (index, body) -> behaviour. `delay`
seconds are waited before every answer. Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The design's worked example: renormalised weighted score 3.1 / 0.95 = 3.263..., raw 3.1.
WORKED_EXAMPLE = {"3": 0.6, "4": 0.3, "2": 0.05, "The": 0.05}

Script = list[str] | Callable[[int, dict], str] | None


def sampled_tokens(distribution: dict[str, float], n: int) -> list[str]:
    """n deterministic 'samples': the token whose cumulative probability covers (i + 0.5) / n."""
    ranked = sorted(distribution.items(), key=lambda kv: -kv[1])
    out = []
    for i in range(n):
        target, cum = (i + 0.5) / n, 0.0
        for token, p in ranked:
            cum += p
            if cum >= target:
                out.append(token)
                break
        else:
            out.append(ranked[-1][0])
    return out


def completion(body: dict, distribution: dict[str, float], logprobs: bool, model: str) -> dict:
    """A chat.completion body in the documented shape; n choices, the logprob top list at position 0."""
    n = int(body.get("n") or 1)
    want_logprobs = logprobs and body.get("logprobs")
    top_k = int(body.get("top_logprobs") or 0)
    ranked = sorted(distribution.items(), key=lambda kv: -kv[1])
    greedy = float(body.get("temperature") or 0.0) == 0.0
    tokens = [ranked[0][0]] * n if greedy else sampled_tokens(distribution, n)
    choices = []
    for i, token in enumerate(tokens):
        lp = None
        if want_logprobs:
            top = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in ranked[:top_k]]
            lp = {
                "content": [
                    {
                        "token": token,
                        "logprob": math.log(distribution[token]),
                        "bytes": list(token.encode()),
                        "top_logprobs": top,
                    }
                ],
                "refusal": None,
            }
        choices.append(
            {
                "index": i,
                "finish_reason": "stop",
                "logprobs": lp,
                "message": {"role": "assistant", "content": token, "refusal": None},
            }
        )
    prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fault",
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": n,
            "total_tokens": prompt_chars // 4 + n,
        },
    }


class FaultServer:
    """Start with `with FaultServer(...) as server:`; point clients at `server.base_url`."""

    def __init__(
        self,
        script: Script = None,
        delay: float = 0.0,
        hang_s: float = 30.0,
        retry_after: str = "0.05",
        distribution: dict | Callable[[dict], dict] | None = None,
        model: str = "fault-model-2024-01-01",
    ) -> None:
        self.script, self.delay, self.hang_s, self.retry_after = script, delay, hang_s, retry_after
        self.distribution = distribution or WORKED_EXAMPLE
        self.model = model
        self.lock = threading.Lock()
        self.log: list[tuple[str, dict]] = []  # (behaviour, request body) in arrival order
        self.authorizations: set[str] = set()  # Authorization headers seen (memory only, for key tests)
        self.released = threading.Event()  # set on stop so hanging handlers end
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def count(self) -> int:
        """Chat-completion requests received so far."""
        with self.lock:
            return len(self.log)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (…/v1)."""
        assert self.httpd is not None, "server not started"
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def behaviour(self, index: int, body: dict) -> str:
        """What to do with the index-th request."""
        if callable(self.script):
            return self.script(index, body)
        if self.script and index < len(self.script):
            return self.script[index]
        return "ok"

    def record(self, body: dict) -> str:
        """Log a request and pick its behaviour."""
        with self.lock:
            index = len(self.log)
            self.log.append(("?", body))
        behaviour = self.behaviour(index, body)
        with self.lock:
            self.log[index] = (behaviour, body)
        return behaviour

    def start(self) -> FaultServer:
        """Bind a free loopback port and serve from a daemon thread."""
        handler = type("Handler", (_Handler,), {"fault": self})
        ThreadingHTTPServer.request_queue_size = 128  # 16+ clients connect at once in the bench
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Release hanging requests and shut down."""
        self.released.set()
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    # Headers and body go out in separate writes; with Nagle on, the client's delayed ACK would add
    # ~40 ms to every answer and the server would not wait the `delay` it is told to.
    disable_nagle_algorithm = True
    fault: FaultServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the answer came

    def do_GET(self) -> None:
        self._send(
            200,
            json.dumps({"object": "list", "data": [{"id": self.fault.model, "object": "model"}]}).encode(),
        )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        fault = self.fault
        with fault.lock:
            fault.authorizations.add(self.headers.get("Authorization", ""))
        behaviour = fault.record(body)
        if fault.delay:
            time.sleep(fault.delay)
        if behaviour == "hang":
            fault.released.wait(fault.hang_s)
            behaviour = "ok"  # too late: the client has given up
        if behaviour == "429":
            error = {
                "error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
            }
            self._send(429, json.dumps(error).encode(), {"Retry-After": fault.retry_after})
        elif behaviour == "500":
            self._send(500, b'{"error": {"message": "The server had an error", "type": "server_error"}}')
        elif behaviour in ("503", "401"):
            self._send(
                int(behaviour),
                json.dumps({"error": {"message": f"status {behaviour}", "type": "fault"}}).encode(),
            )
        elif behaviour == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "mess')
        elif behaviour == "close":
            self.close_connection = True  # no answer at all: the connection just ends
            self.connection.shutdown(2)
        elif behaviour == "truncated":
            payload = json.dumps(
                completion(
                    body,
                    fault.distribution if isinstance(fault.distribution, dict) else WORKED_EXAMPLE,
                    True,
                    fault.model,
                )
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])  # the body stops half way, then the connection
            self.close_connection = True
            self.connection.shutdown(2)
        elif behaviour == "empty":
            payload = completion(body, WORKED_EXAMPLE, True, fault.model)
            self._send(200, json.dumps({**payload, "choices": []}).encode())
        elif behaviour == "nan":
            payload = completion(body, WORKED_EXAMPLE, True, fault.model)
            payload["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] = float("nan")
            self._send(200, json.dumps(payload).encode())  # Python writes NaN, as a buggy server might
        else:
            dist = fault.distribution(body) if callable(fault.distribution) else fault.distribution
            payload = completion(body, dist, behaviour != "nologprobs", fault.model)
            self._send(200, json.dumps(payload).encode())
