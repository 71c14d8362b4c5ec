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


class PreparedPost:
    """`client.post(url, body=body, cast_to=bytes, options={"security": security})`, built once."""

    def __init__(self, client: Any, url: str, security: dict[str, bool]) -> None:
        self._client = client
        self._post = lambda body: client.post(url, body=body, cast_to=bytes, options={"security": security})
        try:
            self._prepare(client, url, security)
        except (AttributeError, ImportError, TypeError):  # an SDK without these hooks: its own `post`
            self._plain = False

    def _prepare(self, client: Any, url: str, security: dict[str, bool]) -> None:
        from openai import OpenAI
        from openai._httpx2 import request_exceptions, timeout_exceptions
        from openai._models import FinalRequestOptions
        from openai._utils._json import openapi_dumps

        options = FinalRequestOptions.construct(method="post", url=url, json_data=b"{}", security=security)
        # A static key and the SDK's own option handling: what a judge's client has (it is built with a key
        # string); a key provider, a provider runtime or a workload identity change requests per call.
        self._plain = (type(client)._prepare_options is OpenAI._prepare_options
                       and client._custom_auth(options.security) is None
                       and all(getattr(client, name, None) is None
                               for name in ("_api_key_provider", "_provider_runtime", "_workload_identity_auth")))
        template = client._build_request(options)
        # Per request: the body's length and the idempotency key (added below when the SDK sends one).
        self._headers = type(template.headers)([(k, v) for k, v in template.headers.raw
                                                if k.lower() != b"content-length"])
        self._url, self._extensions = template.url, template.extensions
        self._request_type, self._stream_type = type(template), type(template.stream)
        self._dumps, self._timeouts, self._failures = openapi_dumps, timeout_exceptions(), request_exceptions()

    def __call__(self, body: dict[str, Any]) -> bytes:
        """The answer's bytes; the SDK's APIStatusError, APITimeoutError or APIConnectionError otherwise."""
        if not self._plain:
            return self._post(body)
        return self._send(self._request(body))

    def _request(self, body: dict[str, Any]) -> Any:
        client, headers, content = self._client, type(self._headers)(self._headers), self._dumps(body)
        if client._idempotency_header:  # `request` gives every POST a key of its own
            headers[client._idempotency_header] = client._idempotency_key()
        headers["Content-Length"] = str(len(content))
        # The body as a stream: what `content=` makes, without httpx working out the headers set above.
        return self._request_type("POST", self._url, headers=headers, stream=self._stream_type(content),
                                  extensions=self._extensions)

    def _send(self, request: Any) -> bytes:
        import openai

        client = self._client
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
