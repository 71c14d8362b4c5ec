"""Score a dataset with a frozen prompt: bounded concurrency, retries, cache, progress, resume, cancel.

Threads (see DESIGN.md): worker threads only call `judge.judge` (with retries). Their results are
collected in the calling thread, which scores them, writes them to the library one item at a time
and calls `on_progress`, because Streamlit elements and sqlite3 connections belong to that thread.
Results are taken as they complete (`wait(FIRST_COMPLETED)`, the loop `as_completed` runs inside) so
a slow or hanging request never holds back the items behind it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

from .calls import Cancelled, build_request, cache_key, call_with_retries
from .cost import record_run_totals
from .errors import ConfigError, LogprobsUnavailableError
from .providers._common import UnreachableError
from .providers.base import Judge
from .replies import reply_from_dict, reply_to_dict
from .scoring import score_reply
from .types import FrozenPrompt, Item, JudgeReply, JudgeSettings

Progress = Callable[[int, int, dict], None]
POLL_S = 0.2  # how often the collecting loop looks at the cancel flag while every call is slow
# A run stops when this many items failed alike before any succeeded: logprobs mode on a judge that gives
# none, or a judge that cannot be reached at all. Paying (or waiting) for every item to fail helps nobody.
HOPELESS_LIMIT = 3


@dataclass
class RunSummary:
    """What one call of `run_scoring` did."""

    run_id: str
    status: str  # done | cancelled | failed (the library's run statuses)
    mode: str  # the run's mode: logprobs | sampling | auto
    total: int  # items asked for
    skipped: int = 0  # already judged before this call (resume)
    judged: int = 0  # judgments written by this call
    scored: int = 0  # ... with a score
    null_scores: int = 0  # ... without a score and without an error (no valid rating)
    failed: int = 0  # ... carrying an error
    cached: int = 0  # ... answered from the judge cache
    fallbacks: int = 0  # ... where auto mode fell back to sampling
    judge_calls: int = 0  # requests sent to the judge, retries included
    input_tokens: int = 0  # spent by this call; cached answers cost nothing
    output_tokens: int = 0
    seconds: float = 0.0
    model_version: str | None = None
    error: str | None = None  # why a failed run stopped

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class _Job:
    """One request for one item; a fallback job carries what the logprobs attempt spent."""

    item: Item
    mode: str  # logprobs | sampling: what this request asks for
    key: str
    request: Any
    fallback: bool = False
    spent: dict[str, float] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0,
                                                              "latency_s": 0.0})


class _Run:
    """State of one run_scoring call; every method runs in the calling thread."""

    def __init__(self, prompt: FrozenPrompt, judge: Judge, library: Any, summary: RunSummary,
                 settings: JudgeSettings, use_cache: bool, reducer: str, on_progress: Progress | None):
        self.prompt, self.judge, self.library, self.summary = prompt, judge, library, summary
        self.settings, self.use_cache, self.reducer, self.on_progress = settings, use_cache, reducer, on_progress
        self.provider = getattr(judge, "provider", "unknown")
        self.sampling_only = False  # auto mode saw a judge without logprobs: go straight to sampling
        self.logprobs_seen = False
        self.replied = False  # the judge answered at least once
        self.hopeless = {"logprobs": 0, "unreachable": 0}
        self.followups: deque[_Job] = deque()
        self.done = summary.skipped

    def job(self, item: Item, mode: str, fallback: bool = False) -> _Job:
        """The request for an item in one mode."""
        request = build_request(self.prompt, item, self.settings, mode)
        return _Job(item, mode, cache_key(request, self.provider), request, fallback)

    def first_job(self, item: Item) -> tuple[_Job, JudgeReply | None]:
        """The item's first request and its cached reply, if any."""
        auto = self.settings.mode == "auto"
        if auto and self.sampling_only:
            job = self.job(item, "sampling", fallback=True)
            return job, self.cached(job)
        job = self.job(item, "logprobs" if auto else self.settings.mode)
        reply = self.cached(job)
        if auto and reply is None and self.use_cache:
            # An earlier auto run that fell back cached the sampling answer: use it, call nobody.
            sampling = self.job(item, "sampling", fallback=True)
            fallback_reply = self.cached(sampling)
            if fallback_reply is not None:
                return sampling, fallback_reply
        return job, reply

    def cached(self, job: _Job) -> JudgeReply | None:
        """The cached reply to a job's request, if caching is on and there is one."""
        if not self.use_cache:
            return None
        data = self.library.cache_get(job.key)
        return None if data is None else reply_from_dict(data)

    def collect(self, future: Future, job: _Job) -> None:
        """Handle one finished worker call."""
        if future.cancelled():
            return
        try:
            reply, attempts, seconds = future.result()
        except Cancelled:
            return  # dropped: a resumed run asks again
        except Exception as exc:
            self.summary.judge_calls += getattr(exc, "attempts", 1)
            if not (isinstance(exc, LogprobsUnavailableError) and self.fall_back(job, None)):
                self.write_error(job, exc)
            return
        self.replied = True
        self.summary.judge_calls += attempts
        self.summary.input_tokens += reply.usage.input_tokens
        self.summary.output_tokens += reply.usage.output_tokens
        if self.use_cache:
            self.library.cache_put(job.key, reply_to_dict(reply))
        self.score(job, reply, cached=False, seconds=seconds)

    def fall_back(self, job: _Job, reply: JudgeReply | None, seconds: float = 0.0) -> bool:
        """In auto mode, queue the sampling request for an item the judge gave no logprobs for."""
        if self.settings.mode != "auto" or job.mode != "logprobs":
            return False
        self.sampling_only = True  # a judge without logprobs will not grow them on the next item
        follow = self.job(job.item, "sampling", fallback=True)
        if reply is not None:
            follow.spent = {"input_tokens": reply.usage.input_tokens,
                            "output_tokens": reply.usage.output_tokens, "latency_s": seconds}
        self.followups.append(follow)
        return True

    def score(self, job: _Job, reply: JudgeReply, cached: bool, seconds: float = 0.0) -> None:
        """Score a reply and write the judgment (or queue the auto fallback)."""
        try:
            item_score = score_reply(reply, self.prompt.dimension.scale, job.mode, self.reducer)
        except LogprobsUnavailableError as exc:
            if not self.fall_back(job, reply, seconds):
                self.write_error(job, exc, reply)
            return
        if job.mode == "logprobs":
            self.logprobs_seen = True
        judgment = item_score.to_dict()
        judgment.update(
            item_id=job.item.id, fallback=job.fallback, model_version=reply.model_version,
            input_tokens=int(job.spent["input_tokens"] + reply.usage.input_tokens),
            output_tokens=int(job.spent["output_tokens"] + reply.usage.output_tokens),
            latency_s=0.0 if cached else job.spent["latency_s"] + seconds, cached=cached, error=None,
        )
        s = self.summary
        s.scored += judgment["score"] is not None
        s.null_scores += judgment["score"] is None
        s.cached += cached
        s.fallbacks += job.fallback
        s.model_version = s.model_version or reply.model_version
        self.write(judgment)

    def write_error(self, job: _Job, exc: BaseException, reply: JudgeReply | None = None) -> None:
        """Record a failed item: no score, the error text, and the run goes on unless it is hopeless."""
        attempts = getattr(exc, "attempts", 1)
        where = f" after {attempts} attempts" if attempts > 1 else ""
        self.summary.failed += 1
        self.write({
            "item_id": job.item.id, "score": None, "raw_score": None, "top_score": None,
            "distribution": {}, "valid_mass": None, "replies": reply.texts if reply else [],
            "parsed": 0, "unparsed": 0, "ambiguous": False, "mode": job.mode, "fallback": job.fallback,
            "model_version": reply.model_version if reply else None,
            "input_tokens": int(job.spent["input_tokens"]), "output_tokens": int(job.spent["output_tokens"]),
            "latency_s": job.spent["latency_s"], "cached": False,
            "error": f"{type(exc).__name__}{where}: {exc}",
        })
        self.stop_if_hopeless(exc)

    def stop_if_hopeless(self, exc: BaseException) -> None:
        """Stop when items keep failing alike before any succeeded: no logprobs, or no server to reach."""
        if isinstance(exc, LogprobsUnavailableError):
            kind, seen, why = "logprobs", self.logprobs_seen, str(exc)
        elif isinstance(exc, UnreachableError):
            kind, seen = "unreachable", self.replied
            why = f"{exc}; check that the judge's server is running and its URL, then resume the run"
        else:
            return
        self.hopeless[kind] += 1
        if not seen and self.hopeless[kind] >= HOPELESS_LIMIT and self.summary.error is None:
            self.summary.error = why

    def write(self, judgment: dict) -> None:
        """Save one judgment now (a crash loses nothing written) and report progress."""
        self.library.save_judgment(self.summary.run_id, judgment["item_id"], judgment)
        self.summary.judged += 1
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.summary.total, judgment)


def _unique_todo(items: list[Item], judged: set[str]) -> list[Item]:
    seen = set(judged)
    todo = []
    for item in items:
        if item.id not in seen:
            seen.add(item.id)
            todo.append(item)
    return todo


def run_scoring(prompt: FrozenPrompt, items: list[Item], judge: Judge, library: Any, run_id: str,
                concurrency: int = 8, on_progress: Progress | None = None,
                cancel: threading.Event | None = None, max_attempts: int = 5,
                settings: JudgeSettings | None = None, use_cache: bool = True, reducer: str = "mean",
                retry_base: float = 0.5, retry_cap: float = 30.0, cancel_grace: float = 2.0) -> RunSummary:
    """Judge every item not yet judged in `run_id`, writing each judgment as it finishes.

    settings: the judge settings to use (default: the prompt's own, which define the metric).
    on_progress(done, total, judgment) is called in this thread after each write; done counts
    items judged earlier too. After `cancel` is set no request is sent; calls already running are
    written if they finish within `cancel_grace` seconds and dropped otherwise (a resumed run redoes
    them). Re-running a finished run makes no judge call: its items are skipped, and the same
    requests in another run are answered from the library's judge cache.
    """
    if concurrency < 1 or max_attempts < 1:
        raise ConfigError(f"concurrency and max_attempts must be at least 1, got {concurrency}, {max_attempts}")
    settings = settings or prompt.dimension.judge
    start = time.perf_counter()
    todo = _unique_todo(items, library.judged_item_ids(run_id))
    total = len({item.id for item in items})
    summary = RunSummary(run_id, "done", settings.mode, total, skipped=total - len(todo))
    run = _Run(prompt, judge, library, summary, settings, use_cache, reducer, on_progress)
    stop = threading.Event()  # tells workers waiting to retry that the run is over
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="geval-judge")
    try:
        _loop(run, deque(todo), pool, stop, cancel, concurrency, max_attempts, retry_base, retry_cap,
              cancel_grace)
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    if summary.error:
        summary.status = "failed"
    elif cancel is not None and cancel.is_set() and summary.skipped + summary.judged < summary.total:
        summary.status = "cancelled"
    summary.seconds = time.perf_counter() - start
    record_run_totals(library, summary.run_id, summary.status, settings, summary.mode, summary.error)
    return summary


def _loop(run: _Run, queue: deque[Item], pool: ThreadPoolExecutor, stop: threading.Event,
          cancel: threading.Event | None, concurrency: int, max_attempts: int, base: float, cap: float,
          grace: float) -> None:
    """Keep up to 2x concurrency requests queued (so workers never idle while this thread writes)."""
    pending: dict[Future, _Job] = {}
    deadline: float | None = None

    def stopping() -> bool:
        return (cancel is not None and cancel.is_set()) or run.summary.error is not None

    while pending or (deadline is None and (queue or run.followups)):
        if deadline is None and stopping():
            deadline = time.monotonic() + grace
            stop.set()
            for future in pending:
                future.cancel()  # not started yet: never sent
            continue
        # Checked per item: a stream of cache hits must not run past a cancel either.
        while (queue or run.followups) and len(pending) < 2 * concurrency and not stopping():
            if run.followups:
                job = run.followups.popleft()
                reply = run.cached(job)
            else:
                job, reply = run.first_job(queue.popleft())
            if reply is not None:
                run.score(job, reply, cached=True)
                continue
            future = pool.submit(call_with_retries, run.judge, job.request, max_attempts, stop, base, cap)
            pending[future] = job
        if not pending:
            continue
        if deadline is not None and time.monotonic() > deadline:
            return
        finished, _ = wait(list(pending), timeout=POLL_S, return_when=FIRST_COMPLETED)
        for future in finished:
            run.collect(future, pending.pop(future))
