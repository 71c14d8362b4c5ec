"""run_scoring with the scripted judge: scores, writes, progress, cache, resume, retries, cancel, modes."""

from __future__ import annotations

import threading
import time

import pytest
from runner_helpers import (
    WORKED,
    WORKED_RAW,
    WORKED_SCORE,
    FlakyJudge,
    NoLogprobsJudge,
    close,
    setup_library,
    worked_judge,
)

from geval_core.errors import ConfigError, JudgeError, LogprobsUnavailableError, UnreachableError
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeSettings


def new_run(library, prompt, dataset, settings=None):
    return library.create_run(prompt.id, dataset["id"], settings or prompt.dimension.judge)


def test_scores_every_item_with_the_weighted_score_and_writes_it(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=5)
    judge = worked_judge()
    run_id = new_run(library, prompt, dataset)
    seen = []
    main = threading.get_ident()
    summary = run_scoring(
        prompt,
        items,
        judge,
        library,
        run_id,
        RunOptions(concurrency=3),
        on_progress=lambda d, t, j: seen.append((d, t, j.item_id, threading.get_ident())),
    )
    assert summary.status == "done" and summary.judged == 5 and summary.scored == 5
    assert summary.judge_calls == 5 and summary.failed == 0 and summary.cached == 0
    assert [d for d, *_ in seen] == [1, 2, 3, 4, 5] and {t for _, t, *_ in seen} == {5}
    assert {tid for *_, tid in seen} == {main}  # progress is reported in the calling thread
    rows = library.judgments(run_id)
    assert [r["item_id"] for r in rows] == [i.id for i in items]
    for row in rows:
        assert close(row["score"], WORKED_SCORE) and close(row["raw_score"], WORKED_RAW)
        assert close(row["valid_mass"], 0.95) and row["top_rating"] == 3
        assert close(row["distribution"][3], 0.6 / 0.95) and close(row["distribution"][1], 0.0)
        assert row["mode"] == "logprobs" and row["fallback"] is False and row["cached"] is False
        assert row["error"] is None and row["model_version"] == "scripted-1"
    # ScriptedJudge counts words as input tokens and one output token per reply.
    words = [sum(len(m["content"].split()) for m in r.messages) for r in judge.requests]
    assert summary.input_tokens == sum(words) and summary.output_tokens == 5
    run = library.get_run(run_id)
    assert run.status == "done" and run.input_tokens == sum(words) and run.output_tokens == 5
    assert run.model_version == "scripted-1" and run.cost_usd == 0.0  # the prompt's judge is local


def test_request_carries_form_line_ratings_and_prompt_options(tmp_path):
    settings = JudgeSettings(
        provider="openai", model="gpt-4o-2024-08-06", top_logprobs=7, max_tokens=3, seed=11
    )
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=1, judge=settings)
    judge = worked_judge()
    run_id = new_run(library, prompt, dataset)
    run_scoring(prompt, items, judge, library, run_id)
    (request,) = judge.requests
    assert request.assistant_prefix == "- Coherence: " and request.ratings == (1, 2, 3, 4, 5)
    assert request.model == "gpt-4o-2024-08-06" and request.top_logprobs == 7 and request.logprobs is True
    assert request.max_tokens == 3 and request.seed == 11 and request.n == 1
    assert request.messages[0]["content"].endswith("- Coherence:")
    assert "Document number 0." in request.messages[0]["content"]
    # A dated gpt-4o is priced as gpt-4o: $2.50 in, $10 out per million tokens.
    words = sum(len(m["content"].split()) for m in request.messages)
    assert close(library.get_run(run_id).cost_usd, (words * 2.5 + 1 * 10.0) / 1e6)


def test_second_run_is_answered_from_the_cache(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=4)
    first = worked_judge()
    run_scoring(prompt, items, first, library, new_run(library, prompt, dataset))
    second = worked_judge()
    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(prompt, items, second, library, run_id)
    assert second.requests == [] and summary.judge_calls == 0 and summary.cached == 4
    rows = library.judgments(run_id)
    assert all(r["cached"] for r in rows) and all(close(r["score"], WORKED_SCORE) for r in rows)
    assert library.get_run(run_id).input_tokens == 0  # nothing paid in the cached run
    # The finished run itself, run again: every item skipped, no call, no new row.
    again = run_scoring(prompt, items, second, library, run_id)
    assert again.skipped == 4 and again.judged == 0 and second.requests == []
    assert len(library.judgments(run_id)) == 4


def test_cache_off_calls_the_judge_again(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3)
    run_scoring(prompt, items, worked_judge(), library, new_run(library, prompt, dataset))
    judge = worked_judge()
    run_scoring(prompt, items, judge, library, new_run(library, prompt, dataset), RunOptions(use_cache=False))
    assert len(judge.requests) == 3


def test_resume_skips_judged_items_and_retries_errored_ones(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=6)
    run_id = new_run(library, prompt, dataset)
    run_scoring(prompt, items[:2], worked_judge(), library, run_id, RunOptions(use_cache=False))

    class FailOne(ScriptedJudge):
        def judge(self, request):
            if "Document number 3." in request.messages[0]["content"]:
                raise JudgeError("HTTP 400: bad request")
            return super().judge(request)

    failing = FailOne(lambda r: {"4": 1.0})
    summary = run_scoring(prompt, items, failing, library, run_id, RunOptions(use_cache=False))
    assert summary.skipped == 2 and summary.judge_calls == 4 and summary.failed == 1
    assert library.get_run(run_id).errors == 1
    error_row = next(r for r in library.judgments(run_id) if r["item_id"] == "i003")
    assert error_row["score"] is None and error_row["error"] == "JudgeError: HTTP 400: bad request"
    fixed = worked_judge()
    summary = run_scoring(prompt, items, fixed, library, run_id, RunOptions(use_cache=False))
    assert len(fixed.requests) == 1 and summary.skipped == 5  # only the errored item again
    rows = library.judgments(run_id)
    assert len(rows) == 6 and len({r["item_id"] for r in rows}) == 6
    assert all(r["error"] is None for r in rows) and close(rows[3]["score"], WORKED_SCORE)


def test_retries_honour_retry_after_and_then_succeed(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3)
    judge = FlakyJudge(failures=2, retry_after=0.3)
    # The backoff alone would wait at most 2 ms here: gaps of 0.3 s can only come from Retry-After.
    summary = run_scoring(
        prompt,
        items,
        judge,
        library,
        new_run(library, prompt, dataset),
        RunOptions(max_attempts=5, retry_base=0.001),
    )
    assert summary.scored == 3 and summary.failed == 0 and summary.judge_calls == 9
    for times in judge.seen.values():
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert len(times) == 3 and all(0.3 <= g < 1.0 for g in gaps)


def test_retries_are_bounded_and_the_item_keeps_its_error(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=4)
    judge = FlakyJudge(failures=99)  # no Retry-After: exponential backoff with jitter
    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(max_attempts=3, retry_base=0.01))
    assert summary.status == "done" and summary.failed == 4 and summary.judge_calls == 12
    assert all(len(times) == 3 for times in judge.seen.values())
    rows = library.judgments(run_id)
    assert [r["error"] for r in rows] == ["RetryableJudgeError after 3 attempts: HTTP 429 from test"] * 4


def test_concurrency_is_bounded_and_reached(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=12)
    active, peak, lock = [0], [0], threading.Lock()

    class Slow(ScriptedJudge):
        def judge(self, request):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            return super().judge(request)

    summary = run_scoring(
        prompt, items, Slow(), library, new_run(library, prompt, dataset), RunOptions(concurrency=4)
    )
    assert summary.scored == 12 and peak[0] == 4


def test_cancel_stops_sending_and_a_resume_finishes_each_item_once(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=10)
    run_id = new_run(library, prompt, dataset)
    cancel = threading.Event()

    class Slow(ScriptedJudge):
        def judge(self, request):
            time.sleep(0.02)
            return super().judge(request)

    judge = Slow(lambda r: {"2": 1.0})

    def progress(done, total, judgment):
        if done == 3:
            cancel.set()

    summary = run_scoring(
        prompt, items, judge, library, run_id, RunOptions(concurrency=1), cancel=cancel, on_progress=progress
    )
    assert summary.status == "cancelled" and library.get_run(run_id).status == "cancelled"
    # One worker: after the third result at most the one queued request had started.
    assert 3 <= summary.judged <= 4 and len(judge.requests) <= 4
    rest = Slow(lambda r: {"2": 1.0})
    summary = run_scoring(prompt, items, rest, library, run_id, RunOptions(concurrency=2, use_cache=False))
    assert summary.status == "done" and len(judge.requests) + len(rest.requests) == 10
    rows = library.judgments(run_id)
    assert sorted(r["item_id"] for r in rows) == [i.id for i in items]
    assert all(close(r["score"], 2.0) for r in rows)


def test_auto_falls_back_to_sampling_and_records_it(tmp_path):
    settings = JudgeSettings(mode="auto", n=4, temperature=1.0)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=5, judge=settings)
    judge = NoLogprobsJudge()
    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=1))
    assert summary.fallbacks == 5 and summary.scored == 5
    modes = [(r.logprobs, r.n) for r in judge.requests]
    # The first item finds out (one logprobs request); the rest go straight to sampling.
    assert modes.count((True, 4)) <= 2 and modes.count((False, 4)) == 5
    for row in library.judgments(run_id):
        # replies 4, 3, 4, x: three parse, mean 11/3, one unparsed
        assert row["mode"] == "sampling" and row["fallback"] is True
        assert close(row["score"], 11 / 3) and row["parsed"] == 3 and row["unparsed"] == 1
        assert row["replies"] == ["4", "3", "4", "x"]
    assert library.get_run(run_id).extra["fallbacks"] == 5
    # Another auto run of the same prompt: logprobs answers are not cached, the fallbacks are.
    again = NoLogprobsJudge()
    summary = run_scoring(prompt, items, again, library, new_run(library, prompt, dataset))
    assert summary.fallbacks == 5 and summary.cached == 5


def test_auto_falls_back_when_the_judge_refuses_logprobs(tmp_path):
    settings = JudgeSettings(mode="auto", n=4, temperature=1.0)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3, judge=settings)

    class Refuses(NoLogprobsJudge):
        def judge(self, request):
            if request.logprobs:
                raise LogprobsUnavailableError("model x does not support logprobs")
            return super().judge(request)

    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(prompt, items, Refuses(), library, run_id, RunOptions(concurrency=1))
    assert summary.fallbacks == 3 and summary.failed == 0
    assert all(r["fallback"] and close(r["score"], 11 / 3) for r in library.judgments(run_id))


def test_logprobs_mode_without_logprobs_fails_fast_with_a_clear_error(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=20)
    judge = NoLogprobsJudge()
    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=1))
    assert summary.status == "failed" and "sampling" in summary.error
    assert len(judge.requests) <= 4  # three in a row, one more in flight: stopped, not 20 failures
    rows = library.judgments(run_id)
    assert rows and all(r["error"].startswith("LogprobsUnavailableError") for r in rows)
    assert library.get_run(run_id).status == "failed"


def test_sampling_mode_asks_for_n_replies_at_the_temperature(tmp_path):
    settings = JudgeSettings(mode="sampling", n=8, temperature=0.7)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=2, judge=settings)
    judge = NoLogprobsJudge()
    run_id = new_run(library, prompt, dataset)
    run_scoring(prompt, items, judge, library, run_id)
    assert [(r.n, r.temperature, r.logprobs) for r in judge.requests] == [(8, 0.7, False)] * 2
    row = library.judgments(run_id)[0]
    assert row["parsed"] == 6 and row["unparsed"] == 2 and close(row["score"], 22 / 6)
    assert row["fallback"] is False and row["mode"] == "sampling"


def test_bad_settings_are_refused(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=1)
    with pytest.raises(ConfigError, match="between 1 and 64"):
        run_scoring(
            prompt,
            items,
            worked_judge(),
            library,
            new_run(library, prompt, dataset),
            RunOptions(concurrency=0),
        )


def test_cancel_also_stops_a_run_answered_from_the_cache(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=8)
    run_scoring(prompt, items, worked_judge(), library, new_run(library, prompt, dataset))
    cancel = threading.Event()
    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(
        prompt,
        items,
        worked_judge(),
        library,
        run_id,
        cancel=cancel,
        on_progress=lambda done, total, j: done == 2 and cancel.set(),
    )
    assert summary.status == "cancelled" and summary.judged == 2 and summary.cached == 2
    assert len(library.judgments(run_id)) == 2
    late = threading.Event()
    summary = run_scoring(
        prompt,
        items,
        worked_judge(),
        library,
        run_id,
        cancel=late,
        on_progress=lambda done, total, j: done == total and late.set(),
    )
    assert summary.status == "done" and summary.judged == 6  # cancelled after the last item: nothing lost


class UnreachableJudge(ScriptedJudge):
    """Refuses every connection after answering the first `answers` requests."""

    def __init__(self, answers: int = 0) -> None:
        super().__init__(lambda request: dict(WORKED))
        self.answers, self.calls, self.lock = answers, 0, threading.Lock()

    def judge(self, request):
        with self.lock:
            self.calls += 1
            refuse = self.calls > self.answers
        if refuse:
            raise UnreachableError("could not connect to http://127.0.0.1:9/v1: Connection error.")
        return super().judge(request)


def test_an_unreachable_judge_stops_the_run_with_a_readable_error(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=20)
    judge = UnreachableJudge()
    run_id = new_run(library, prompt, dataset)
    summary = run_scoring(
        prompt, items, judge, library, run_id, RunOptions(concurrency=1, max_attempts=2, retry_base=0.001)
    )
    # Stopped after three items failed alike (one more may have been in flight), not after twenty.
    assert summary.status == "failed" and summary.failed == summary.judged in (3, 4)
    assert summary.error.startswith("could not connect to http://127.0.0.1:9/v1")
    assert "server is running" in summary.error and 3 * 2 <= judge.calls <= 4 * 2
    errors = [r["error"] for r in library.judgments(run_id)]
    assert len(errors) == summary.judged and all(
        e.startswith("UnreachableError after 2 attempts: ") for e in errors
    )
    assert library.get_run(run_id).status == "failed"
    again = run_scoring(
        prompt, items, UnreachableJudge(answers=99), library, run_id, RunOptions(concurrency=1)
    )
    # Resumed once the server answers: the failed items are asked again, nothing is duplicated.
    assert again.status == "done" and again.scored == 20 and again.failed == 0
    rows = library.judgments(run_id)
    assert len(rows) == 20 and all(r["error"] is None for r in rows)


def test_a_judge_that_answered_once_is_not_stopped_by_later_connection_errors(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=6)
    summary = run_scoring(
        prompt,
        items,
        UnreachableJudge(answers=1),
        library,
        new_run(library, prompt, dataset),
        RunOptions(concurrency=1, max_attempts=1),
    )
    assert summary.status == "done" and summary.scored == 1 and summary.failed == 5 and summary.error is None
