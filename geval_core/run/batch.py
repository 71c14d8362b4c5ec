"""The scale-out path: OpenAI Batch API files out (`prepare`) and back in (`collect`).

Input file: one JSON line per item and replica, {"custom_id": "<run>:<item>:<replica>", "method":
"POST", "url": "/v1/chat/completions", "body": <the chat request a live run sends>}. Logprobs mode
(and auto, which a batch cannot fall back from mid-way) sends one line per item asking for n choices;
sampling mode sends n lines of one reply each, told apart by the replica index (and seed + replica
when a seed is set, as the live provider does for repeated calls).

Output and error files: one line per request, {"id", "custom_id", "response": {"status_code",
"request_id", "body": <chat completion>} | null, "error": {"code", "message"} | null}, in any order.
`collect` maps each body to a JudgeReply with the OpenAI provider's own mapping, merges an item's
replicas, and scores and stores it through the runner's code, exactly as a live run would.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, JudgeError
from ..providers.registry import batch_engine, specs
from ..records import Dataset, Run
from ..scoring.reply_check import check_reply
from ..store import Store
from ..types import FrozenPrompt, Item, JudgeReply, JudgeRequest, JudgeSettings, ScoredMode, Usage
from .batch_checks import check_lines
from .calls import build_request, cache_key, server_id
from .options import RunSummary
from .plan import PlannedJudge, RunPlan, RunScope, plan_run, plan_settings, record_run
from .runner import finish
from .session import Job, Progress, Session

BATCH_URL = "/v1/chat/completions"
FILE_ENGINE = "openai"  # the batch engine whose input files prepare_batch writes (the OpenAI Batch API's)
MAX_REQUESTS = 50_000  # the Batch API's limit per input file
BATCH_DISCOUNT = 0.5  # batch requests are billed at half the live price


def custom_id(run_id: str, item_id: str, replica: int) -> str:
    """'<run>:<item>:<replica>' (item ids may contain ':'; run ids never do)."""
    return f"{run_id}:{item_id}:{replica}"


def parse_custom_id(value: str) -> tuple[str, str, int]:
    """(run id, item id, replica) from a custom_id."""
    run_id, sep, rest = value.partition(":")
    item_id, sep2, replica = rest.rpartition(":")
    if not (sep and sep2 and run_id and item_id and replica.isdigit()):
        raise InputError(f"custom_id {value!r} is not <run>:<item>:<replica>")
    return run_id, item_id, int(replica)


def batch_mode(settings: JudgeSettings) -> ScoredMode:
    """What a batch asks for: sampling stays sampling; logprobs and auto ask for logprobs."""
    return "sampling" if settings.mode == "sampling" else "logprobs"


def item_requests(prompt: FrozenPrompt, item: Item, settings: JudgeSettings) -> list[JudgeRequest]:
    """The requests for one item, replica by replica."""
    mode = batch_mode(settings)
    if mode == "logprobs":
        return [build_request(prompt, item, settings, mode)]
    return [
        build_request(
            prompt, item, settings, mode, n=1, seed=None if settings.seed is None else settings.seed + r
        )
        for r in range(settings.n)
    ]


def request_body(request: JudgeRequest) -> dict[str, Any]:
    """The chat-completions body, built by the live OpenAI judge's own code (reasoning models included)."""
    from ..providers.capabilities import is_reasoning_model
    from ..providers.openai_judge import chat_body

    # A batch file goes to OpenAI's Batch API, which takes prompt_cache_key as the live API does.
    return chat_body(request, request.n, is_reasoning_model(request.model), request.seed, request.prefix_key)


def batch_lines(
    prompt: FrozenPrompt, items: list[Item], run_id: str, settings: JudgeSettings
) -> Iterator[dict[str, Any]]:
    """Every line of the input file."""
    for item in items:
        for replica, request in enumerate(item_requests(prompt, item, settings)):
            yield {
                "custom_id": custom_id(run_id, item.id, replica),
                "method": "POST",
                "url": BATCH_URL,
                "body": request_body(request),
            }


def write_batch(
    prompt: FrozenPrompt, items: list[Item], run_id: str, settings: JudgeSettings, path: str | Path
) -> int:
    """Write the input file; returns the number of requests."""
    count = len(items) * (settings.n if batch_mode(settings) == "sampling" else 1)
    if count > MAX_REQUESTS:
        raise InputError(
            f"{count} requests exceed the Batch API's {MAX_REQUESTS} per file; "
            "split the dataset (or lower n)",
            file=str(path),
        )
    with Path(path).open("w", encoding="utf-8") as handle:
        for line in batch_lines(prompt, items, run_id, settings):
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return count


def run_items(store: Store, dataset_id: str, item_ids: Iterable[str] | None) -> list[Item]:
    """The dataset's items, only those in `item_ids` when a run was limited to some."""
    items = store.dataset_items(dataset_id)
    if item_ids is None:
        return items
    wanted = set(item_ids)
    return [i for i in items if i.id in wanted]


def batch_plan(
    store: Store,
    prompt: FrozenPrompt,
    dataset: str | Dataset,
    settings: JudgeSettings,
    scope: RunScope | None = None,
    *,
    file: bool = False,
) -> RunPlan:
    """The plan of a batch run (always a new run): the judge's server kept, else the environment's; a file
    (`file=True`) goes wherever its user uploads it, so its run names no server. The side of a split and the
    seal are decided here as for a live run."""
    judge = (
        PlannedJudge(replace(settings, base_url=None), "default") if file else plan_settings(settings, store)
    )
    return plan_run(store, prompt, dataset, scope=replace(scope or RunScope(), new_run=True), judge=judge)


def batch_requests(plan: RunPlan) -> int:
    """How many requests the plan's batch sends; InputError above the Batch API's limit per batch."""
    count = plan.total * (plan.settings.n if batch_mode(plan.settings) == "sampling" else 1)
    if count > MAX_REQUESTS:
        raise InputError(f"{count} requests exceed a batch's {MAX_REQUESTS}; split the dataset (or lower n)")
    return count


def as_new_run(plan: RunPlan) -> RunPlan:
    """The plan with a run of its own: a batch never adds its answers to a run that scored live (or another
    batch's); ConfigError for a plan that resumes a stored run."""
    if plan.run_id is not None:
        raise ConfigError(f"run {plan.run_id} is stored already: a batch always makes a run of its own")
    return replace(plan, scope=replace(plan.scope, new_run=True))


def prepare_batch(
    store: Store,
    prompt: FrozenPrompt,
    dataset_id: str,
    settings: JudgeSettings,
    path: str | Path,
    item_ids: list[str] | None = None,
    side: str | None = None,
) -> dict[str, Any]:
    """Create a run in the library and write its Batch API input file: {run_id, requests, path}."""
    scope = RunScope(side=side, item_ids=None if item_ids is None else tuple(item_ids))
    return prepare_planned(store, batch_plan(store, prompt, dataset_id, settings, scope, file=True), path)


def prepare_planned(store: Store, plan: RunPlan, path: str | Path) -> dict[str, Any]:
    """Record the planned run (a use of the test side included) and write its Batch API input file."""
    if batch_engine(plan.settings.provider) != FILE_ENGINE:
        having = " or ".join(f"{s.name}:MODEL" for s in specs() if s.public and s.batch_engine == FILE_ENGINE)
        raise InputError(
            f"batch files are for the OpenAI Batch API, not the {plan.settings.judge_id} judge; "
            f"choose an {having} judge"
        )
    count = batch_requests(plan)  # before a run is recorded
    plan = record_run(
        store, as_new_run(plan), key_needed=False
    )  # the file's user uploads it with their own key
    run_id = plan.recorded_id
    write_batch(plan.prompt, run_items(store, plan.dataset.id, plan.item_ids), run_id, plan.settings, path)
    store.set_run_fields(run_id, batch_file=str(path), batch_requests=count)
    return {"run_id": run_id, "requests": count, "path": str(path), "side": plan.side}


def completion_to_reply(body: dict[str, Any]) -> JudgeReply:
    """A chat-completion body -> JudgeReply, read exactly as the live OpenAI judge reads its answers."""
    from ..providers.openai_judge import completion_from_body

    try:
        completion = completion_from_body(body)
    except ValueError as exc:
        raise JudgeError(str(exc)[:300]) from None
    if not completion.choices:
        raise JudgeError("not a chat completion: it has no choices")
    return JudgeReply(tuple(completion.choices), completion.model or "", Usage(*completion.usage), 0.0, body)


def body_to_reply(body: dict[str, Any], provider: str) -> JudgeReply:
    """One batch result body in the shape of the provider's engine (a chat completion, a Gemini
    GenerateContentResponse) as a JudgeReply; a batch file's lines are the OpenAI Batch API's."""
    from .batch_engines import ENGINES  # the engines build on this module

    return ENGINES.get(batch_engine(provider) or FILE_ENGINE, ENGINES[FILE_ENGINE]).reply(body)


SOURCE_KEY = "geval_source"  # added to each line read: the file it came from, by hash


def read_lines(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Every output line of the files with its run, item, replica, file, line number and source."""
    out = []
    for path in paths:
        source = (
            "batch:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
        )  # which file a reply came from
        with Path(path).open(encoding="utf-8") as handle:
            for number, text in enumerate(handle, 1):
                if not text.strip():
                    continue
                try:
                    line = json.loads(text)
                    run_id, item_id, replica = parse_custom_id(line["custom_id"])
                except (json.JSONDecodeError, KeyError, TypeError, ValueError, RecursionError) as exc:
                    raise InputError(
                        f"not a Batch API output line: {type(exc).__name__}: {str(exc)[:200]}",
                        file=str(path),
                        line=number,
                    ) from None
                out.append(
                    {
                        "run_id": run_id,
                        "item_id": item_id,
                        "replica": replica,
                        "file": str(path),
                        "line": number,
                        "body": {**line, SOURCE_KEY: source},
                    }
                )
    return out


def read_output(
    paths: Sequence[str | Path], store: Store | None = None, expected_run: str | None = None
) -> dict[str, dict[str, dict[int, dict]]]:
    """run id -> item id -> replica -> output line, from output and error files; with a store, every line is
    checked first (check_lines) and a refused one stops the collect before anything is stored."""
    lines = read_lines(paths)
    if store is not None:
        check_lines(store, lines, expected_run, lambda run: _requests_sent(store, run))
    found: dict[str, dict[str, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for line in lines:
        found[line["run_id"]][line["item_id"]][line["replica"]] = line["body"]
    return found


def _requests_sent(store: Store, run: Run) -> dict[str, int]:
    """Item id -> how many requests the batch sent for it (recomputed from the run, never from a file)."""
    settings = run.judge
    replicas = 1 if batch_mode(settings) == "logprobs" else settings.n
    return {item.id: replicas for item in run_items(store, run.dataset_id, run.item_ids)}


def _line_error(line: dict) -> str | None:
    """Why a request failed, or None when it has a 200 response."""
    error = line.get("error")
    if error:
        return f"batch error {error.get('code')}: {error.get('message')}"
    response = line.get("response") or {}
    if response.get("status_code") != 200:
        message = ((response.get("body") or {}).get("error") or {}).get("message", "no body")
        return f"batch request answered {response.get('status_code')}: {message}"
    return None


def collect_batch(
    store: Store,
    paths: Sequence[str | Path],
    on_progress: Progress | None = None,
    expected_run: str | None = None,
) -> list[RunSummary]:
    """Score and store every item in Batch API output/error files; one summary per run found.

    Lines are checked first: a file naming a live run, another run than `expected_run`, two runs, an item or
    request the run never sent, or a request twice is refused whole (InputError with the count and reasons).
    """
    found = read_output(paths, store, expected_run)
    return [_collect_run(store, run_id, lines, on_progress) for run_id, lines in found.items()]


def _collect_run(
    store: Store, run_id: str, lines: dict[str, dict[int, dict]], on_progress: Progress | None
) -> RunSummary:
    run = store.get_run(run_id)
    prompt = store.get_prompt(run.prompt_id)
    settings = run.judge
    items = run_items(store, run.dataset_id, run.item_ids)
    judged = store.judged_item_ids(run.id)
    summary = RunSummary(run.id, "done", settings.mode, len(items), skipped=len(judged))
    # Scoring as logprobs, not auto: a batch cannot send the fallback request, so say so per item.
    session = Session(
        prompt,
        store,
        summary,
        replace(settings, mode=batch_mode(settings)),
        settings.provider,
        on_progress=on_progress,
    )
    missing = 0
    for item in items:
        if item.id in judged:
            continue
        requests = item_requests(prompt, item, settings)
        got = lines.get(item.id, {})
        if any(r not in got for r in range(len(requests))):
            missing += 1  # not in these files: a later collect (or a live resume) fills it in
            continue
        _collect_item(session, item, requests, got)
    summary.status = "done" if missing == 0 else "running"
    if missing == 0:
        finish(store, summary, settings, discount=BATCH_DISCOUNT, tally=session.tally)
    store.set_run_fields(run.id, batch_missing=missing)
    return summary


def _collect_item(session: Session, item: Item, requests: list[JudgeRequest], got: dict[int, dict]) -> None:
    server = server_id(session.settings.base_url, session.provider)  # where the batch went (the run's server)
    job = Job(item, session.settings.mode, cache_key(requests[0], session.provider, server), requests[0])
    session.server = server
    replies = []
    for replica, request in enumerate(requests):
        line = got[replica]
        error = _line_error(line)
        try:
            if error:
                raise JudgeError(error)
            reply = body_to_reply(line["response"]["body"], session.provider)
            check_reply(reply, request.ratings)  # no retry in a batch: the item keeps the error
        except JudgeError as exc:
            session.write_error(job, exc)
            return
        # Never into the judge cache: a file's replies score this run only, never a live run that replays them.
        replies.append(reply)
    reply = JudgeReply.merge(replies)
    session.summary.input_tokens += reply.usage.input_tokens
    session.summary.output_tokens += reply.usage.output_tokens
    session.summary.cached_input_tokens += reply.usage.cached_input_tokens
    session.score(job, reply, cached=False, source=got[0].get(SOURCE_KEY, "batch"))
