"""The lean HTTP/1.1 transport under the openai SDK (issue 15): the same responses and errors as httpx's
own transport for every way a server may frame an answer, keep-alive reuse, and when it is not used."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
import time

import openai
import pytest
from conftest import free_port

from geval_core.providers.http_transport import httpx_module, lean_http_client

BODY = json.dumps({"id": "c1", "choices": [], "model": "m"}).encode()


class RawServer:
    """A loopback server answering each request on a connection with the next raw answer of `answers`
    (bytes, or a callable(request bytes) -> bytes); None closes the connection without answering."""

    def __init__(self, answers, close_after: bool = False) -> None:
        self.answers, self.close_after = list(answers), close_after
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with contextlib.suppress(OSError), conn:
            while True:
                head = b""
                while (line := reader.readline()) not in (b"\r\n", b""):
                    head += line
                if not head:
                    return
                length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                               if h.lower().startswith(b"content-length")), 0)
                request = head + b"\r\n" + reader.read(length)
                answer = self.answers.pop(0) if self.answers else None
                close = self.close_after  # read before answering: the test may change it once it has the answer
                if answer is None:
                    return
                conn.sendall(answer(request) if callable(answer) else answer)
                if close:
                    return

    def close(self) -> None:
        self.sock.close()


def answer(body: bytes = BODY, status: bytes = b"200 OK", headers: bytes = b"") -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n" + headers + b"\r\n" + body)


def chunked(body: bytes) -> bytes:
    parts = [body[:10], body[10:]]
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"".join(f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\nX-Trailer: 1\r\n\r\n")


FRAMINGS = {
    "content-length": answer(),
    "chunked": chunked(BODY),
    "until close, HTTP/1.0": b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY,
    "gzip": answer(gzip.compress(BODY), headers=b"Content-Encoding: gzip\r\n"),
    "100 Continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + answer(),
    "no reason phrase": answer(status=b"200"),
}


def both_ways(raw: bytes, close_after: bool = False):
    """(lean, default) results of one POST through the SDK: (content bytes) or (error type, message)."""
    results = []
    for http_client in (lean_http_client, lambda url: None):
        server = RawServer([raw], close_after=close_after)
        client = openai.OpenAI(api_key="sk-test", base_url=server.url, max_retries=0, timeout=2.0,
                               http_client=http_client(server.url))
        try:
            results.append(client.post("/chat/completions", body={"a": 1}, cast_to=bytes))
        except openai.OpenAIError as exc:
            results.append((type(exc), str(exc), getattr(exc, "status_code", None)))
        finally:
            server.close()
    return results


@pytest.mark.parametrize("name", list(FRAMINGS))
def test_every_framing_reads_as_httpx_reads_it(name):
    lean, default = both_ways(FRAMINGS[name], close_after=name.startswith("until close"))
    assert lean == default == BODY


@pytest.mark.parametrize("raw", [answer(b'{"error": {"message": "slow down"}}', b"429 Too Many Requests",
                                        b"Retry-After: 3\r\n"),
                                 answer(b"{}", b"500 Internal Server Error"),
                                 b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"id\"",  # truncated
                                 b"NOT HTTP AT ALL\r\n\r\n", None])  # junk; closed without an answer
def test_status_and_broken_answers_raise_what_httpx_raises(raw):
    lean, default = both_ways(raw, close_after=True)
    assert lean == default and isinstance(lean, tuple)


def test_a_connection_is_kept_alive_and_a_stale_one_replaced():
    server = RawServer([answer()] * 3)
    client = openai.OpenAI(api_key="sk-test", base_url=server.url, max_retries=0, http_client=lean_http_client(server.url))
    try:
        for _ in range(3):
            assert client.post("/chat/completions", body={}, cast_to=bytes) == BODY
        assert server.connections == 1
        server.answers = [answer(headers=b"Connection: close\r\n"), answer()]
        client.post("/chat/completions", body={}, cast_to=bytes)  # the server says it closes: not reused
        assert client.post("/chat/completions", body={}, cast_to=bytes) == BODY and server.connections == 2
        server.answers, server.close_after = [answer(), answer()], True  # closes after answering, silently
        client.post("/chat/completions", body={}, cast_to=bytes)
        time.sleep(0.2)  # the connection now idles, closed by the server: found stale before use
        assert client.post("/chat/completions", body={}, cast_to=bytes) == BODY and server.connections == 3
    finally:
        server.close()


def test_timeouts_and_refused_connections_are_the_sdk_errors():
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = openai.OpenAI(api_key="sk-test", base_url=url, max_retries=0, http_client=lean_http_client(url))
    with pytest.raises(openai.APIConnectionError) as refused:
        client.post("/chat/completions", body={}, cast_to=bytes)
    assert isinstance(refused.value.__cause__, httpx_module().ConnectError)
    silent = RawServer([lambda request: threading.Event().wait(3) or b""])
    client = openai.OpenAI(api_key="sk-test", base_url=silent.url, max_retries=0, timeout=0.3,
                           http_client=lean_http_client(silent.url))
    try:
        with pytest.raises(openai.APITimeoutError):
            client.post("/chat/completions", body={}, cast_to=bytes)
    finally:
        silent.close()


def test_tls_proxies_and_the_default_api_keep_the_sdk_transport(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert lean_http_client("http://127.0.0.1:8080/v1") is not None
    assert lean_http_client(None) is None and lean_http_client("https://api.openai.com/v1") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    assert lean_http_client("http://127.0.0.1:8080/v1") is None  # httpx honours the proxy only without it
