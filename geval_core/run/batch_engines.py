"""The providers' batch engines end to end: submit a run's requests, follow the batch, collect its results.

OpenAI: the Files API (purpose "batch") and the Batches API (endpoint /v1/chat/completions, window 24h)
through the `openai` SDK, with the input file `batch.prepare_batch` writes by hand. Gemini: the Batch API
through google-genai `client.batches` with inlined requests, each the request the live judge sends.
Collecting downloads the results and scores them through `batch.collect_batch`, exactly as a live run
would; it is idempotent (judged items are skipped) and resumable: a crash loses nothing written, and
collecting again downloads again. Which run a batch belongs to is kept in the library ("batch:ID"). Which
engine a provider's runs go to is a fact of its spec (ProviderSpec.batch_engine).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError, GEvalError, JudgeError, NotFoundError, UnreachableError
from ..providers.common import NO_KEY, env_key, http_errors, redact, require_key
from ..providers.registry import batch_engine, key_variable, key_variables, provider_spec, specs
from ..store import Store
from ..types import FrozenPrompt, JudgeReply, JudgeSettings
from ..urls import check_base_url, is_custom_server
from .batch import (
    BATCH_URL,
    FILE_ENGINE,
    as_new_run,
    batch_lines,
    batch_plan,
    batch_requests,
    collect_batch,
    completion_to_reply,
    custom_id,
    item_requests,
    run_items,
)
from .options import RunSummary
from .plan import RunPlan, RunScope, record_run
from .session import Progress

DONE = {
    "completed",
    "failed",
    "expired",
    "cancelled",
    "JOB_STATE_SUCCEEDED",
    "JOB_STATE_FAILED",
    "JOB_STATE_CANCELLED",
    "JOB_STATE_EXPIRED",
}
COLLECTABLE = {"completed", "expired", "cancelled", "JOB_STATE_SUCCEEDED"}  # finished with results to read


class OpenAIBatches:
    """OpenAI's Files API (purpose "batch") and Batches API (/v1/chat/completions, window 24h) through the
    `openai` SDK, with the input file `batch.prepare_batch` writes."""

    where = "the OpenAI API"

    def client(self, provider: str, base_url: str | None) -> Any:
        """The SDK client, its key from the provider's variables (a compatible server of the user's needs none)."""
        from openai import OpenAI

        variables = provider_spec(provider).key_variables
        key = env_key(*variables) or (NO_KEY if is_custom_server(base_url) else None)
        return OpenAI(api_key=require_key(key, variables, provider), base_url=base_url)

    def send(
        self, client: Any, prompt: FrozenPrompt, items: list, run_id: str, settings: JudgeSettings
    ) -> tuple[str, str]:
        """Upload the run's requests and create the batch: (batch id, its status)."""
        lines = "".join(
            json.dumps(line, ensure_ascii=False) + "\n"
            for line in batch_lines(prompt, items, run_id, settings)
        )
        upload = client.files.create(file=(f"geval-{run_id}.jsonl", lines.encode("utf-8")), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id,
            endpoint=BATCH_URL,
            completion_window="24h",
            metadata={"geval_run": run_id},
        )
        return batch.id, batch.status

    def status(self, client: Any, batch_id: str) -> tuple[Any, str, dict[str, Any] | None]:
        """(the batch, its status, its request counts)."""
        batch = client.batches.retrieve(batch_id)
        return batch, batch.status, batch.request_counts.model_dump() if batch.request_counts else None

    def download(self, client: Any, batch: Any, folder: Path) -> list[Path]:
        """The batch's output and error files, as the Batch API wrote them."""
        paths = []
        for name in ("output_file_id", "error_file_id"):
            file_id = getattr(batch, name, None)
            if file_id:
                path = folder / f"{name}.jsonl"
                path.write_bytes(client.files.content(file_id).content)
                paths.append(path)
        return paths

    def reply(self, body: dict[str, Any]) -> JudgeReply:
        """One result body (a chat completion) as a JudgeReply, read as the live judge reads it."""
        return completion_to_reply(body)


class GeminiBatches:
    """The Gemini Batch API through google-genai `client.batches`, with inlined requests, each the request the
    live judge sends."""

    where = "the Gemini API"

    def client(self, provider: str, base_url: str | None) -> Any:
        """The SDK client for the Gemini API, its key from the provider's variables."""
        from google import genai
        from google.genai import types

        variables = provider_spec(provider).key_variables
        key = require_key(env_key(*variables), variables, provider)
        return genai.Client(api_key=key, vertexai=False, http_options=types.HttpOptions(base_url=base_url))

    def send(
        self, client: Any, prompt: FrozenPrompt, items: list, run_id: str, settings: JudgeSettings
    ) -> tuple[str, str]:
        """Create the batch of inlined requests: (batch name, its state)."""
        batch = client.batches.create(
            model=settings.model,
            src=_gemini_requests(prompt, items, run_id, settings),
            config={"display_name": f"geval-{run_id}"},
        )
        return batch.name, _state(batch)

    def status(self, client: Any, batch_id: str) -> tuple[Any, str, dict[str, Any] | None]:
        """(the batch, its state, None: the API gives no counts)."""
        batch = client.batches.get(name=batch_id)
        return batch, _state(batch), None

    def download(self, client: Any, batch: Any, folder: Path) -> list[Path]:
        """The inlined results as one Batch-API-shaped JSONL file."""
        path = folder / "gemini.jsonl"
        responses = (batch.dest.inlined_responses or []) if batch.dest else []
        path.write_text("".join(json.dumps(_gemini_line(r)) + "\n" for r in responses), encoding="utf-8")
        return [path]

    def reply(self, body: dict[str, Any]) -> JudgeReply:
        """One result body (a GenerateContentResponse) as a JudgeReply, read as the live judge reads it."""
        from google.genai import types
        from pydantic import ValidationError

        from ..providers.gemini_judge import gemini_reply

        try:
            return gemini_reply(types.GenerateContentResponse.model_validate(body))
        except ValidationError as exc:
            raise JudgeError(f"not a Gemini response: {str(exc)[:300]}") from None


Engine = OpenAIBatches | GeminiBatches
# The engines by the name a ProviderSpec's batch_engine gives.
ENGINES: dict[str, Engine] = {FILE_ENGINE: OpenAIBatches(), "gemini": GeminiBatches()}


def engine_for(provider: str) -> Engine:
    """The batch engine of a provider's runs; ConfigError naming the providers that have one."""
    name = batch_engine(provider)
    if name is None or name not in ENGINES:
        having = [s for s in specs() if s.public and s.batch_engine in ENGINES]
        raise ConfigError(
            f"batch engines are {' and '.join(s.label + chr(39) + 's' for s in having)}, not the "
            f"{provider} judge's; choose {' or '.join(s.name + ':MODEL' for s in having)}"
        )
    return ENGINES[name]


def batch_client(provider: str, base_url: str | None) -> Any:
    """The SDK client for a provider's batch engine; the key from the environment, as live judges get it."""
    return engine_for(provider).client(provider, check_base_url(base_url, key_variable(provider)))


@contextlib.contextmanager
def engine_errors(provider: str, base_url: str | None) -> Iterator[None]:
    """The SDKs' errors from a batch engine as the workbench's (a clear message, never a traceback)."""
    where = base_url or engine_for(provider).where
    try:
        yield
    except GEvalError:
        raise
    except Exception as exc:
        error = _engine_error(exc, where)
        if error is None:
            raise
        raise error from None


def _engine_error(exc: Exception, where: str) -> GEvalError | None:
    import openai

    message = str(getattr(exc, "message", None) or exc)
    for variable in key_variables():  # servers echo keys in errors
        message = redact(message, env_key(variable))
    if isinstance(exc, (openai.APIConnectionError, *http_errors().transport)):
        return UnreachableError(f"could not reach the batch engine at {where}: {message[:300]}")
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    if isinstance(exc, openai.APIStatusError) or _is_genai_error(exc):
        return JudgeError(
            f"the batch engine at {where} answered {status}: {message[:300]}",
            status=status if isinstance(status, int) else None,
        )
    return None


def _is_genai_error(exc: Exception) -> bool:
    try:
        from google.genai import errors
    except ImportError:
        return False
    return isinstance(exc, errors.APIError)


def submit_batch(
    store: Store,
    prompt: FrozenPrompt,
    dataset_id: str,
    settings: JudgeSettings,
    item_ids: list[str] | None = None,
    client: Any = None,
    side: str | None = None,
) -> dict[str, Any]:
    """Create a run and submit its requests to the provider's batch engine: {batch_id, run_id, status, requests}."""
    scope = RunScope(side=side, item_ids=None if item_ids is None else tuple(item_ids))
    return submit_planned(store, batch_plan(store, prompt, dataset_id, settings, scope), client)


def submit_planned(store: Store, plan: RunPlan, client: Any = None) -> dict[str, Any]:
    """Record the planned run (a use of the test side included) and send its requests to the batch engine of
    the plan's judge, at the plan's server."""
    settings = plan.settings
    engine = engine_for(settings.provider)
    count = batch_requests(plan)
    plan.require_ready()  # the inputs, the judge's limits: before a client is made or a run recorded
    client = client or batch_client(
        settings.provider, settings.base_url
    )  # a missing key stops before a run exists
    plan = record_run(store, as_new_run(plan))
    run_id = plan.recorded_id
    try:
        with engine_errors(settings.provider, settings.base_url):
            batch_id, status = engine.send(
                client, plan.prompt, run_items(store, plan.dataset.id, plan.item_ids), run_id, settings
            )
    except BaseException as exc:
        # Nothing reached the provider's engine: the run says so instead of staying "running" forever.
        store.finish_run(run_id, status="failed", error=f"batch submit failed ({type(exc).__name__})")
        raise
    store.set_run_fields(run_id, batch_id=batch_id, batch_provider=settings.provider, batch_requests=count)
    store.set_setting(f"batch:{batch_id}", {"run_id": run_id, "provider": settings.provider})
    return {
        "batch_id": batch_id,
        "run_id": run_id,
        "status": status,
        "requests": count,
        "side": plan.side,
        "judge": plan.judge.describe(),
    }


def _gemini_requests(prompt: FrozenPrompt, items: list, run_id: str, settings: JudgeSettings) -> list[dict]:
    """Inlined generateContent requests, each keyed by its custom_id in metadata."""
    from ..providers.gemini_judge import gemini_request

    out = []
    for item in items:
        for replica, request in enumerate(item_requests(prompt, item, settings)):
            contents, config = gemini_request(request, request.n, request.seed)
            out.append(
                {
                    "contents": contents,
                    "config": config,
                    "metadata": {"key": custom_id(run_id, item.id, replica)},
                }
            )
    return out


def _state(batch: Any) -> str:
    state = batch.state
    return getattr(state, "value", None) or str(state)


def _record(store: Store, batch_id: str) -> dict[str, Any]:
    record = store.get_setting(f"batch:{batch_id}")
    if not record:
        raise NotFoundError(
            f"no batch {batch_id!r} in this library; `geval batch submit` records the ones it sends"
        )
    return record


def batch_status(
    store: Store, batch_id: str, base_url: str | None = None, client: Any = None
) -> dict[str, Any]:
    """The provider's status of a batch: {batch_id, run_id, status, done, counts}."""
    record = _record(store, batch_id)
    client = client or batch_client(record["provider"], base_url)
    with engine_errors(record["provider"], base_url):
        batch, status, counts = engine_for(record["provider"]).status(client, batch_id)
    return {
        "batch_id": batch_id,
        "run_id": record["run_id"],
        "status": status,
        "done": status in DONE,
        "counts": counts,
        "_batch": batch,
    }


def collect_remote(
    store: Store,
    batch_id: str,
    base_url: str | None = None,
    client: Any = None,
    on_progress: Progress | None = None,
) -> dict[str, Any]:
    """Download a finished batch's results and score them into its run (idempotent, resumable)."""
    record = _record(store, batch_id)
    client = client or batch_client(record["provider"], base_url)
    status = batch_status(store, batch_id, client=client)
    batch = status.pop("_batch")
    if status["status"] not in COLLECTABLE:
        return {**status, "collected": False, "summary": None}
    with tempfile.TemporaryDirectory(prefix="geval-batch-") as folder:
        with engine_errors(record["provider"], base_url):
            paths = engine_for(record["provider"]).download(client, batch, Path(folder))
        summaries = collect_batch(store, paths, on_progress, expected_run=record["run_id"]) if paths else []
    summary = next((s for s in summaries if s.run_id == record["run_id"]), None)
    return {**status, "collected": True, "summary": None if summary is None else _summary(summary)}


def _summary(summary: RunSummary) -> dict[str, Any]:
    return {
        k: v for k, v in summary.to_dict().items() if k in ("status", "scored", "failed", "skipped", "judged")
    }


def _gemini_line(result: Any) -> dict[str, Any]:
    """One inlined Gemini result in the Batch API output line shape `collect_batch` reads."""
    from ..providers.gemini_judge import RAW_EXCLUDE

    key = (result.metadata or {}).get("key", "")
    if result.error is not None or result.response is None:
        error = (
            result.error.model_dump(mode="json") if result.error is not None else {"message": "no response"}
        )
        return {
            "custom_id": key,
            "response": None,
            "error": {"code": error.get("code"), "message": error.get("message")},
        }
    body = result.response.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=RAW_EXCLUDE)
    return {"custom_id": key, "response": {"status_code": 200, "body": body}, "error": None}
