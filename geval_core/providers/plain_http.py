"""Chat-completion POSTs to a plain-http OpenAI-compatible server (llama.cpp, vLLM, Ollama on a LAN or
loopback) through the public API of httpx (or its fork httpx2, which the openai SDK installs): one keep-alive
`Client` per judge, shared by the worker threads, and no SDK import at all.

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
from typing import Any
from urllib.parse import urlsplit


@functools.cache
def httpx_module() -> Any:
    """The httpx the SDKs install (its fork httpx2, or httpx), found without importing any SDK."""
    for name in ("httpx2", "httpx"):
        if importlib.util.find_spec(name) is not None:
            return importlib.import_module(name)
    raise ImportError("neither httpx2 nor httpx is installed (the openai SDK brings one of them)")


def is_plain_http(base_url: str | None) -> bool:
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
    """POST JSON bodies to `{base_url}{path}`; the answer's bytes, or one of the three errors above."""

    def __init__(self, base_url: str, path: str, api_key: str, timeout: float) -> None:
        httpx = httpx_module()
        self._timeout_errors, self._transport_errors = httpx.TimeoutException, httpx.TransportError
        self._url = base_url.rstrip("/") + path
        sent = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                "Accept": "application/json", "User-Agent": "geval-workbench"}
        self._client = httpx.Client(timeout=timeout, headers=sent,
                                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=256))

    def __call__(self, body: dict[str, Any]) -> bytes:
        try:
            response = self._client.post(self._url, content=json.dumps(body).encode("utf-8"))
        except self._timeout_errors as exc:
            raise ServerTimeout(str(exc) or "timed out") from None
        except self._transport_errors as exc:
            raise ServerUnreachable(f"{type(exc).__name__}: {exc}") from None
        if not response.is_success:
            raise ServerStatusError(response.status_code, response.text, response.headers)
        return response.content

    def close(self) -> None:
        """Close the connections."""
        self._client.close()
