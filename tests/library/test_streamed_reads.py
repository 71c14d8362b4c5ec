"""The library's bounded reads (issue 29) give what its whole reads give: items page by page with the version's
hash folded, judgments in dataset order, a judgment as it will read back, counts, the digest sorted by SQLite,
and the checks a run makes before it starts answered inside SQLite."""

from __future__ import annotations

import math

import pytest
from runner_helpers import make_items, setup_library

from geval_core.errors import IntegrityError
from geval_core.judgment import Judgment
from geval_core.run.one_item import overlong_items
from geval_core.run.results import line_of_values, line_text
from geval_core.types import Item
from prompt_library import Library
from prompt_library.datasets import VersionHash, dataset_hash
from prompt_library.hashes import run_digest


def row_hashes(library: Library, run_id: str) -> list[str]:
    with library._lock:
        return [
            h for (h,) in library.conn.execute("SELECT row_hash FROM judgments WHERE run_id = ?", [run_id])
        ]


def test_items_read_page_by_page_are_the_items_and_fold_the_versions_hash(tmp_path):
    library, _, items, dataset = setup_library(tmp_path / "lib.db", count=53)
    assert (
        list(library.iter_dataset_items(dataset["id"], batch=7))
        == library.dataset_items(dataset["id"])
        == items
    )
    odd = [Item("ü-1", {"document": "Ünïcode ✓", "summary": ""}, {"h": 3.5, "h.0": 3.0}, "g"), Item("2", {})]
    folded = VersionHash("näme")
    for item in odd:
        folded.add(item)
    assert folded.hexdigest() == dataset_hash("näme", odd)
    empty = VersionHash("x")
    assert empty.hexdigest() == dataset_hash("x", [])


def test_an_altered_item_is_found_when_the_stream_ends(tmp_path):
    library, _, items, dataset = setup_library(tmp_path / "lib.db", count=12)
    with library._lock:
        library.conn.execute("DROP TRIGGER items_no_update")
        library.conn.execute(
            "UPDATE items SET human = '{\"x\": 1}' WHERE dataset_id = ? AND position = 11", [dataset["id"]]
        )
        library.conn.commit()
    stream = library.iter_dataset_items(dataset["id"], batch=5)
    assert [next(stream).id for _ in range(12)] == [i.id for i in items]  # every item first, then the check
    with pytest.raises(IntegrityError, match="stored hash does not match its items"):
        next(stream)


def test_judgment_reads_in_pages_equal_the_whole_read(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=30)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    for n, item in enumerate(reversed(items[:25])):  # stored out of dataset order
        error = "JudgeError: boom" if n % 4 == 0 else None
        library.save_judgment(
            run_id,
            Judgment(
                item.id,
                score=None if error else 1 + n % 5,
                error=error,
                distribution={} if error else {3: 1.0},
                mode="logprobs",
            ),
        )
    saved, previous = library.save_next_attempt(run_id, Judgment(items[24].id, score=4.0, mode="logprobs"))
    assert saved and previous["error"] == "JudgeError: boom" and previous["attempt"] == 0
    assert library.save_next_attempt(run_id, Judgment(items[24].id, score=1.0)) == (False, None)
    whole = library.judgments(run_id)
    assert list(library.iter_judgments(run_id, batch=4)) == whole
    assert [line_of_values(v) for v in library.iter_judgment_values(run_id, batch=4)] == list(
        map(line_text, whole)
    )
    assert list(library.iter_judgments(run_id, batch=4, after_item=items[9].id)) == [
        r for r in whole if r["item_id"] > items[9].id
    ]
    assert library.judgments_of(run_id, [items[24].id, items[3].id, "nope"]) == {
        r["item_id"]: r for r in whole if r["item_id"] in (items[24].id, items[3].id)
    }
    assert library.judged_among(run_id, [i.id for i in items]) == library.judged_item_ids(run_id)
    assert library.judged_count(run_id) == len(library.judged_item_ids(run_id))
    assert library.judgment_row_count(run_id) == 26
    latest = {r["item_id"]: r for r in library.iter_latest_attempts(run_id, batch=3)}
    assert {k: (r["score"], r["error"]) for k, r in latest.items()} == {
        r["item_id"]: (r["score"], r["error"]) for r in whole
    }
    assert library.streamed_digest(run_id) == run_digest(row_hashes(library, run_id))


@pytest.mark.parametrize(
    "judgment",
    [
        Judgment(
            "a",
            score=3,
            raw_score=3,
            top_rating=3,
            distribution={3: 1, 4: 0.0},
            valid_mass=1,
            replies=("3",),
            parsed=1,
            mode="logprobs",
            cached=True,
            model_version="m-1",
            input_tokens=5,
            latency_s=1,
        ),
        Judgment(
            "a",
            score=math.nan,
            first_rating=3.5,
            parsed_share=0.5,
            replies=["3.5", "x"],
            unparsed=1,
            differs=True,
            mode="sampling",
            fallback=True,
            note="no rating above the floor",
        ),
        Judgment(
            "a", error="JudgeError: boom", mode="logprobs", server="http://127.0.0.1:1/v1", source="live"
        ),
    ],
)
def test_a_judgments_values_are_what_the_store_hands_back_and_make_its_results_line(tmp_path, judgment):
    library, prompt, _, dataset = setup_library(tmp_path / "lib.db", count=1)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    judgment = Judgment(**{**judgment.__dict__, "item_id": "i000"})
    library.save_judgment(run_id, judgment)
    values = library.judgment_values(judgment)
    assert (
        values
        == library.judgment_values_of(run_id, ["i000"])["i000"]
        == next(library.iter_judgment_values(run_id))
    )
    assert line_of_values(values) == line_text(library.judgments(run_id)[0])


def test_a_finished_runs_digest_is_kept_until_a_judgment_is_added(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=4)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    library.save_judgment(run_id, Judgment(items[0].id, score=2.0))
    library.finish_run(run_id)
    digest = library.get_run(run_id).digest
    assert (
        digest == run_digest(row_hashes(library, run_id))
        and library.get_run(run_id).extra["digest_rows"] == 1
    )
    calls = []
    original = Library.streamed_digest
    library.streamed_digest = lambda run: calls.append(run) or original(library, run)
    library.finish_run(run_id)  # nothing added: the stored digest stands, nothing is read
    assert calls == [] and library.get_run(run_id).digest == digest
    library.save_judgment(run_id, Judgment(items[1].id, score=3.0))
    library.finish_run(run_id)
    assert calls == [run_id] and library.get_run(run_id).digest == run_digest(row_hashes(library, run_id))
    library.set_run_fields(run_id, digest_rows=None)  # as an older library's finished run has it
    library.finish_run(run_id)
    assert calls == [run_id, run_id]


def test_the_start_checks_answered_by_sqlite_agree_with_python(tmp_path):
    library, prompt, items, _ = setup_library(tmp_path / "lib.db", count=2)
    mixed = [
        *make_items(3, "m"),
        Item("short", {"document": "x"}),
        Item("odd", {"a b": "1", "document": "y" * 90}),
    ]
    dataset = library.import_items("mixed", mixed)
    assert library.first_item_without(dataset["id"], ["document", "summary"]) == mixed[3]
    assert library.first_item_without(dataset["id"], ["document"]) is None
    assert library.first_item_without(dataset["id"], ['we"ird']).id == mixed[0].id  # the Python path
    weights = {"document": 2, "summary": 1, "a b": 3}
    expected = [i.id for i in mixed if sum(w * len(i.fields.get(n, "")) for n, w in weights.items()) > 60]
    assert library.item_ids_over(dataset["id"], weights, 60) == expected == ["odd"]
    assert library.item_ids_over(dataset["id"], {"document": 1}, 20) == ["odd"]
    assert library.item_ids_over(dataset["id"], {'we"ird': 1, "document": 1}, 20) == ["odd"]
    assert overlong_items(prompt, items, prompt.dimension.judge)[1] == []


def test_a_judgment_is_looked_up_by_its_key_so_inserts_do_not_walk_the_run(tmp_path):
    """The replace guard's check reads the item's key whatever statistics the planner has (none, here)."""
    library, *_ = setup_library(tmp_path / "lib.db", count=1)
    with library._lock:
        (trigger,) = library.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'judgments_no_replace'"
        ).fetchone()
        library.conn.execute("ANALYZE sqlite_master")  # creates sqlite_stat1 if missing, then empty it
        library.conn.execute("DELETE FROM sqlite_stat1")
        library.conn.commit()
    library.close()
    check = trigger.split("OR EXISTS (", 1)[1].split(" BEGIN", 1)[0].rstrip()[:-1]  # the trigger's own lookup
    check = check.replace("NEW.run_id", "'r'").replace("NEW.item_id", "'i'")
    with Library(tmp_path / "lib.db", seed_examples=False) as again, again._lock:
        plan = " ".join(row[-1] for row in again.conn.execute("EXPLAIN QUERY PLAN " + check))
        old_style = " ".join(
            row[-1] for row in again.conn.execute("EXPLAIN QUERY PLAN " + check.replace("+error", "error"))
        )
    assert "(run_id=? AND item_id=?)" in plan and "judgments_by_run_error" not in plan
    assert "judgments_by_run_error" in old_style  # without the +, the planner takes the run's index
