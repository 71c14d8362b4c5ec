"""Two processes writing runs into one library file at the same time: no lost rows, no lock errors."""

from __future__ import annotations

import multiprocessing as mp
import traceback

from geval_core.judgment import Judgment
from geval_core.types import JudgeSettings
from prompt_library import Library

RUNS_PER_WORKER = 3
ITEMS_PER_RUN = 40


def _worker(path: str, worker: int, barrier, errors) -> None:
    try:
        barrier.wait(timeout=60)  # both processes open the fresh file (migrate + seed) at once
        library = Library(path)
        items = [i.id for i in library.dataset_items("sample")][:ITEMS_PER_RUN]
        for _ in range(RUNS_PER_WORKER):
            run = library.create_run("coherence", "sample", JudgeSettings(), item_ids=items)
            for n, item_id in enumerate(items):
                # One transaction per judgment, as the runner writes them.
                library.save_judgment(
                    run,
                    Judgment(
                        item_id,
                        score=1.0 + (n % 5),
                        distribution={1: 1.0},
                        replies=[f"w{worker}"],
                        mode="logprobs",
                    ),
                )
                library.cache_put(f"w{worker}-{run}-{item_id}", {"text": str(n)})
            library.finish_run(run, "done", input_tokens=worker)
        library.close()
    except BaseException:  # report to the parent, which fails the test with the traceback
        errors.put(traceback.format_exc())


def test_two_processes_write_runs_into_one_file(tmp_path):
    path = str(tmp_path / "shared.db")
    ctx = mp.get_context("spawn")
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(path, w, barrier, errors)) for w in (1, 2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=240)
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not failures, "\n".join(failures)
    assert [p.exitcode for p in procs] == [0, 0]
    with Library(path) as library:
        runs = library.list_runs()
        assert len(runs) == 2 * RUNS_PER_WORKER
        assert all(r.status == "done" and r.judged == ITEMS_PER_RUN for r in runs)
        assert sorted(r.input_tokens for r in runs) == [1] * RUNS_PER_WORKER + [2] * RUNS_PER_WORKER
        total = library._one("SELECT COUNT(*) AS n FROM judgments")["n"]
        assert total == 2 * RUNS_PER_WORKER * ITEMS_PER_RUN
        assert library._one("SELECT COUNT(*) AS n FROM judge_cache")["n"] == total
        # Seeded exactly once although both processes found an empty file.
        assert len(library.list_prompts()) == 4 and len(library.list_datasets()) == 1


def test_threads_sharing_one_library_do_not_interleave_transactions(tmp_path):
    import threading

    library = Library(tmp_path / "threads.db")
    run = library.create_run("fluency", "sample", JudgeSettings())
    ids = [i.id for i in library.dataset_items("sample")]
    failures: list[str] = []

    def write(part: list[str]) -> None:
        try:
            for item_id in part:
                library.save_judgment(run, Judgment(item_id, score=2.0, distribution={2: 1.0}))
        except BaseException:
            failures.append(traceback.format_exc())

    threads = [threading.Thread(target=write, args=(ids[k::4],)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, "\n".join(failures)
    assert library.judged_item_ids(run) == set(ids) and len(ids) == 67
    library.close()


def _open_once(path: str, barrier, errors) -> None:
    try:
        barrier.wait(timeout=60)
        Library(path).close()
    except BaseException:
        errors.put(traceback.format_exc())


def test_processes_opening_a_new_file_together_all_succeed(tmp_path):
    """Switching a new file to WAL ignores the busy timeout; openers must wait, not fail 'locked'."""
    ctx = mp.get_context("fork")
    for round_ in range(40):
        path = str(tmp_path / f"new-{round_}.db")
        barrier, errors = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_once, args=(path, barrier, errors)) for _ in range(4)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=120)
        assert errors.empty(), errors.get()
        assert [p.exitcode for p in procs] == [0, 0, 0, 0]
        with Library(path) as library:
            assert library.db.journal_mode == "wal"
            assert len(library.list_prompts()) == 4  # seeded once
