"""One scoring session of a run: turns replies (live, cached or from a batch file) into stored judgments.

Every method runs in the thread that owns the store (sqlite3 connections belong to it): the live runner calls it from its
collecting loop, `batch.collect_batch` calls it line by line. This is the runner's public hook.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import IntegrityError, JudgeError, LogprobsUnavailableError
from ..judgment import Judgment
from ..providers.context import context_window
from ..store import Store
from ..types import FrozenPrompt, Item, JudgeReply, JudgeRequest, JudgeSettings
from .calls import build_request, cache_key
from .hopeless import HopelessWatch
from .one_item import AutoFallback, Spent, error_judgment, judgment_of, server_of
from .options import RunSummary
from .totals import RunTally, current_tally

Progress = Callable[[int, int, Judgment], None]


@dataclass
class Job:
    """One request for one item; a fallback job carries what the logprobs attempt spent."""

    item: Item
    mode: str  # logprobs | sampling: what this request asks for
    key: str  # the judge-cache key of the request
    request: JudgeRequest
    fallback: bool = False
    spent: Spent = Spent()


@dataclass
class Session:
    """Scores and stores the items of one run; counts what it did in `summary`."""

    prompt: FrozenPrompt
    store: Store
    summary: RunSummary
    settings: JudgeSettings
    provider: str
    use_cache: bool = True
    reducer: str = "mean"
    on_progress: Progress | None = None
    followups: deque[Job] = field(default_factory=deque)  # auto-mode sampling requests still to send
    logprobs_seen: bool = False
    replied: bool = False  # the judge answered at least once
    watch: HopelessWatch = field(default_factory=HopelessWatch)  # when the run stops: its judge cannot score
    server: str = ""  # who answers (the resolved server address, or the provider's own API)
    context: int | None = None  # tokens the judge reads, when known: longer items are errors, never sent
    tally: RunTally = field(init=False)  # the run's totals over every session, kept as judgments are written
    auto: AutoFallback = field(init=False)  # the auto-mode fallback, as judge_item drives it
    # Progress held back until a batch commits: (done, judgment) per write; None outside a batch.
    _unreported: list[tuple[int, Judgment]] | None = field(default=None, init=False, repr=False)

    @property
    def done(self) -> int:
        """Items judged, earlier sessions included."""
        return self.summary.skipped + self.summary.judged

    def __post_init__(self) -> None:
        # The server the SDK will really send to, OPENAI_BASE_URL included: it keys the cache and is recorded.
        self.server = self.server or server_of(self.settings)
        self.context = self.context or context_window(self.settings)
        self.tally = current_tally(self.store, self.summary.run_id)
        self.auto = AutoFallback(self.settings.mode)

    def job(self, item: Item, mode: str, fallback: bool = False) -> Job:
        """The request for an item in one mode."""
        request = build_request(self.prompt, item, self.settings, mode)
        return Job(item, mode, cache_key(request, self.provider, self.server), request, fallback)

    def first_job(self, item: Item) -> tuple[Job, JudgeReply | None]:
        """The item's first request (by the fallback's rule) and its cached reply, if any."""
        mode, fell_back = self.auto.first()
        job = self.job(item, mode, fallback=fell_back)
        reply = self.cached(job)
        if self.settings.mode == "auto" and not fell_back and reply is None and self.use_cache:
            # An earlier auto run that fell back cached the sampling answer: use it, call nobody.
            sampling = self.job(item, "sampling", fallback=True)
            fallback_reply = self.cached(sampling)
            if fallback_reply is not None:
                return sampling, fallback_reply
        return job, reply

    def cached(self, job: Job) -> JudgeReply | None:
        """The cached reply to a job's request, if caching is on and there is one that passes its check."""
        if not self.use_cache:
            return None
        try:
            data = self.store.cache_get(job.key)
            return None if data is None else JudgeReply.from_dict(data)
        except (IntegrityError, KeyError, TypeError, ValueError):
            # A tampered or unreadable entry is a miss: the judge is asked again and its reply replaces it.
            self.summary.cache_rejected += 1
            return None

    @contextmanager
    def batch(self) -> Iterator[None]:
        """The judgments written inside are committed together, then reported to on_progress.

        For replies that finished together: one commit for all of them (a commit costs more than the
        writes it holds), and never a progress report for a judgment that is not stored yet.
        """
        if self._unreported is not None:  # inside a batch already: join it
            yield
            return
        self._unreported = []
        try:
            with self.store.transaction():
                yield
            unreported = self._unreported
        finally:
            self._unreported = None
        for done, judgment in unreported:
            self._report(done, judgment)

    def answered(self, job: Job, reply: JudgeReply, attempts: int = 1, seconds: float = 0.0) -> None:
        """A fresh reply from the judge: count it, cache it, score it."""
        self.replied = True
        self.summary.judge_calls += attempts
        self.summary.input_tokens += reply.usage.input_tokens
        self.summary.output_tokens += reply.usage.output_tokens
        self.summary.cached_input_tokens += reply.usage.cached_input_tokens
        with self.batch():  # the judgment and its cache entry in one commit, not two
            self.score(job, reply, cached=False, seconds=seconds)

    def failed(self, job: Job, exc: Exception) -> None:
        """A judge call that failed for good (after its retries)."""
        self.summary.judge_calls += exc.attempts if isinstance(exc, JudgeError) else 1
        if not (isinstance(exc, LogprobsUnavailableError) and self.fall_back(job, None)):
            self.write_error(job, exc)

    def fall_back(self, job: Job, reply: JudgeReply | None, seconds: float = 0.0) -> bool:
        """Queue the sampling request for an item the judge gave no logprobs for, when the fallback's rule says so."""
        if not self.auto.after_no_logprobs(job.mode):
            return False
        follow = self.job(job.item, "sampling", fallback=True)
        follow.spent = Spent.of(reply, seconds)
        self.followups.append(follow)
        return True

    def score(
        self, job: Job, reply: JudgeReply, cached: bool, seconds: float = 0.0, source: str = ""
    ) -> None:
        """Score a reply and write the judgment (or queue the auto fallback); `source` says where the reply came
        from (default: live, or the cache when `cached`)."""
        source = source or ("cache" if cached else "live")
        try:
            judgment = judgment_of(
                job.item.id,
                reply,
                self.prompt.dimension.scale,
                job.mode,
                self.reducer,
                floor=self.settings.valid_mass_floor,
                fallback=job.fallback,
                spent=job.spent,
                seconds=seconds,
                cached=cached,
                server=self.server,
                source=source,
            )
        except LogprobsUnavailableError as exc:
            if not self.fall_back(job, reply, seconds):
                self.write_error(job, exc, reply)
            return
        self.logprobs_seen |= job.mode == "logprobs"
        s = self.summary
        s.scored += judgment.score is not None
        s.null_scores += judgment.score is None
        s.below_floor += judgment.note is not None and judgment.note.startswith("the judge put")
        s.cached += cached
        s.fallbacks += job.fallback
        s.model_version = s.model_version or reply.model_version
        self.write(judgment)
        if (
            source == "live" and self.use_cache
        ):  # a live reply, once its judgment is stored: the entry names it
            self.store.cache_put(job.key, reply.to_dict(), origin=f"{self.summary.run_id}/{job.item.id}")

    def write_error(self, job: Job, exc: BaseException, reply: JudgeReply | None = None) -> None:
        """Record a failed item: no score, the error text, and the run goes on unless it is hopeless."""
        if self.summary.error is not None:
            return  # the run has stopped: calls still in flight fail alike; their items wait for the resume
        self.summary.failed += 1
        self.write(
            error_judgment(
                job.item.id,
                exc,
                job.mode,
                fallback=job.fallback,
                reply=reply,
                spent=job.spent,
                server=self.server,
            )
        )
        self.stop_if_hopeless(exc)

    def stop_if_hopeless(self, exc: BaseException) -> None:
        """Stop the run when the watch says its judge cannot score (the first reason given stands)."""
        if self.summary.error is None:
            self.summary.error = self.watch.after_error(
                exc, self.summary.scored, self.summary.failed, self.logprobs_seen, self.replied
            )

    def write(self, judgment: Judgment) -> None:
        """Save one judgment now (a crash loses nothing written; in a batch, at its commit) and report progress."""
        saved, superseded = self.store.save_next_attempt(self.summary.run_id, judgment)
        if saved:  # the totals follow the stored rows: in the same thread, before the commit is reported
            self.tally.written(judgment, superseded)
        self.summary.judged += 1
        self._watch(judgment)
        if self._unreported is not None:
            self._unreported.append((self.done, judgment))
        else:
            self._report(self.done, judgment)

    def _watch(self, judgment: Judgment) -> None:
        """Stop the run once the watch finds the last items in a row all without a score."""
        why = self.watch.after_judgment(judgment)
        if why is not None and self.summary.error is None:
            self.summary.error = why

    def _report(self, done: int, judgment: Judgment) -> None:
        if self.on_progress is not None:
            self.on_progress(done, self.summary.total, judgment)
