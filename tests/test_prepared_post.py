"""The OpenAI judge's request is built by the SDK once and copied per call (issue 15): what goes out is
what the SDK's own `post` sends, a client whose requests change per call keeps the SDK's `post`, and
failures are the SDK's exceptions."""

from __future__ import annotations

import json

import openai
import pytest
from conftest import JsonStub

from geval_core.providers.prepared_post import PreparedPost

KEY = "sk-test-prepared-3b9e71"
SECURITY = {"bearer_auth": True}
BODY = {"model": "m", "messages": [{"role": "user", "content": "Rate it — «1 to 5»"}], "max_tokens": 1}


def sent(client_for, post) -> list[dict]:
    """The requests a stub server received from two posts of BODY through `post(client, path)`."""
    stub = JsonStub([], default=(200, {}, {"ok": True}))
    try:
        client = client_for(stub.url + "/v1")
        call = post(client, "/chat/completions")  # joined to the client's base URL, as `create` does
        assert call(BODY) == b'{"ok": true}' and call(BODY) == b'{"ok": true}'
        return stub.requests
    finally:
        stub.close()


def sdk_post(client, path):
    return lambda body: client.post(path, body=body, cast_to=bytes, options={"security": SECURITY})


def prepared(client, path):
    return PreparedPost(client, path, SECURITY)


def plain_client(base_url):
    return openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0)


class KeyedClient(openai.OpenAI):
    """A client whose SDK gives every POST an idempotency key of its own."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._idempotency_header = "Idempotency-Key"


def test_the_prepared_request_is_the_one_the_sdk_sends():
    ours, theirs = sent(plain_client, prepared), sent(plain_client, sdk_post)
    assert [r["body"] for r in ours] == [r["body"] for r in theirs] == [BODY, BODY]
    assert [r["path"] for r in ours] == [r["path"] for r in theirs] == ["/v1/chat/completions"] * 2
    assert ours[0]["headers"] == ours[1]["headers"]
    volatile = {"host"}
    assert [{k: v for k, v in r["headers"].items() if k not in volatile} for r in ours] == [
        {k: v for k, v in r["headers"].items() if k not in volatile} for r in theirs]
    assert ours[0]["headers"]["authorization"] == f"Bearer {KEY}"
    compact = json.dumps(BODY, ensure_ascii=False, separators=(",", ":")).encode()  # as the SDK serialises
    assert int(ours[0]["headers"]["content-length"]) == len(compact) == int(theirs[0]["headers"]["content-length"])


def test_every_post_gets_a_fresh_idempotency_key_when_the_sdk_sends_one():
    requests = sent(lambda url: KeyedClient(api_key=KEY, base_url=url, max_retries=0), prepared)
    keys = [r["headers"]["idempotency-key"] for r in requests]
    assert keys[0] != keys[1] and all(k.startswith("stainless-python-retry-") for k in keys)


def test_a_key_given_as_a_function_keeps_the_sdks_post():
    calls = []

    def key() -> str:
        calls.append(1)
        return KEY

    def client_for(url):
        return openai.OpenAI(api_key=key, base_url=url, max_retries=0)

    requests = sent(client_for, prepared)
    assert not prepared(client_for("http://127.0.0.1:9/v1"), "/x")._prepared
    assert [r["headers"]["authorization"] for r in requests] == [f"Bearer {KEY}"] * 2
    assert len(calls) >= 2  # asked for the key on every request, as the SDK does


@pytest.mark.parametrize("status, error", [(400, openai.BadRequestError), (401, openai.AuthenticationError),
                                           (429, openai.RateLimitError), (503, openai.InternalServerError)])
def test_status_errors_are_the_sdks_own(status, error):
    stub = JsonStub([(status, {"retry-after": "3"}, {"error": {"message": "no", "code": "c", "param": "p"}})])
    try:
        client = plain_client(stub.url + "/v1")
        with pytest.raises(error) as caught:
            prepared(client, "/chat/completions")(BODY)
    finally:
        stub.close()
    assert caught.value.status_code == status and caught.value.code == "c" and caught.value.param == "p"
    assert caught.value.response.headers["retry-after"] == "3"


def test_an_unreachable_server_and_a_timeout_are_the_sdks_errors():
    client = openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        prepared(client, "/chat/completions")(BODY)
    stub = JsonStub([("hang", {}, {})])
    try:
        slow = openai.OpenAI(api_key=KEY, base_url=stub.url + "/v1", max_retries=0, timeout=0.3)
        with pytest.raises(openai.APITimeoutError):
            prepared(slow, "/chat/completions")(BODY)
    finally:
        stub.close()
