"""`geval score` over a library dataset streamed (issue 29): the results file written as judgments commit equals
the one the read-back wrote, a resumed run's file holds every item once in dataset order, and a zero-call
re-run answers from the run's stored totals and digest, reading no judgment row unless --out asks for them."""

from __future__ import annotations

import io
import json
import threading

from click.testing import CliRunner
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.feed import StreamedItems
from geval_core.run.results import OrderedResults, output_line
from geval_core.types import JudgeSettings
from prompt_library import Library
from prompt_library.verify import verify_library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")
COUNT = 2200


def read_back(library: Library, run_id: str) -> str:
    """The results file as the old path wrote it: every judgment read back at the end, in dataset order."""
    return "".join(json.dumps(output_line(r), ensure_ascii=False) + "\n" for r in library.judgments(run_id))


def score(db, prompt, dataset, *extra):
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
            "--concurrency",
            "4",
            *extra,
        ],
    )


def test_the_results_file_written_while_scoring_equals_the_read_back(tmp_path):
    db = tmp_path / "lib.db"
    library, prompt, items, dataset = setup_library(db, count=COUNT, judge=SCRIPTED)
    library.close()
    done = score(db, prompt, dataset, "--out", str(tmp_path / "out.jsonl"))
    assert done.exit_code == 0, done.output
    with Library(db, seed_examples=False) as library:
        run_id = library.list_runs()[0].id
        assert (tmp_path / "out.jsonl").read_text() == read_back(library, run_id)
        assert verify_library(library)["ok"]
    stdout = score(db, prompt, dataset, "--new-run", "--quiet")  # no --out: the same lines on stdout
    with Library(db, seed_examples=False) as library:
        assert stdout.output == read_back(library, library.list_runs()[0].id)


def test_a_resumed_run_streams_the_rest_once_and_its_file_holds_every_item_in_order(tmp_path):
    db = tmp_path / "lib.db"
    library, prompt, items, dataset = setup_library(db, count=COUNT, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    cancel = threading.Event()
    run_scoring(
        prompt,
        items,
        ScriptedJudge(),
        library,
        run_id,
        RunOptions(settings=SCRIPTED, concurrency=4),
        on_progress=lambda done, total, j: done >= 900 and cancel.set(),
        cancel=cancel,
    )
    before = library.judged_count(run_id)
    library.close()
    done = score(db, prompt, dataset, "--out", str(tmp_path / "out.jsonl"))
    assert done.exit_code == 0, done.output
    assert f"resuming run {run_id}: {before} of {COUNT} items judged before" in done.output
    assert f"{COUNT - before} judge calls" in done.output and f"{before} done before" in done.output
    with Library(db, seed_examples=False) as library:
        assert library.judgment_row_count(run_id) == COUNT
        text = (tmp_path / "out.jsonl").read_text()
        assert text == read_back(library, run_id)
        assert [json.loads(line)["id"] for line in text.splitlines()] == [i.id for i in items]


def test_lines_held_behind_a_slow_item_spill_to_the_store_and_come_back_in_order(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=300, judge=SCRIPTED)
    run_id = library.create_run(prompt.id, dataset["id"], SCRIPTED)
    written = threading.Semaphore(0)

    class SlowFirst(ScriptedJudge):
        def judge(self, request):
            if "Document number 0." in request.messages[0]["content"]:
                for _ in range(50):  # the first item answers after 50 others are stored
                    written.acquire()
            return super().judge(request)

    handle = io.StringIO()
    results = OrderedResults(library, run_id, handle, keep=5)

    def progress(done, total, judgment):
        results.committed(judgment)
        written.release()

    stream = StreamedItems(library.iter_dataset_items(dataset["id"]), 300, on_batch=results.batch_read)
    run_scoring(
        prompt,
        stream,
        SlowFirst(),
        library,
        run_id,
        RunOptions(settings=SCRIPTED, concurrency=4),
        on_progress=progress,
    )
    results.close()
    assert handle.getvalue() == read_back(library, run_id)


def test_a_zero_call_rerun_reads_no_judgment_and_says_what_the_first_said(tmp_path, monkeypatch):
    db = tmp_path / "lib.db"
    library, prompt, items, dataset = setup_library(db, count=COUNT, judge=SCRIPTED)
    library.close()
    first = score(db, prompt, dataset, "--json")
    assert first.exit_code == 0, first.output
    reads: list[str] = []

    def counted(name):
        original = getattr(Library, name)

        def wrapper(self, *args, **kwargs):
            reads.append(name)
            return original(self, *args, **kwargs)

        return wrapper

    for name in (
        "judgments",
        "iter_judgments",
        "judgments_of",
        "iter_judgment_values",
        "judgment_values_of",
        "iter_latest_attempts",
        "dataset_items",
        "_item_page",
        "streamed_digest",
        "judged_item_ids",
        "scored_count",
    ):  # _item_page: items read
        monkeypatch.setattr(Library, name, counted(name))
    again = score(db, prompt, dataset, "--json")
    assert again.exit_code == 0, again.output
    assert reads == []  # the run's stored totals and digest answered; no item, no judgment row was read
    said, said_again = json.loads(first.output.splitlines()[-1]), json.loads(again.output.splitlines()[-1])
    assert said_again["judge_calls"] == 0 and said_again["skipped"] == COUNT
    assert said_again["scored_in_run"] == said["scored_in_run"] == COUNT and said_again["exit_code"] == 0
    out = score(db, prompt, dataset, "--out", str(tmp_path / "again.jsonl"), "--quiet")
    assert (
        out.exit_code == 0 and "iter_judgment_values" in reads and "judgments" not in reads
    )  # streamed in pages
    monkeypatch.undo()
    with Library(db, seed_examples=False) as library:
        run_id = library.list_runs()[0].id
        assert (tmp_path / "again.jsonl").read_text() == read_back(library, run_id)
        assert verify_library(library)["ok"]
