"""A lean HTTP/1.1 transport under the openai SDK's httpx client, for plain-http judge servers.

httpcore and h11 cost ~0.5 ms of CPU per judge call, as much as a loopback server takes to answer;
at 64 calls in flight that CPU, under one GIL, is what the run waits for. This transport speaks only
what a JSON API needs (one request, one whole answer, keep-alive) over pooled sockets, below the SDK's
own httpx client (its documented `http_client` hook), so the SDK still builds requests, adds the key
and turns every status and transport error into its own exception types. TLS and proxies stay with
the SDK's default transport: `lean_http_client` returns None for them.
"""

from __future__ import annotations

import functools
import importlib
import os
import select
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

KEEPALIVE_S = 5.0  # as httpcore: servers drop idle connections after a few seconds
MAX_IDLE = 100  # the SDK's own max_keepalive_connections
MAX_LINE = 65_536
MAX_HEADERS = 200
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


@functools.cache
def httpx_module() -> Any:
    """The httpx module the installed openai SDK talks through (httpx, or its fork httpx2)."""
    from openai import DefaultHttpxClient

    for cls in DefaultHttpxClient.__mro__:
        root = cls.__module__.split(".")[0]
        if cls.__name__ == "Client" and root in ("httpx", "httpx2"):
            return importlib.import_module(root)
    raise ImportError("the openai SDK's HTTP client is neither httpx nor httpx2")


def lean_http_client(base_url: str | None) -> Any:
    """The SDK's default httpx client over the lean transport, or None (the SDK's own) when the server
    is not plain http or a proxy may apply (httpx honours proxy variables only without a transport)."""
    if not base_url or urlsplit(base_url).scheme != "http":
        return None
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in PROXY_VARIABLES):
        return None
    from openai import DefaultHttpxClient

    return DefaultHttpxClient(transport=lean_transport())


def lean_transport() -> Any:
    """A new LeanTransport, a subclass of the SDK's httpx BaseTransport."""
    return _transport_class(httpx_module())()


@functools.cache
def _transport_class(httpx: Any) -> type:
    return type("LeanTransport", (_Lean, httpx.BaseTransport), {"httpx": httpx})


class _Connection:
    """One keep-alive socket and its buffered reader."""

    __slots__ = ("reader", "sock", "used")

    def __init__(self, host: str, port: int, timeout: float | None) -> None:
        self.sock = socket.create_connection((host, port), timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers and body go out at once
        self.reader = self.sock.makefile("rb")
        self.used = time.monotonic()

    def stale(self) -> bool:
        """True when the server closed it (readable while idle means EOF or junk) or it idled too long."""
        if time.monotonic() - self.used > KEEPALIVE_S:
            return True
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class _Lean:
    """handle_request(request) -> response over pooled keep-alive sockets; errors as httpx's types."""

    httpx: Any

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: Any) -> Any:
        httpx, url = self.httpx, request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"the lean transport speaks plain http, not {url.scheme!r}")
        timeouts = request.extensions.get("timeout") or {}
        key = (url.host, url.port or 80)
        head = b"".join([request.method.encode("ascii"), b" ", url.raw_path, b" HTTP/1.1\r\n",
                         *(name + b": " + value + b"\r\n" for name, value in request.headers.raw), b"\r\n"])
        conn = self._checkout(key, timeouts.get("connect"), request)
        try:
            _send(httpx, conn, head + request.read(), timeouts.get("write"), request)
            status, reason, headers, body, keep = _receive(httpx, conn, timeouts.get("read"), request)
        except BaseException:
            conn.close()
            raise
        if keep:
            self._checkin(key, conn)
        else:
            conn.close()
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(body),
                              extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason})

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def _checkout(self, key: tuple[str, int], timeout: float | None, request: Any) -> _Connection:
        while True:
            with self._lock:
                conns = self._idle.get(key)
                conn = conns.pop() if conns else None
            if conn is None:
                break
            if not conn.stale():
                return conn
            conn.close()
        try:
            return _Connection(*key, timeout)
        except TimeoutError as exc:
            raise self.httpx.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
        except OSError as exc:
            raise self.httpx.ConnectError(str(exc), request=request) from exc

    def _checkin(self, key: tuple[str, int], conn: _Connection) -> None:
        conn.used = time.monotonic()
        with self._lock:
            conns = self._idle.setdefault(key, [])
            if len(conns) < MAX_IDLE:
                conns.append(conn)
                return
        conn.close()


def _send(httpx: Any, conn: _Connection, data: bytes, timeout: float | None, request: Any) -> None:
    try:
        conn.sock.settimeout(timeout)
        conn.sock.sendall(data)
    except TimeoutError as exc:
        raise httpx.WriteTimeout(str(exc) or "write timed out", request=request) from exc
    except OSError as exc:
        raise httpx.WriteError(str(exc), request=request) from exc


def _receive(httpx: Any, conn: _Connection, timeout: float | None,
             request: Any) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes, bool]:
    """(status, reason, headers, body, keep the connection) of one answer; 1xx answers are skipped."""
    try:
        conn.sock.settimeout(timeout)
        while True:
            status, reason, version, headers = _head(httpx, conn.reader, request)
            if status >= 200:
                break
        fields = {name.lower(): value for name, value in headers}
        body, whole = _body(httpx, conn.reader, status, fields, request)
    except TimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "read timed out", request=request) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc), request=request) from exc
    connection = fields.get(b"connection", b"").lower()
    keep = whole and (b"close" not in connection) and (version == b"HTTP/1.1" or b"keep-alive" in connection)
    return status, reason, headers, body, keep


def _head(httpx: Any, reader: Any, request: Any) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
    line = reader.readline(MAX_LINE)
    if not line:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
    parts = line.rstrip(b"\r\n").split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"not an HTTP status line: {line[:80]!r}", request=request)
    headers = []
    while (line := reader.readline(MAX_LINE)) not in (b"\r\n", b"\n"):
        name, colon, value = line.partition(b":")
        if not colon or len(headers) >= MAX_HEADERS:
            raise httpx.RemoteProtocolError(f"malformed response header {line[:80]!r}", request=request)
        headers.append((name.strip(), value.strip()))
    return int(parts[1]), parts[2].strip() if len(parts) > 2 else b"", parts[0], headers


def _body(httpx: Any, reader: Any, status: int, fields: dict[bytes, bytes], request: Any) -> tuple[bytes, bool]:
    """(the body, whether the connection can carry another request)."""
    if status in (204, 304) or request.method == "HEAD":
        return b"", True
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        return _chunked(httpx, reader, request), True
    length = fields.get(b"content-length")
    if length is None:
        return reader.read(), False  # the body ends when the server closes the connection
    if not length.strip().isdigit():
        raise httpx.RemoteProtocolError(f"bad Content-Length {length[:40]!r}", request=request)
    body = reader.read(int(length))
    if len(body) < int(length):
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body "
                                        f"(received {len(body)} bytes, expected {int(length)})", request=request)
    return body, True


def _chunked(httpx: Any, reader: Any, request: Any) -> bytes:
    parts = []
    while True:
        line = reader.readline(MAX_LINE)
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise httpx.RemoteProtocolError(f"bad chunk size {line[:40]!r}", request=request) from None
        if size == 0:
            while reader.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):
                pass  # trailers: nothing a judge needs
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) < size or reader.readline(MAX_LINE) not in (b"\r\n", b"\n"):
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body",
                                            request=request)
        parts.append(chunk)
