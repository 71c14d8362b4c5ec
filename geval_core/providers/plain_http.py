"""Chat-completion POSTs to a plain-http OpenAI-compatible server (llama.cpp, vLLM, Ollama on a LAN or
loopback) through the public API of httpx (or its fork httpx2, which the openai SDK installs): a keep-alive
transport per worker thread, and no SDK import at all.

Importing the openai SDK takes about 0.8 s, and its `post` rebuilds request options, headers and URL on every
call; a plain POST of the same body, with the bearer key and timeout, is all such a server reads. Hosted APIs
(https) keep the official SDK.
"""

from __future__ import annotations

import contextlib
import functools
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

    Each worker thread sends through a keep-alive transport of its own (`httpx.HTTPTransport`, public API):
    one connection per thread, no pool lock shared by all of them and no per-request client machinery
    (cookies, auth flows, redirects, event hooks), none of which a plain POST to the user's server uses.
    That cuts the CPU httpx spends per call at 16 threads by a third. When the environment names an HTTP proxy, each
    thread gets an `httpx.Client`, which reads the proxy settings (NO_PROXY included) as it always has.
    """

    def __init__(self, base_url: str, path: str, api_key: str, timeout: float) -> None:
        httpx = self._httpx = httpx_module()
        self._timeout_errors, self._transport_errors = httpx.TimeoutException, httpx.TransportError
        self._url = httpx.URL(base_url.rstrip("/") + path)
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json", "User-Agent": "geval-workbench"}
        self._timeout = timeout
        self._extensions = {"timeout": httpx.Timeout(timeout).as_dict()}
        proxies = urllib.request.getproxies()
        self._proxied = bool(proxies.get("http") or proxies.get("all"))
        self._opened: dict[threading.Thread, Any] = {}  # each thread's transport or client, by thread
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> bytes:
        data = json.dumps(body).encode("utf-8")
        try:
            response = self._send(data)
            try:
                content = response.read()
            finally:
                response.close()
        except self._timeout_errors as exc:
            raise ServerTimeout(str(exc) or "timed out") from None
        except self._transport_errors as exc:
            raise ServerUnreachable(f"{type(exc).__name__}: {exc}") from None
        if not response.is_success:
            raise ServerStatusError(response.status_code, response.text, response.headers)
        return content

    def _send(self, data: bytes) -> Any:
        """The response, through this thread's own transport (its body not read yet) or client."""
        thread = threading.current_thread()
        sender = self._opened.get(thread)
        if sender is None:
            sender = self._open(thread)
        if self._proxied:
            return sender.post(self._url, content=data)
        request = self._httpx.Request("POST", self._url, headers=self._headers, content=data,
                                      extensions=self._extensions)
        return sender.handle_request(request)

    def _open(self, thread: threading.Thread) -> Any:
        httpx = self._httpx
        if self._proxied:
            opened = httpx.Client(timeout=self._timeout, headers=self._headers)
        else:  # plain http: no TLS, so no certificate store to load per thread
            opened = httpx.HTTPTransport(verify=False, trust_env=False)
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
