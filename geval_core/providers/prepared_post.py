"""JSON POSTs to one endpoint with the request the OpenAI SDK builds, built by the SDK once per judge.

The SDK's `post` rebuilds the same request on every call: two copies of its options model, the headers
merged three times, the URL parsed twice (~0.35 ms of CPU, more than half of a judge call's client time).
Nothing in it changes between a judge's calls but the body and the idempotency key, so the SDK's own
`_build_request` builds it once here; each call copies it with its body (serialised by the SDK's
`openapi_dumps`) and a fresh key from the SDK, sends it through the SDK's `_send_request` (its auth layer
and httpx client) and fails with the SDK's exception types, the status errors made by the SDK's
`_make_status_error_from_response`: what `post` does with max_retries=0. A client whose requests depend
on more than that (custom auth, options rewritten per request, as Azure's) keeps the SDK's `post`.
"""

from __future__ import annotations

from typing import Any

# Client state that changes requests per call: a key provider, a provider runtime, a workload identity.
_PER_CALL_AUTH = ("_api_key_provider", "_provider_runtime", "_workload_identity_auth")


class PreparedPost:
    """`client.post(path, body=body, cast_to=bytes, options={"security": security})`, built once."""

    def __init__(self, client: Any, path: str, security: dict[str, bool]) -> None:
        self._client, self._path, self._security = client, path, security
        try:
            self._prepared = self._prepare()
        except (AttributeError, ImportError, TypeError):  # an SDK without these hooks: its own `post`
            self._prepared = False

    def _prepare(self) -> bool:
        """Build the request template; False (keep `post`) for a client whose requests change per call."""
        import openai
        from openai._httpx2 import request_exceptions, timeout_exceptions
        from openai._models import FinalRequestOptions
        from openai._utils._json import openapi_dumps

        client = self._client
        options = FinalRequestOptions.construct(method="post", url=self._path, json_data=b"{}",
                                                security=self._security)
        if (type(client)._prepare_options is not openai.OpenAI._prepare_options
                or client._custom_auth(options.security) is not None
                or any(getattr(client, name, None) is not None for name in _PER_CALL_AUTH)):
            return False
        template = client._build_request(options)
        # Per request: the body's length and the idempotency key (added in `_request` when the SDK sends one).
        self._headers = type(template.headers)([(k, v) for k, v in template.headers.raw
                                                if k.lower() != b"content-length"])
        self._url, self._extensions = template.url, template.extensions
        self._request_type, self._stream_type = type(template), type(template.stream)
        self._idempotency_header = client._idempotency_header
        self._dumps, self._timeouts, self._failures = openapi_dumps, timeout_exceptions(), request_exceptions()
        self._openai = openai
        return True

    def __call__(self, body: dict[str, Any]) -> bytes:
        """The answer's bytes; the SDK's APIStatusError, APITimeoutError or APIConnectionError otherwise."""
        if not self._prepared:
            return self._client.post(self._path, body=body, cast_to=bytes, options={"security": self._security})
        return self._send(self._request(body))

    def _request(self, body: dict[str, Any]) -> Any:
        headers, content = type(self._headers)(self._headers), self._dumps(body)
        if self._idempotency_header:  # `request` gives every POST a key of its own
            headers[self._idempotency_header] = self._client._idempotency_key()
        headers["Content-Length"] = str(len(content))
        # The body as a stream: what `content=` makes, without httpx working out the headers set above.
        return self._request_type("POST", self._url, headers=headers, stream=self._stream_type(content),
                                  extensions=self._extensions)

    def _send(self, request: Any) -> bytes:
        client, openai = self._client, self._openai
        client._prepare_request(request)
        try:
            response = client._send_request(request, stream=False)
        except self._timeouts as exc:
            raise openai.APITimeoutError(request=request) from exc
        except openai.OpenAIError:
            raise
        except self._failures as exc:
            raise openai.APIConnectionError(request=request) from exc
        if not response.is_success:  # the SDK's raise_for_status: every status outside 2xx
            response.read()
            raise client._make_status_error_from_response(response) from None
        return response.read()
