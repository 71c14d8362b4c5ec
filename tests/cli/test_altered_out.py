"""`geval score --out` over a stored dataset version altered outside the workbench: the run fails (its hash is
checked when the last item is read) and the results file gets no line of it, so the altered item's score is never
written (issue 38). Stopped and judge-failed runs still write what they judged."""

from __future__ import annotations

import json

from click.testing import CliRunner
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
COUNT = 1500  # the first 1,000 items are read, judged and stored before the version check at the end fails


def score(db, prompt, dataset, out):
    return CliRunner().invoke(
        cli,
        [
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--db",
            str(db),
            "--judge",
            "scripted:scripted-1",
            "--quiet",
            "--out",
            str(out),
        ],
    )


def alter(library, dataset, item_id: str) -> None:
    """Change one stored item behind the workbench's back (its trigger dropped, as another tool could)."""
    with library._lock:
        library.conn.execute("DROP TRIGGER items_no_update")
        library.conn.execute(
            "UPDATE items SET fields = ? WHERE dataset_id = ? AND item_id = ?",
            ['{"document": "Changed.", "summary": "Changed."}', dataset["id"], item_id],
        )
        library.conn.commit()


def test_an_item_altered_mid_stream_is_not_written_to_out(tmp_path):
    db, out = tmp_path / "lib.db", tmp_path / "out.jsonl"
    library, prompt, items, dataset = setup_library(db, count=COUNT, judge=SCRIPTED)
    altered = items[5].id
    alter(library, dataset, altered)
    library.close()
    result = score(db, prompt, dataset, out)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "was altered outside the workbench" in result.output
    with Library(db, seed_examples=False) as library:
        (run,) = library.list_runs()
        assert run.status == "failed"
        assert altered in library.judged_item_ids(run.id)  # the runner did judge it before the check
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert altered not in {line["id"] for line in lines}
    assert lines == []  # which item changed cannot be told: no line of the failed version at all


def test_an_intact_version_still_writes_every_line_in_order(tmp_path):
    db, out = tmp_path / "lib.db", tmp_path / "out.jsonl"
    library, prompt, items, dataset = setup_library(db, count=COUNT, judge=SCRIPTED)
    library.close()
    result = score(db, prompt, dataset, out)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [i.id for i in items]


def _stream_with_results(library, prompt, dataset, run_id, judge, cancel=None, on_done=None):
    """A streamed run writing its results as `geval score --out` does; (summary, the file's item ids)."""
    import io

    from geval_core.run import RunOptions, run_scoring
    from geval_core.run.feed import StreamedItems
    from geval_core.run.results import OrderedResults

    handle = io.StringIO()
    results = OrderedResults(library, run_id, handle)

    def progress(done, total, judgment):
        results.committed(judgment)
        if on_done is not None:
            on_done(done)

    stream = StreamedItems(library.iter_dataset_items(dataset["id"]), COUNT, on_batch=results.batch_read)
    summary = run_scoring(
        prompt,
        stream,
        judge,
        library,
        run_id,
        RunOptions(settings=SCRIPTED, concurrency=2),
        on_progress=progress,
        cancel=cancel,
    )
    results.close()
    return summary, [json.loads(line)["id"] for line in handle.getvalue().splitlines()], results


def test_a_stopped_run_of_an_intact_version_still_writes_what_it_judged(tmp_path):
    import threading

    from geval_core.providers.scripted import ScriptedJudge

    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=COUNT, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    cancel = threading.Event()
    summary, ids, results = _stream_with_results(
        library, prompt, dataset, run_id, ScriptedJudge(), cancel, lambda done: done >= 300 and cancel.set()
    )
    assert summary.status == "cancelled" and results.withheld is None
    judged = library.judged_item_ids(run_id)
    assert 300 <= len(ids) < COUNT and set(ids) == judged
    assert ids == [i.id for i in items if i.id in judged]  # in dataset order


def dying_judge(after: int):
    """A scripted judge that raises on every request after its first `after`."""
    from geval_core.errors import JudgeError
    from geval_core.providers.scripted import ScriptedJudge

    def dies(request):
        if len(judge.requests) > after:
            raise JudgeError("the judge went away")
        return {"3": 0.6, "4": 0.4}

    judge = ScriptedJudge(dies)
    return judge


def test_a_judge_that_dies_mid_run_keeps_its_lines_but_an_altered_version_loses_them(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=COUNT, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    summary, ids, results = _stream_with_results(library, prompt, dataset, run_id, dying_judge(200))
    assert summary.status == "failed" and "without a score" in summary.error and results.withheld is None
    assert len(ids) == library.judgment_row_count(run_id) > 200  # the intact version's lines all written
    # The same failure on an altered version, before the stream reached its end: the check is made at close.
    alter(library, dataset, items[0].id)
    other = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    assert other != run_id
    summary, ids, results = _stream_with_results(library, prompt, dataset, other, dying_judge(200))
    assert summary.status == "failed" and "without a score" in summary.error
    assert items[0].id in library.judged_item_ids(other) and ids == []
    assert "was altered outside the workbench" in results.withheld
