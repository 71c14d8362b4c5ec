"""Chat-completion POSTs to a plain-http OpenAI-compatible server (llama.cpp, vLLM, Ollama on a LAN or
loopback) through the public API of the httpx client the openai SDK itself uses (httpx, or its fork httpx2):
one keep-alive `Client` per judge, shared by the worker threads.

The SDK's `post` rebuilds its request options, headers and URL on every call (about 1 ms of CPU, more than
the rest of a judge call); a plain POST of the same body, with the same bearer key and timeout, is all such a
server reads. Hosted APIs (https) keep the SDK's own client.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
from typing import Any
from urllib.parse import urlsplit


@functools.cache
def httpx_module() -> Any:
    """The httpx module the installed openai SDK talks through (httpx, or its fork httpx2)."""
    from openai import DefaultHttpxClient

    for cls in DefaultHttpxClient.__mro__:
        root = cls.__module__.split(".")[0]
        if cls.__name__ == "Client" and root in ("httpx", "httpx2"):
            return importlib.import_module(root)
    raise ImportError("the openai SDK's HTTP client is neither httpx nor httpx2")


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

    def __init__(self, base_url: str, path: str, api_key: str, timeout: float, headers: Any = ()) -> None:
        httpx = httpx_module()
        self._timeout_errors, self._transport_errors = httpx.TimeoutException, httpx.TransportError
        self._url = base_url.rstrip("/") + path
        # The SDK client's own default headers (its public `default_headers`: user agent, platform, ...), so a
        # server sees what `create` sends; values the SDK leaves out are not strings.
        sent = {k: v for k, v in dict(headers).items() if isinstance(v, str)}
        sent.update({"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"})
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
