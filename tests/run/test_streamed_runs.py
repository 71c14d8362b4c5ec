"""Streamed runs (issue 29): items read a batch at a time, totals and digest kept as judgments are written.

A run over a library dataset read page by page gives the judgments a list gives; its stored totals equal
the ones recomputed from its rows, its digest the one `geval verify` recomputes, across errored attempts,
resumes and a session that died without finishing; the first request leaves before the last item is read.
"""

from __future__ import annotations

import threading

from runner_helpers import setup_library

from geval_core.errors import JudgeError
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.cost import load_prices, run_totals
from geval_core.run.feed import StreamedItems
from geval_core.run.totals import TALLY_KEY, RunTally, current_tally
from geval_core.types import JudgeSettings
from prompt_library import Library
from prompt_library.hashes import run_digest
from prompt_library.verify import verify_library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
COUNT = 2500  # a few batches of the feed (1,000 items each)
TIMING = ("latency_s",)


def streamed(library: Library, dataset: dict, run_id: str, **extra) -> StreamedItems:
    return StreamedItems(
        library.iter_dataset_items(dataset["id"]),
        dataset["item_count"],
        library.judged_count(run_id),
        **extra,
    )


def comparable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def assert_totals_match_rows(library: Library, run_id: str) -> None:
    """The totals the run stored while it went = the ones the existing functions recompute from its rows."""
    run = library.get_run(run_id)
    recomputed = run_totals(library.judgments(run_id), SCRIPTED, load_prices(store=library))
    stored = {k: run.as_dict().get(k) for k in recomputed}
    assert stored == recomputed
    assert run.extra[TALLY_KEY]["scored"] == library.scored_count(run_id)
    assert run.extra[TALLY_KEY]["rows"] == library.judgment_row_count(run_id)
    with library._lock:
        hashes = [
            h for (h,) in library.conn.execute("SELECT row_hash FROM judgments WHERE run_id = ?", [run_id])
        ]
    assert run.digest == run_digest(hashes)


class FailingFor(ScriptedJudge):
    """Fails (for good) the requests of the items named, answers the others."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing = failing

    def judge(self, request):
        if any(f"Document number {k}." in request.messages[0]["content"] for k in self.failing):
            raise JudgeError("HTTP 500 from test")
        return super().judge(request)


def test_a_streamed_run_gives_the_judgments_totals_and_digest_of_a_list_run(tmp_path):
    listed, prompt, items, dataset = setup_library(tmp_path / "list.db", count=COUNT, judge=SCRIPTED)
    stream_lib, _, _, _ = setup_library(tmp_path / "stream.db", count=COUNT, judge=SCRIPTED)
    options = RunOptions(settings=SCRIPTED, concurrency=4)
    old = listed.create_run(prompt.id, dataset["id"], SCRIPTED)
    new = stream_lib.create_run(prompt.id, dataset["id"], SCRIPTED)
    before = run_scoring(prompt, items, ScriptedJudge(), listed, old, options)
    after = run_scoring(prompt, streamed(stream_lib, dataset, new), ScriptedJudge(), stream_lib, new, options)
    assert after.to_dict() | {"run_id": "", "seconds": 0} == before.to_dict() | {"run_id": "", "seconds": 0}
    assert comparable(stream_lib.judgments(new)) == comparable(listed.judgments(old))
    for library, run_id in ((listed, old), (stream_lib, new)):
        assert_totals_match_rows(library, run_id)
        assert verify_library(library)["ok"]
    assert {
        k: stream_lib.get_run(new).as_dict()[k] for k in ("input_tokens", "output_tokens", "model_version")
    } == {k: listed.get_run(old).as_dict()[k] for k in ("input_tokens", "output_tokens", "model_version")}


def test_totals_stay_exact_across_errors_their_retries_and_a_session_that_died(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=1200, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    options = RunOptions(settings=SCRIPTED, concurrency=4, max_attempts=1, fail_fast=0)
    first = run_scoring(
        prompt, streamed(library, dataset, run_id), FailingFor({"3", "700", "1100"}), library, run_id, options
    )
    assert first.failed == 3 and library.get_run(run_id).extra[TALLY_KEY]["errors"] == 3
    assert_totals_match_rows(library, run_id)
    # A session killed after writing: rows the stored tally does not cover (a retry of an errored item too).
    library.save_judgment(run_id, Judgment(items[3].id, score=2.0, mode="logprobs", input_tokens=7))
    assert library.get_run(run_id).extra[TALLY_KEY]["rows"] != library.judgment_row_count(run_id)
    expected = RunTally.of(library.judgments(run_id))
    expected.rows = library.judgment_row_count(run_id)  # every attempt, the superseded errored one too
    assert current_tally(library, run_id) == expected
    second = run_scoring(
        prompt, streamed(library, dataset, run_id), ScriptedJudge(), library, run_id, options
    )
    assert second.judged == 2 and second.skipped == 1198 and second.status == "done"
    assert_totals_match_rows(library, run_id)
    assert library.get_run(run_id).extra[TALLY_KEY]["errors"] == 0 and verify_library(library)["ok"]


def test_a_stopped_run_resumed_judges_every_item_once(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=COUNT, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    cancel = threading.Event()

    def stop_after_300(done, total, judgment):
        if done >= 300:
            cancel.set()

    judge = ScriptedJudge()
    first = run_scoring(
        prompt,
        streamed(library, dataset, run_id),
        judge,
        library,
        run_id,
        RunOptions(settings=SCRIPTED, concurrency=4),
        on_progress=stop_after_300,
        cancel=cancel,
    )
    assert first.status == "cancelled" and 300 <= first.judged < COUNT
    resumed = ScriptedJudge()
    second = run_scoring(
        prompt,
        streamed(library, dataset, run_id),
        resumed,
        library,
        run_id,
        RunOptions(settings=SCRIPTED, concurrency=4),
    )
    assert second.status == "done" and second.skipped == first.judged
    assert len(resumed.requests) == COUNT - first.judged  # the rest, once: nothing judged twice
    assert library.judgment_row_count(run_id) == COUNT == library.judged_count(run_id)
    assert [r["item_id"] for r in library.judgments(run_id)] == [i.id for i in items]
    assert_totals_match_rows(library, run_id)


def test_the_first_request_leaves_before_the_last_item_is_read(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=COUNT, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    events: list[tuple[str, str]] = []

    def logged(source):
        for item in source:
            events.append(("read", item.id))
            yield item

    class Logging(ScriptedJudge):
        def judge(self, request):
            events.append(("request", request.messages[0]["content"][-40:]))
            return super().judge(request)

    stream = StreamedItems(logged(library.iter_dataset_items(dataset["id"])), COUNT)
    summary = run_scoring(
        prompt, stream, Logging(), library, run_id, RunOptions(settings=SCRIPTED, concurrency=2)
    )
    assert summary.scored == COUNT
    kinds = [kind for kind, _ in events]
    last_read = len(kinds) - 1 - kinds[::-1].index("read")
    assert kinds.index("request") < last_read
    assert kinds.index("request") <= 1000  # after the first batch at most, not after the whole dataset


def test_a_finished_run_streamed_again_reads_no_item_and_no_judgment(tmp_path, monkeypatch):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=COUNT, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    run_scoring(
        prompt,
        streamed(library, dataset, run_id),
        ScriptedJudge(),
        library,
        run_id,
        RunOptions(settings=SCRIPTED, concurrency=4),
    )
    finished = library.get_run(run_id)

    def refused(*args, **kwargs):
        raise AssertionError("a zero-call re-run read rows")

    for name in (
        "judgments",
        "iter_judgments",
        "judgments_of",
        "iter_latest_attempts",
        "dataset_items",
        "_item_page",
        "streamed_digest",
        "judged_item_ids",
    ):
        monkeypatch.setattr(Library, name, refused)
    judge = ScriptedJudge()
    again = run_scoring(
        prompt,
        StreamedItems(iter(()), COUNT, library.judged_count(run_id)),
        judge,
        library,
        run_id,
        RunOptions(settings=SCRIPTED),
    )
    assert again.status == "done" and again.skipped == COUNT and again.judged == 0 and not judge.requests
    run = library.get_run(run_id)
    assert {k: run.as_dict()[k] for k in ("digest", "input_tokens", "output_tokens", TALLY_KEY)} == {
        k: finished.as_dict()[k] for k in ("digest", "input_tokens", "output_tokens", TALLY_KEY)
    }
    monkeypatch.undo()
    assert verify_library(library)["ok"]


def test_any_iterable_is_read_lazily_and_its_duplicates_judged_once(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=30, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    judge = ScriptedJudge()
    summary = run_scoring(
        prompt, (item for item in items + items[:5]), judge, library, run_id, RunOptions(settings=SCRIPTED)
    )
    assert summary.total == 30 and summary.scored == 30 and len(judge.requests) == 30
    assert_totals_match_rows(library, run_id)


def test_an_item_altered_outside_the_workbench_fails_the_streamed_run(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=40, judge=SCRIPTED)
    with library._lock:
        library.conn.execute("DROP TRIGGER items_no_update")
        library.conn.execute(
            "UPDATE items SET fields = ? WHERE dataset_id = ? AND item_id = ?",
            ['{"document": "Changed.", "summary": "Changed."}', dataset["id"], items[-1].id],
        )
        library.conn.commit()
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    summary = run_scoring(
        prompt,
        streamed(library, dataset, run_id),
        ScriptedJudge(),
        library,
        run_id,
        RunOptions(settings=SCRIPTED),
    )
    assert summary.status == "failed" and "was altered outside the workbench" in summary.error
    assert library.get_run(run_id).status == "failed"
