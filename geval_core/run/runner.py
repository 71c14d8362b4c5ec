"""Score a dataset with a frozen prompt: bounded concurrency, retries, cache, progress, resume, cancel.

Threads: worker threads only call `judge.judge` (with retries). Their results are
collected in the calling thread, which scores them through a `Session`, writes them to the store (the
calls that finished together in one commit) and calls `on_progress`, because Streamlit elements and
sqlite3 connections belong to that thread. Results are taken as they complete (from the pool's queue of
finished calls) so a slow or hanging request never holds back the items behind it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future

from ..prompts.inputs import require_inputs
from ..providers.on_demand import built
from ..store import Store
from ..types import FrozenPrompt, Item, Judge, JudgeSettings
from .calls import Cancelled, call_with_retries, context_problem
from .cost import load_prices, request_tokens
from .feed import Feed, StreamedItems, unique_todo
from .hopeless import HopelessWatch
from .options import RunOptions, RunSummary
from .pacing import Gate
from .session import Job, Progress, Session
from .totals import TALLY_KEY, RunTally, current_tally
from .workers import DaemonPool, new_owner

HEARTBEAT_S = 5.0  # how often a running run renews its lease (a lease unrenewed for 20 s is taken over)
POLL_S = 0.2  # how often the collecting loop looks at the cancel flag while every call is slow


def run_scoring(
    prompt: FrozenPrompt,
    items: Iterable[Item] | StreamedItems,
    judge: Judge,
    store: Store,
    run_id: str,
    options: RunOptions | None = None,
    on_progress: Progress | None = None,
    cancel: threading.Event | None = None,
    gate: Gate | None = None,
) -> RunSummary:
    """Judge every item not yet judged in `run_id`, writing each judgment as it finishes.

    items: a list (checked whole before any call), any other iterable, or StreamedItems (read a batch at
    a time as the run goes: see feed.py). options.settings: the judge settings to use (default: the
    prompt's own, which define the metric). on_progress(done, total, judgment) is called in this thread
    after each write; done counts items judged earlier too. After `cancel` is set no request is sent;
    calls already running are written if they finish within `options.cancel_grace` seconds and dropped
    otherwise (a resumed run redoes them). Re-running a finished run makes no judge call: its items are
    skipped, and the same requests in another run are answered from the store's judge cache. `gate`
    (made from the options when not given) paces the calls; a caller passes its own to show its state.
    """
    options = options or RunOptions()
    settings = options.settings or prompt.dimension.judge
    start = time.perf_counter()
    summary, feed = _feed_for(prompt, items, store, run_id, settings, options.prefix_order)
    stop = threading.Event()  # tells workers waiting to retry that the run is over
    owner = new_owner()
    store.take_lease(run_id, owner)  # one runner per run: a second one is refused before any call
    pool = None
    try:
        # Made under the lease: the totals it starts from cannot change behind it.
        session = Session(
            prompt,
            store,
            summary,
            settings,
            judge.provider,
            options.use_cache,
            options.reducer,
            on_progress,
            watch=HopelessWatch(fail_fast=options.fail_fast),
        )
        pool = DaemonPool(options.concurrency)
        gate = gate or Gate(options.concurrency, options.rpm, options.tpm)
        _loop(
            session, judge, feed, pool, stop, cancel, options, gate, lambda: store.renew_lease(run_id, owner)
        )
    finally:
        stop.set()
        if pool is not None:
            pool.shutdown()
        store.release_lease(run_id, owner)
    unread = feed.counting and not feed.exhausted  # an iterable of unknown length, stopped before its end
    if summary.error:
        summary.status = "failed"
    elif (
        cancel is not None
        and cancel.is_set()
        and (summary.skipped + summary.judged < summary.total or unread)
    ):
        summary.status = "cancelled"
    summary.seconds = time.perf_counter() - start - summary.setup_seconds
    finish(store, summary, settings, tally=session.tally)
    return summary


def _feed_for(
    prompt: FrozenPrompt,
    items: Iterable[Item] | StreamedItems,
    store: Store,
    run_id: str,
    settings: JudgeSettings,
    prefix_order: bool = True,
) -> tuple[RunSummary, Feed]:
    """The run's summary (what is known before the first item is read) and the feed of its items to judge."""
    if isinstance(items, (list, tuple)):
        require_inputs(prompt, items, "the data")  # before any judge call: never score empty placeholders
        todo = unique_todo(list(items), store.judged_item_ids(run_id))
        total = len({item.id for item in items})
        summary = RunSummary(run_id, "done", settings.mode, total, skipped=total - len(todo))
        return summary, Feed(
            todo,
            store,
            summary,
            prompt,
            lookup=False,
            unique=True,
            check_inputs=False,
            count_items=False,
            prefix_order=prefix_order,
        )
    if isinstance(items, StreamedItems):
        summary = RunSummary(run_id, "done", settings.mode, items.total, skipped=items.judged)
        source = items.items if items.judged < items.total else ()  # all judged: nothing to read
        return summary, Feed(
            source,
            store,
            summary,
            prompt,
            lookup=True,
            unique=items.unique,
            check_inputs=True,
            count_items=False,
            on_batch=items.on_batch,
            prefix_order=prefix_order,
        )
    summary = RunSummary(run_id, "done", settings.mode, 0)
    return summary, Feed(
        items,
        store,
        summary,
        prompt,
        lookup=True,
        unique=False,
        check_inputs=True,
        count_items=True,
        prefix_order=prefix_order,
    )


def finish(
    store: Store,
    summary: RunSummary,
    settings: JudgeSettings,
    discount: float = 1.0,
    tally: RunTally | None = None,
) -> None:
    """Store a run's status and its totals over every session of it (a resumed run adds up).

    `tally`: the totals the session kept as it wrote (else they are taken from the store: the stored tally
    when it is current, or a fold over the stored rows)."""
    tally = tally or current_tally(store, summary.run_id)
    totals = tally.fields(settings, load_prices(store=store), discount)
    store.finish_run(
        summary.run_id,
        summary.status,
        mode=summary.mode,
        run_error=summary.error,
        **{TALLY_KEY: tally.to_dict()},
        **totals,
    )


def _loop(
    session: Session,
    judge: Judge,
    queue: Feed,
    pool: DaemonPool,
    stop: threading.Event,
    cancel: threading.Event | None,
    options: RunOptions,
    gate: Gate,
    heartbeat: Callable[[], None],
) -> None:
    """Keep up to 2x concurrency requests queued (so workers never idle while this thread writes)."""
    pending: dict[Future, Job] = {}
    deadline: float | None = None
    beat = time.monotonic()
    concurrency = options.concurrency

    def stopping() -> bool:
        return (cancel is not None and cancel.is_set()) or session.summary.error is not None

    while pending or (deadline is None and (session.followups or queue.has_next())):
        if deadline is None and stopping():
            deadline = time.monotonic() + options.cancel_grace
            stop.set()
            for future in pending:
                future.cancel()  # not started yet: never sent
            continue
        # Checked per item: a stream of cache hits must not run past a cancel either.
        while (session.followups or queue.has_next()) and len(pending) < 2 * concurrency and not stopping():
            if session.followups:
                job = session.followups.popleft()
                reply = session.cached(job)
            else:
                job, reply = session.first_job(queue.popleft())
            if reply is not None:
                session.score(job, reply, cached=True)
                continue
            too_long = context_problem(job.request, session.context)
            if too_long is not None:  # never sent, never scored: an error that says why
                session.write_error(job, too_long)
                continue
            judge = _built_timed(judge, session.summary)  # a judge made on demand is made now, in this thread
            future = pool.submit(
                call_with_retries,
                judge,
                job.request,
                options.max_attempts,
                stop,
                options.retry_base,
                options.retry_cap,
                gate,
                request_tokens(job.request),
            )
            pending[future] = job
        if not pending:
            continue
        if deadline is not None and time.monotonic() > deadline:
            return
        if time.monotonic() - beat > HEARTBEAT_S:
            heartbeat()  # in this thread: the store's connection belongs to it
            beat = time.monotonic()
        finished = pool.finished(POLL_S)  # waited for outside the batch: no write lock held while waiting
        if finished:
            with session.batch():
                for future in finished:
                    _collect(session, future, pending.pop(future))


def _built_timed(judge: Judge, summary: RunSummary) -> Judge:
    """The judge, made now if made on demand; the time it took (SDK import, model load) kept apart."""
    began = time.perf_counter()
    real = built(judge)
    if real is not judge:
        summary.setup_seconds += time.perf_counter() - began
    return real


def _collect(session: Session, future: Future, job: Job) -> None:
    """Hand one finished worker call to the session."""
    if future.cancelled():
        return
    try:
        reply, attempts, seconds = future.result()
    except Cancelled:
        return  # dropped: a resumed run asks again
    except Exception as exc:
        session.failed(job, exc)
        return
    session.answered(job, reply, attempts, seconds)
