"""The OpenAI judge reads answers with json.loads (issue 15): the same JudgeReply, the same errors, as the
SDK's typed path (`chat.completions.create` and its pydantic models) on the same bodies."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import threading
import urllib.request

import pytest
from conftest import JsonStub
from faultserver import WORKED_EXAMPLE, FaultServer, completion
from judge_fakes import FakeJudges
from typed_judge import TypedJudge, sdk_completion

from geval_core.errors import JudgeError, RetryableJudgeError
from geval_core.providers.openai_judge import Completion, OpenAIJudge, completion_from_json
from geval_core.types import JudgeReply, JudgeRequest

KEY = "sk-test-fastparse-7c1d9e0b2a"
MESSAGES = ({"role": "user", "content": "Rate the summary from 1 to 5.\n\n- Coherence:"},)


def sdk_parse(body: dict) -> Completion:
    """The SDK's own reading of a body: ChatCompletion built the way `create()` builds it (no validation)."""
    from openai.types.chat import ChatCompletion

    return sdk_completion(ChatCompletion.construct(**copy.deepcopy(body)))


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN, through dataclasses, dicts, lists and tuples."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a) is type(b) and same(
            [getattr(a, f.name) for f in dataclasses.fields(a)],
            [getattr(b, f.name) for f in dataclasses.fields(b)],
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def without_added_nones(dumped, sent):
    """The SDK's model_dump minus the keys it added as None (fields the server did not send)."""
    if isinstance(dumped, dict) and isinstance(sent, dict):
        return {
            k: without_added_nones(v, sent.get(k)) for k, v in dumped.items() if k in sent or v is not None
        }
    if isinstance(dumped, list) and isinstance(sent, list):
        return [without_added_nones(d, s) for d, s in zip(dumped, sent, strict=True)]
    return dumped


def assert_same_reading(body: dict) -> None:
    fast, slow = completion_from_json(json.dumps(body).encode()), sdk_parse(body)
    assert same(fast.choices, slow.choices)
    assert fast.usage == slow.usage and fast.model == slow.model
    assert same(fast.body, without_added_nones(slow.body, body))


def assert_same_reply(fast: JudgeReply, slow: JudgeReply) -> None:
    assert same(fast.choices, slow.choices)
    assert (fast.model_version, fast.usage) == (slow.model_version, slow.usage)
    slow_raw, fast_raw = slow.raw.get("responses", [slow.raw]), fast.raw.get("responses", [fast.raw])
    # "created" is the server's clock: two calls can straddle a second.
    fast_raw, slow_raw = [{**r, "created": 0} for r in fast_raw], [{**r, "created": 0} for r in slow_raw]
    assert same(fast_raw, [without_added_nones(s, f) for s, f in zip(slow_raw, fast_raw, strict=True)])


# ---- bodies: the fault server's shapes and the edges the SDK's lenient models accept --------------


def _edges() -> dict[str, dict]:
    ok = completion(
        {"n": 1, "logprobs": True, "top_logprobs": 20, "messages": []}, WORKED_EXAMPLE, True, "m-1"
    )
    nan = copy.deepcopy(ok)
    nan["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] = math.nan
    ints = copy.deepcopy(ok)
    ints["choices"][0]["logprobs"]["content"][0]["logprob"] = 0
    bare = {
        "id": "x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}}],
        "model": "m",
    }
    return {
        "ok": ok,
        "sampled n=3": completion({"n": 3, "temperature": 1.0, "messages": []}, WORKED_EXAMPLE, False, "m-1"),
        "nologprobs": completion({"n": 1, "messages": []}, WORKED_EXAMPLE, False, "m-1"),
        "nan": nan,
        "int logprob": ints,
        "empty choices": {**ok, "choices": []},
        "no usage, no fingerprint": bare,
        "usage null": {**bare, "usage": None},
        "usage partial": {**bare, "usage": {"prompt_tokens": 7}},
        "cached tokens": {**ok, "usage": {**ok["usage"], "prompt_tokens_details": {"cached_tokens": 1920}}},
        "prompt details null": {**bare, "usage": {"prompt_tokens": 7, "prompt_tokens_details": None}},
        "message null": {**bare, "choices": [{"index": 0, "message": None}]},
        "content null": {
            **bare,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None}}],
        },
        "logprobs content null": {**bare, "choices": [{**bare["choices"][0], "logprobs": {"content": None}}]},
        "top_logprobs null": {
            **bare,
            "choices": [
                {
                    **bare["choices"][0],
                    "logprobs": {"content": [{"token": "4", "logprob": -0.1, "top_logprobs": None}]},
                }
            ],
        },
        "extra fields": {
            **ok,
            "service_tier": "default",
            "x_vendor": {"a": [1, 2]},
            "usage": {**ok["usage"], "completion_tokens_details": {"reasoning_tokens": 0}},
        },
    }


EDGES = _edges()


@pytest.mark.parametrize("name", list(EDGES))
def test_fast_reading_equals_the_sdk_models(name):
    assert_same_reading(EDGES[name])


@pytest.mark.parametrize(
    "content",
    [
        b'{"choices": [ not json',
        b"[1, 2]",
        b'"text"',
        b'{"choices": [{"message": "4"}]}',
        b'{"choices": [{"logprobs": {"content": [{}]}}]}',
    ],
)
def test_a_body_that_is_no_completion_is_a_value_error(content):
    with pytest.raises(ValueError):
        completion_from_json(content)


# ---- whole replies and errors: the judge against the fault server, both ways ----------------------


def ask(**options) -> JudgeRequest:
    return JudgeRequest(MESSAGES, "fault-model", **{"max_tokens": 5, "top_logprobs": 20, **options})


def outcome(judge: OpenAIJudge, request: JudgeRequest):
    """The reply, or (error type, message, retry_after, status)."""
    try:
        return judge.judge(request)
    except JudgeError as exc:
        return type(exc), str(exc), getattr(exc, "retry_after", None), exc.status


REQUESTS = {
    "logprobs": ask(),
    "sampled": ask(logprobs=False, top_logprobs=0, temperature=1.0, n=3),
    "logprobs n=2 seed": ask(n=2, seed=3),
}


@pytest.mark.parametrize(
    "behaviour",
    [
        "ok",
        "nologprobs",
        "nan",
        "empty",
        "malformed",
        "truncated",
        "close",
        "429",
        "500",
        "503",
        "401",
        "hang",
    ],
)
def test_judge_replies_and_errors_equal_the_sdk_path(behaviour):
    with FaultServer(lambda index, body: behaviour, hang_s=2.0) as server:
        fast = OpenAIJudge("fault-model", KEY, base_url=server.base_url, timeout=0.5)
        slow = TypedJudge("fault-model", KEY, base_url=server.base_url, timeout=0.5)
        for request in REQUESTS.values():
            got, want = outcome(fast, request), outcome(slow, request)
            if isinstance(want, JudgeReply):
                assert isinstance(got, JudgeReply)
                assert_same_reply(got, want)
            elif want[1].endswith(": Connection error."):  # the plain-http path names what went wrong
                assert (got[0], got[2:]) == (want[0], want[2:])
                assert got[1].startswith(want[1].removesuffix("Connection error.")) and len(got[1]) > len(
                    want[1]
                )
            else:
                assert got == want
    if behaviour in ("malformed", "truncated", "close", "empty", "429", "500", "503", "hang"):
        assert issubclass(got[0], RetryableJudgeError)  # asked again by the runner, as before


def test_documented_400s_and_the_reasoning_adaptation_equal_the_sdk_path():
    fake = FakeJudges()
    try:
        for model, options in [
            ("reasoner-7", {"logprobs": False, "top_logprobs": 0, "temperature": 1.0}),
            ("reasoner-9", {"logprobs": False, "top_logprobs": 0, "temperature": 0.7}),
            ("gpt-5-mini", {"logprobs": False, "top_logprobs": 0, "temperature": 1.0, "n": 2}),
            (
                "o4-mini",
                {"logprobs": False, "top_logprobs": 0, "temperature": 1.0, "reasoning_effort": "low"},
            ),
            ("gpt-4o", {}),
        ]:
            request = JudgeRequest(MESSAGES, model, **{"max_tokens": 5, "top_logprobs": 5, **options})
            fast = OpenAIJudge(model, KEY, base_url=f"{fake.url}/v1")
            slow = TypedJudge(model, KEY, base_url=f"{fake.url}/v1")
            got, want = outcome(fast, request), outcome(slow, request)
            if isinstance(want, JudgeReply):
                assert_same_reply(got, want)
                assert got.raw.get("geval_adapted") == want.raw.get("geval_adapted")
            else:
                assert got == want
            assert (fast.reasoning, fast.adapted) == (slow.reasoning, slow.adapted)
    finally:
        fake.close()


def test_the_key_and_the_documented_headers_go_out_as_create_sends_them():
    stub_fast, stub_slow = (
        JsonStub([], default=(200, {}, EDGES["ok"])),
        JsonStub([], default=(200, {}, EDGES["ok"])),
    )
    try:
        OpenAIJudge("m", KEY, base_url=stub_fast.url + "/v1").judge(ask())
        TypedJudge("m", KEY, base_url=stub_slow.url + "/v1").judge(ask())
        [fast], [slow] = stub_fast.requests, stub_slow.requests
    finally:
        stub_fast.close()
        stub_slow.close()
    assert fast["path"] == slow["path"] == "/v1/chat/completions" and fast["body"] == slow["body"]
    assert fast["headers"]["authorization"] == slow["headers"]["authorization"] == f"Bearer {KEY}"
    # What a server reads is the same; the SDK's own platform headers (x-stainless-*) are not sent without it.
    for header in ("content-type", "accept"):
        assert fast["headers"][header] == slow["headers"][header] == "application/json"
    assert fast["headers"]["user-agent"] == "geval-workbench"


def test_each_worker_thread_keeps_one_connection_of_its_own_alive():
    stub = JsonStub([], default=(200, {}, EDGES["ok"]), keep_alive=True)
    judge = OpenAIJudge("m", KEY, base_url=stub.url + "/v1")
    start = threading.Barrier(4)

    def worker(replies: list) -> None:
        start.wait()
        replies.extend(judge.judge(ask()) for _ in range(3))

    replies: list = []
    try:
        threads = [threading.Thread(target=worker, args=(replies,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        stub.close()
    assert len(replies) == 12 and all(r.choices[0].text == replies[0].choices[0].text for r in replies)
    # Four threads, four connections, each used for its thread's three requests.
    ports = [r["port"] for r in stub.requests]
    assert len(set(ports)) == 4 and sorted(ports.count(p) for p in set(ports)) == [3, 3, 3, 3]


def test_the_connections_of_ended_threads_are_closed_when_a_new_thread_sends():
    stub = JsonStub([], default=(200, {}, EDGES["ok"]), keep_alive=True)
    judge = OpenAIJudge("m", KEY, base_url=stub.url + "/v1")
    try:
        for _ in range(3):  # three runs' worker threads, one after another
            thread = threading.Thread(target=judge.judge, args=(ask(),))
            thread.start()
            thread.join()
        opened = judge._plain._opened  # the judge's own record of the transports it keeps open
        assert len(opened) == 1 and not next(iter(opened)).is_alive()
        judge.judge(ask())
        assert list(opened) == [threading.current_thread()]
    finally:
        stub.close()


class ClosesAfterEachAnswer:
    """A raw loopback server that answers in HTTP/1.1 as if keeping the connection, then closes it: the client's
    next request on that connection finds it gone."""

    def __init__(self, body: bytes) -> None:
        import socket

        self.body, self.connections, self.requests = body, 0, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                self.requests += 1
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    + str(len(self.body)).encode()
                    + b"\r\n\r\n"
                    + self.body
                )

    def close(self) -> None:
        self.listener.close()


def test_a_connection_the_server_closed_while_idle_is_opened_again_and_the_request_sent_once():
    server = ClosesAfterEachAnswer(json.dumps(EDGES["ok"]).encode())
    judge = OpenAIJudge("m", KEY, base_url=server.url + "/v1")
    try:
        replies = [judge.judge(ask()) for _ in range(3)]  # each after the server dropped the last connection
    finally:
        server.close()
    assert all(r.choices for r in replies)
    assert (server.connections, server.requests) == (
        3,
        3,
    )  # a new connection each time, no request sent twice


def test_a_server_that_refuses_the_connection_is_unreachable_not_retried_for_ever():
    import socket

    from geval_core.errors import UnreachableError

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    judge = OpenAIJudge("m", KEY, base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(UnreachableError, match=f"could not connect to http://127.0.0.1:{port}/v1"):
        judge.judge(ask())


def test_an_http_proxy_named_by_the_environment_carries_the_requests(monkeypatch):
    proxy = JsonStub([], default=(200, {}, EDGES["ok"]))
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    try:
        reply = OpenAIJudge("m", KEY, base_url="http://judge.invalid:8000/v1").judge(ask())
    finally:
        proxy.close()
    [request] = proxy.requests  # a proxy is asked for the absolute URL
    assert request["path"] == "http://judge.invalid:8000/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {KEY}" and reply.choices


# ---- real bodies from llama.cpp's OpenAI-compatible server ----------------------------------------

LLAMA_BODIES = {
    "logprobs top 5": {"max_tokens": 3, "temperature": 0.0, "logprobs": True, "top_logprobs": 5},
    "logprobs top 20, one token": {"max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": 20},
    "sampled, seeded": {"max_tokens": 4, "temperature": 1.0, "seed": 7, "n": 3},
    "no logprobs": {"max_tokens": 2, "temperature": 0.0},
}


@pytest.mark.slow
def test_real_llama_server_bodies_read_the_same_both_ways(llama_server):
    for options in LLAMA_BODIES.values():
        body = json.dumps({"model": "smollm2", "messages": list(MESSAGES), **options}).encode()
        http = urllib.request.Request(
            f"{llama_server}/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(http, timeout=60) as answer:
            sent = json.loads(answer.read())
        assert_same_reading(sent)
        # Replayed to both judges: the whole JudgeReply agrees, raw JSON included.
        stub = JsonStub([], default=(200, {}, sent))
        try:
            request = JudgeRequest(
                MESSAGES,
                "smollm2",
                max_tokens=options["max_tokens"],
                logprobs=bool(options.get("logprobs")),
                top_logprobs=options.get("top_logprobs", 0),
                temperature=options["temperature"],
            )
            assert_same_reply(
                OpenAIJudge("smollm2", "not-needed", base_url=stub.url + "/v1").judge(request),
                TypedJudge("smollm2", "not-needed", base_url=stub.url + "/v1").judge(request),
            )
        finally:
            stub.close()
