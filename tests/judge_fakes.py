"""A loopback server speaking the documented shapes of the judges people pick in 2026 (issue 11).

- Chat completions: reasoning models (o-series, gpt-5, and "reasoner-*", which only the server knows
  reasons) answer OpenAI's real 400 bodies for max_tokens (unsupported_parameter), a temperature other
  than 1 (unsupported_value) and logprobs (unsupported_parameter); their reasoning takes REASONING
  tokens of max_completion_tokens, and a budget below that returns no text (finish_reason "length").
- Files + Batches: upload (multipart), create, retrieve (validating, then completed), file content.
- Gemini generateContent (Gemini API and Vertex AI paths): a 2.5 thinking model returns only thought
  parts and MAX_TOKENS unless thinkingBudget 0 is sent; "*-nolog" models refuse logprobs with Google's
  "Logprobs is not enabled for models/..." 400. The Gemini Batch API: batchGenerateContent, batches/NAME.

Replies are a function of the prompt, so a live run and a batch of the same requests agree exactly.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REASONING = 200  # reasoning tokens a reasoning model spends before answering
_REASONS = re.compile(r"^(o\d|gpt-5|reasoner)")


def rating_of(text: str) -> tuple[str, list[tuple[str, float]]]:
    """(the rating the fake judge gives, its top alternatives) from the prompt text."""
    digest = hashlib.sha256(text.encode()).digest()
    best = str(1 + digest[0] % 5)
    others = [str(r) for r in range(1, 6) if str(r) != best]
    return best, [(best, -0.2), (others[digest[1] % 4], -1.9), ("The", -4.0)]


def openai_error(param: str, code: str, message: str) -> tuple[int, dict]:
    """OpenAI's 400 body, as the API sends it."""
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def chat(body: dict) -> tuple[int, dict]:
    """A chat-completions answer (or a documented refusal) for one request body."""
    model = body["model"]
    reasoning = bool(_REASONS.match(model))
    if reasoning:
        if "max_tokens" in body:
            return openai_error(
                "max_tokens",
                "unsupported_parameter",
                "Unsupported parameter: 'max_tokens' is not "
                "supported with this model. Use 'max_completion_tokens' instead.",
            )
        if body.get("logprobs"):
            return openai_error(
                "logprobs",
                "unsupported_parameter",
                "Unsupported parameter: 'logprobs' is not supported with this model.",
            )
        if body.get("temperature", 1) != 1:
            return openai_error(
                "temperature",
                "unsupported_value",
                f"Unsupported value: 'temperature' does not "
                f"support {body['temperature']} with this model. Only the default (1) value is "
                "supported.",
            )
    prompt = "".join(m["content"] for m in body["messages"])
    best, top = rating_of(prompt)
    budget = body.get("max_completion_tokens", body.get("max_tokens", 16))
    out_of_budget = reasoning and budget <= REASONING
    choices = []
    for index in range(body.get("n", 1)):
        logprobs = None
        if body.get("logprobs"):
            alternatives = [{"token": t, "logprob": lp} for t, lp in top[: body.get("top_logprobs", 0)]]
            logprobs = {"content": [{"token": best, "logprob": -0.2, "top_logprobs": alternatives}]}
        choices.append(
            {
                "index": index,
                "finish_reason": "length" if out_of_budget else "stop",
                "logprobs": logprobs,
                "message": {"role": "assistant", "content": "" if out_of_budget else best},
            }
        )
    spent = (min(budget, REASONING) if reasoning else 0) + (0 if out_of_budget else 1)
    return 200, {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": f"{model}-2026-01-01",
        "choices": choices,
        "usage": {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": spent,
            "total_tokens": len(prompt) // 4 + spent,
        },
    }


def gemini(model: str, body: dict) -> tuple[int, dict]:
    """A generateContent answer for one request body (REST JSON)."""
    config = body.get("generationConfig", {})
    if "nolog" in model and config.get("responseLogprobs"):
        return 400, {
            "error": {
                "code": 400,
                "message": f"Logprobs is not enabled for models/{model}",
                "status": "INVALID_ARGUMENT",
            }
        }
    prompt = "".join(p.get("text", "") for c in body["contents"] for p in c["parts"])
    best, top = rating_of(prompt)
    thinking = config.get("thinkingConfig", {})
    # Proto3 JSON takes both spellings of a field; the SDK sends thinking_config's keys as written.
    thinks = "2.5" in model and thinking.get("thinkingBudget", thinking.get("thinking_budget")) != 0
    budget = config.get("maxOutputTokens", 8)
    candidates = []
    for index in range(config.get("candidateCount", 1)):
        if thinks:  # the whole budget goes on thinking: no answer at all
            candidates.append(
                {
                    "content": {
                        "role": "model",
                        "parts": [{"text": "Weighing the summary", "thought": True}],
                    },
                    "finishReason": "MAX_TOKENS",
                    "index": index,
                }
            )
            continue
        candidate = {
            "content": {"role": "model", "parts": [{"text": best}]},
            "finishReason": "STOP",
            "index": index,
        }
        if config.get("responseLogprobs"):
            alternatives = [{"token": t, "logProbability": lp} for t, lp in top[: config.get("logprobs", 0)]]
            candidate["logprobsResult"] = {
                "topCandidates": [{"candidates": alternatives}],
                "chosenCandidates": [{"token": best, "logProbability": -0.2}],
            }
        candidates.append(candidate)
    usage = {"promptTokenCount": len(prompt) // 4, "candidatesTokenCount": 0 if thinks else 1}
    if thinks:
        usage["thoughtsTokenCount"] = budget
    return 200, {"candidates": candidates, "usageMetadata": usage, "modelVersion": f"{model}-001"}


class FakeJudges:
    """The loopback server; `requests` records (method, path, headers, body) of every call."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict, Any]] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.gemini_batches: dict[str, dict] = {}
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.answer(self, "GET", None)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                fake.answer(self, "POST", self.rfile.read(length))

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()

    def answer(self, handler: BaseHTTPRequestHandler, method: str, data: bytes | None) -> None:
        """Route one request and send its answer."""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        path = handler.path.split("?")[0]
        multipart = headers.get("content-type", "").startswith("multipart/")
        body = None if not data or multipart else json.loads(data)
        with self.lock:
            self.requests.append((method, path, headers, body))
            status, payload = self.route(method, path, body, data, headers)
        self.send(handler, status, payload)

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        """Send one answer: JSON, or bytes as a file's content."""
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header(
            "content-type", "application/octet-stream" if isinstance(payload, bytes) else "application/json"
        )
        handler.send_header("content-length", str(len(raw)))
        handler.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.wfile.write(raw)

    def route(self, method: str, path: str, body: Any, data: bytes | None, headers: dict) -> tuple[int, Any]:
        """The answer to one request: (status, JSON value or bytes)."""
        if path == "/v1/chat/completions":
            return chat(body)
        if path == "/v1/files" and method == "POST":
            return self.upload(data or b"", headers["content-type"])
        if match := re.fullmatch(r"/v1/files/([^/]+)/content", path):
            return 200, self.files[match.group(1)]
        if path == "/v1/batches" and method == "POST":
            return self.create_batch(body)
        if (match := re.fullmatch(r"/v1(beta)?/batches/([^/]+)", path)) and match.group(
            2
        ) in self.gemini_batches:
            return 200, self.gemini_batch(match.group(2))  # the Gemini API's batches/NAME
        if match := re.fullmatch(r"/v1/batches/([^/]+)", path):
            return 200, self.retrieve_batch(match.group(1))
        if match := re.search(r"models/([^/:]+):generateContent$", path):
            return gemini(match.group(1), body)
        if match := re.search(r"models/([^/:]+):batchGenerateContent$", path):
            return self.create_gemini_batch(match.group(1), body)
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def upload(self, data: bytes, content_type: str) -> tuple[int, dict]:
        """POST /v1/files (multipart: purpose, file)."""
        message = BytesParser().parsebytes(f"content-type: {content_type}\r\n\r\n".encode() + data)
        parts = {p.get_param("name", header="content-disposition"): p for p in message.get_payload()}
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = parts["file"].get_payload(decode=True)
        return 200, {
            "id": file_id,
            "object": "file",
            "bytes": len(self.files[file_id]),
            "created_at": 0,
            "filename": parts["file"].get_filename(),
            "purpose": parts["purpose"].get_payload(),
            "status": "processed",
        }

    def create_batch(self, body: dict) -> tuple[int, dict]:
        """POST /v1/batches: validating now, completed at the second retrieve."""
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "created_at": 0,
            "retrieved": 0,
        }
        return 200, self.public(self.batches[batch_id])

    def retrieve_batch(self, batch_id: str) -> dict:
        """GET /v1/batches/ID: in_progress first, then completed with its output and error files."""
        batch = self.batches[batch_id]
        batch["retrieved"] += 1
        if batch["retrieved"] == 1:
            batch["status"] = "in_progress"
        elif batch["status"] != "completed":
            self.complete(batch)
        return self.public(batch)

    def complete(self, batch: dict) -> None:
        """Answer every line of the input file; failures go to the error file."""
        out, errors = [], []
        for number, text in enumerate(self.files[batch["input_file_id"]].decode().splitlines()):
            line = json.loads(text)
            status, answer = chat(line["body"])
            record = {
                "id": f"batch_req_{number}",
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{number}", "body": answer},
                "error": None,
            }
            (out if status == 200 else errors).append(json.dumps(record))
        for name, lines in (("output_file_id", out), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = ("\n".join(lines) + "\n").encode()
                batch[name] = file_id
        batch["status"] = "completed"
        batch["request_counts"] = {
            "total": len(out) + len(errors),
            "completed": len(out),
            "failed": len(errors),
        }

    @staticmethod
    def public(batch: dict) -> dict:
        """The batch object without the fake's own bookkeeping."""
        return {k: v for k, v in batch.items() if k != "retrieved"}

    def create_gemini_batch(self, model: str, body: dict) -> tuple[int, dict]:
        """POST models/MODEL:batchGenerateContent with inlined requests."""
        name = f"batches/gb{len(self.gemini_batches) + 1}"
        requests = body["batch"]["inputConfig"]["requests"]["requests"]
        self.gemini_batches[name.split("/")[1]] = {"model": model, "requests": requests, "gets": 0}
        return 200, {"name": name, "metadata": {"state": "BATCH_STATE_PENDING", "model": f"models/{model}"}}

    def gemini_batch(self, key: str) -> dict:
        """GET batches/NAME: running first, then succeeded with one inlined response per request."""
        batch = self.gemini_batches[key]
        batch["gets"] += 1
        meta: dict[str, Any] = {"state": "BATCH_STATE_RUNNING", "model": f"models/{batch['model']}"}
        if batch["gets"] > 1:
            responses = []
            for request in batch["requests"]:
                status, answer = gemini(batch["model"], request["request"])
                responses.append(
                    {
                        "metadata": request.get("metadata"),
                        **({"response": answer} if status == 200 else {"error": answer["error"]}),
                    }
                )
            meta.update(
                state="BATCH_STATE_SUCCEEDED", output={"inlinedResponses": {"inlinedResponses": responses}}
            )
        return {"name": f"batches/{key}", "metadata": meta}


class CachingJudges(FakeJudges):
    """FakeJudges whose chat completions cache prompts by OpenAI's documented rule (issue 42): a prompt of 1,024
    tokens or more reads from the cache the longest prefix it shares with any prompt answered before, in whole
    steps of 128 tokens and at least 1,024, reported as usage.prompt_tokens_details.cached_tokens.

    Tokens are counted as the workbench's estimate counts them (cost.estimate_tokens: 4 characters a token, plus
    4 a message), so prompt_tokens is the estimate's own figure and any gap between the estimate's cached tokens
    and these is the prediction's, not the tokenizer's. The prefix search is written apart from the estimate's:
    every earlier prompt, character by character.

    `latency` (seconds) makes each chat request take that long, its prompt entering the cache only when it is
    done, as a real server's does once it has read the prompt: requests in flight together do not see each other.
    """

    def __init__(self, latency: float = 0.0) -> None:
        self.seen: list[list[dict]] = []  # every prompt answered, in the order they were done
        self.latency = latency
        super().__init__()

    def answer(self, handler: BaseHTTPRequestHandler, method: str, data: bytes | None) -> None:
        """Chat completions read the cache as they arrive and write it when done; the rest as FakeJudges answers."""
        if handler.path.split("?")[0] != "/v1/chat/completions" or not data:
            super().answer(handler, method, data)
            return
        body = json.loads(data)
        with self.lock:
            self.requests.append((method, "/v1/chat/completions", dict(handler.headers.items()), body))
            status, payload = chat(body)
            if status == 200:
                self.cached_usage(body["messages"], payload["usage"])
            if (
                not self.latency
            ):  # one prompt at a time: read and cached in one step, no request slips between
                self.seen.append(body["messages"])
        if self.latency:
            time.sleep(self.latency)
            with self.lock:
                self.seen.append(body["messages"])
        self.send(handler, status, payload)

    def cached_usage(self, messages: list[dict], usage: dict) -> None:
        """The usage of one prompt by OpenAI's rule, against every prompt done before it arrived."""
        tokens = sum(_tokens(m["content"]) for m in messages)
        shared = max((_shared(earlier, messages) for earlier in self.seen), default=0)
        cached = shared - shared % 128 if tokens >= 1024 and shared >= 1024 else 0
        usage.update(
            prompt_tokens=tokens,
            total_tokens=tokens + usage["completion_tokens"],
            prompt_tokens_details={"cached_tokens": cached, "audio_tokens": 0},
        )


def _tokens(text: str, shared_chars: int | None = None) -> int:
    """A message's tokens as the estimate counts them; with `shared_chars`, those of its first characters only."""
    from geval_core.run.cost import TOKENS_PER_MESSAGE, estimate_tokens

    if shared_chars is None:
        return estimate_tokens(text) + TOKENS_PER_MESSAGE
    return TOKENS_PER_MESSAGE + shared_chars // 4


def _shared(earlier: list[dict], messages: list[dict]) -> int:
    """Tokens of the prefix two prompts share: whole equal messages, then the equal start of the next."""
    total = 0
    for a, b in zip(earlier, messages, strict=False):
        if a["role"] != b["role"]:
            return total
        if a["content"] != b["content"]:
            same = 0
            while (
                same < min(len(a["content"]), len(b["content"])) and a["content"][same] == b["content"][same]
            ):
                same += 1
            return total + _tokens(b["content"], same)
        total += _tokens(b["content"])
    return total
