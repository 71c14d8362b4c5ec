"""Chat-completion POSTs to a plain-http OpenAI-compatible server (llama.cpp, vLLM, Ollama on a LAN or
loopback): one keep-alive `http.client` connection per worker thread (the standard library's client), and no SDK
import at all. When the environment names an HTTP proxy, httpx's client (the one the openai SDK installs) sends
instead: it reads the proxy settings, NO_PROXY included.

Importing the openai SDK takes about 0.8 s, and its `post` rebuilds request options, headers and URL on every
call; a plain POST of the same body, with the bearer key and timeout, is all such a server reads. Hosted APIs
(https) keep the official SDK.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import importlib
import importlib.util
import json
import threading
import urllib.request
from typing import Any, TypeGuard
from urllib.parse import urlsplit


@functools.cache
def httpx_module() -> Any:
    """The httpx the SDKs install (its fork httpx2, or httpx), found without importing any SDK."""
    for name in ("httpx2", "httpx"):
        if importlib.util.find_spec(name) is not None:
            return importlib.import_module(name)
    raise ImportError("neither httpx2 nor httpx is installed (the openai SDK brings one of them)")


def is_plain_http(base_url: str | None) -> TypeGuard[str]:
    """True for an http:// server address (no TLS: nothing the SDK's client adds is needed)."""
    return bool(base_url) and urlsplit(base_url).scheme == "http"


class ServerStatusError(Exception):
    """A status outside 2xx, with what the OpenAI error body says (message, code, param) and the headers."""

    def __init__(self, status_code: int, text: str, headers: Any) -> None:
        error: Any = None
        with contextlib.suppress(ValueError, AttributeError):  # a body that is not an OpenAI error object
            body = json.loads(text)
            error = body.get("error", body)
        error = error if isinstance(error, dict) else {}
        said = error.get("message")
        # Worded as the SDK words its status errors, so a message reads the same whichever client sent it.
        self.message = f"Error code: {status_code}" + (f" - {said}" if isinstance(said, str) and said else "")
        self.status_code, self.headers = status_code, headers
        self.code, self.param = error.get("code"), error.get("param")
        super().__init__(self.message)


class ServerTimeout(Exception):
    """The server did not answer within the timeout."""


class ServerUnreachable(Exception):
    """The connection could not be made, or ended without an answer."""


class PlainHttpPost:
    """POST JSON bodies to `{base_url}{path}`; the answer's bytes, or one of the three errors above.

    Each worker thread sends through a keep-alive `http.client.HTTPConnection` of its own: no pool lock shared
    by all of them and none of the per-request machinery of a full client (cookies, auth flows, redirects, hooks)
    that a plain POST to the user's server never uses. A connection the server closed while idle is opened again
    and the request sent once more (the request never reached the server). With an HTTP proxy in the environment,
    each thread gets an `httpx.Client`, which reads the proxy settings as it always has.
    """

    def __init__(self, base_url: str, path: str, api_key: str, timeout: float) -> None:
        parts = urlsplit(base_url.rstrip("/") + path)
        self._host, self._port = parts.hostname or "localhost", parts.port or 80
        self._target = parts.path + (f"?{parts.query}" if parts.query else "")
        self._url = parts.geturl()
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "geval-workbench",
        }
        self._timeout = timeout
        proxies = urllib.request.getproxies()
        self._proxied = bool(proxies.get("http") or proxies.get("all")) and not urllib.request.proxy_bypass(
            parts.netloc
        )
        self._opened: dict[threading.Thread, Any] = {}  # each thread's connection or client, by thread
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> bytes:
        data = json.dumps(body).encode("utf-8")
        if self._proxied:
            return self._through_proxy(data)
        status, headers, content = self._exchange(data)
        if not 200 <= status < 300:
            raise ServerStatusError(status, content.decode("utf-8", errors="replace"), headers)
        return content

    def _exchange(self, data: bytes) -> tuple[int, Any, bytes]:
        """(status, headers, body) through this thread's connection; a connection the server had closed while
        idle is replaced once (nothing was answered on it)."""
        connection, reused = self._connection()
        while True:
            try:
                return _round_trip(connection, self._target, data, self._headers)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                connection.close()  # http.client opens it again at the next request
                if not reused:
                    raise ServerUnreachable(f"{type(exc).__name__}: {exc}") from None
                reused = (
                    False  # the server closed an idle keep-alive connection: one more try, freshly opened
                )
            except TimeoutError as exc:
                connection.close()
                raise ServerTimeout(str(exc) or "timed out") from None
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                raise ServerUnreachable(f"{type(exc).__name__}: {exc}") from None

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it carried a request before (a fresh one is opened lazily)."""
        thread = threading.current_thread()
        connection = self._opened.get(thread)
        if connection is None:
            connection = self._open(
                thread, lambda: http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            )
            return connection, False
        return connection, connection.sock is not None

    def _through_proxy(self, data: bytes) -> bytes:
        """The POST through this thread's httpx client, which sends it to the environment's proxy."""
        httpx = httpx_module()
        thread = threading.current_thread()
        client = self._opened.get(thread) or self._open(
            thread, lambda: httpx.Client(timeout=self._timeout, headers=self._headers)
        )
        try:
            response = client.post(self._url, content=data)
        except httpx.TimeoutException as exc:
            raise ServerTimeout(str(exc) or "timed out") from None
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"{type(exc).__name__}: {exc}") from None
        if not response.is_success:
            raise ServerStatusError(response.status_code, response.text, response.headers)
        return response.content

    def _open(self, thread: threading.Thread, make: Any) -> Any:
        opened = make()
        with self._lock:
            # A judge outlives a run's worker threads (a panel, the Python API): close what ended threads left.
            ended = [self._opened.pop(other) for other in list(self._opened) if not other.is_alive()]
            self._opened[thread] = opened
        for each in ended:
            each.close()
        return opened

    def close(self) -> None:
        """Close the connections of every thread."""
        with self._lock:
            opened, self._opened = list(self._opened.values()), {}
        for each in opened:
            each.close()


def _round_trip(
    connection: http.client.HTTPConnection, target: str, data: bytes, headers: dict[str, str]
) -> tuple[int, Any, bytes]:
    """One request and its whole answer on `connection` (left open for the next when the server keeps it)."""
    connection.request("POST", target, body=data, headers=headers)
    response = connection.getresponse()
    content = response.read()
    return response.status, response.headers, content
