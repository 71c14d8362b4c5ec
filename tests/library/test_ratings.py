"""Ratings made in the workbench: append-only in SQL, superseded and undone by new rows, snapshotted into a
dataset version; imports of per-rater lists and null ratings; the review queue and the judge's confidence."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import replace

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.diagnostics.review import next_item, progress, review_queue
from geval_core.errors import InputError
from geval_core.stats.confidence import confidence
from prompt_library import DatasetMapping, Library, verify_library
from prompt_library.verify import expected_triggers
from tests.runner_helpers import judged_run


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.db")
    yield library
    library.close()


def sample(lib) -> tuple[str, list[str]]:
    dataset = lib.get_dataset("sample")
    return dataset.id, [i.id for i in lib.dataset_items(dataset.id)]


def test_ratings_refuse_update_delete_and_replace_through_sql(lib):
    dataset_id, ids = sample(lib)
    lib.add_rating(dataset_id, ids[0], "coherence", "ann", 4)
    assert {"ratings_no_update", "ratings_no_delete", "ratings_no_replace"} <= set(expected_triggers())
    conn = sqlite3.connect(lib.path)  # another tool: no foreign keys, no recursive triggers
    for sql in (
        "UPDATE ratings SET rating = 1",
        "DELETE FROM ratings",
        "INSERT OR REPLACE INTO ratings (id, dataset_id, item_id, dimension, rater, rating, status, "
        f"created_at) VALUES (1, '{dataset_id}', '{ids[0]}', 'coherence', 'ann', 1, 'rated', 'now')",
        "REPLACE INTO ratings (id, dataset_id, item_id, dimension, rater, rating, status, created_at) "
        f"VALUES (1, '{dataset_id}', '{ids[0]}', 'coherence', 'ann', 1, 'rated', 'now')",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(sql)
    conn.close()
    assert [r["rating"] for r in lib.rating_rows(dataset_id, "coherence")] == [4.0]
    assert verify_library(lib)["ok"]


def test_a_later_rating_supersedes_and_undo_steps_back(lib):
    dataset_id, ids = sample(lib)
    lib.add_rating(dataset_id, ids[0], "coherence", "ann", 2)
    lib.add_rating(dataset_id, ids[0], "coherence", "ann", 5)  # supersedes, the 2 stays stored
    lib.add_rating(dataset_id, ids[1], "coherence", "ann", status="cannot_judge")
    current = lib.current_ratings(dataset_id, "coherence")["ann"]
    assert current[ids[0]]["rating"] == 5.0 and current[ids[1]]["status"] == "cannot_judge"
    assert lib.undo_rating(dataset_id, "coherence", "ann")["item_id"] == ids[1]
    assert lib.undo_rating(dataset_id, "coherence", "ann")["rating"] == 5.0
    assert lib.current_ratings(dataset_id, "coherence")["ann"] == {
        ids[0]: lib.rating_rows(dataset_id, "coherence")[0]
    }
    assert len(lib.rating_rows(dataset_id, "coherence", "ann")) == 5  # nothing was removed
    with pytest.raises(InputError, match="rater name"):
        lib.add_rating(dataset_id, ids[0], "coherence", "  ", 3)
    with pytest.raises(InputError, match="needs a number"):
        lib.add_rating(dataset_id, ids[0], "coherence", "ann", None)


def test_save_as_version_carries_every_rater_and_the_mean(lib):
    dataset_id, ids = sample(lib)
    for rater, rating in (("bo", 4), ("al", 1), ("cy", 2)):
        lib.add_rating(dataset_id, ids[0], "coherence", rater, rating)
    lib.add_rating(dataset_id, ids[1], "coherence", "bo", 3)
    saved = lib.save_ratings_version(dataset_id, "coherence")
    assert saved["label"] == "sample@2" and saved["raters"] == ["al", "bo", "cy"]
    assert "0=al, 1=bo, 2=cy" in saved["source"]
    items = lib.dataset_items(saved["id"])
    assert items[0].human["coherence"] == pytest.approx(7 / 3)
    assert [items[0].human[f"coherence.{k}"] for k in range(3)] == [1.0, 4.0, 2.0]
    assert items[1].human["coherence"] == 3.0 and "coherence.0" not in items[1].human
    # An item nobody rated here keeps the version's own rating (issue 38: it was dropped), other ratings too.
    before = lib.dataset_items(dataset_id)[2].human
    assert items[2].human == before and items[2].human["coherence"] == before["coherence"]
    assert saved["human_missing"]["coherence"] == 0
    assert not lib.save_ratings_version(dataset_id, "coherence")["created"]  # same ratings, same version


def test_import_of_per_rater_lists_and_nulls(lib, tmp_path):
    rows = [
        {"id": "a", "text": "x", "experts": {"coherence": [3, 4, 5]}},
        {"id": "b", "text": "y", "experts": {"coherence": [2, None, 4]}},
        {"id": "c", "text": "z", "experts": None},
        {"id": "d", "text": "w", "experts": {"coherence": None}},
    ]
    path = tmp_path / "raters.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    mapping = DatasetMapping(inputs={"summary": "text"}, human={"coherence": "experts.coherence"})
    result = lib.import_dataset(path, "raters", mapping)
    assert result["human_missing"] == {"coherence": 2}
    human = [i.human for i in lib.dataset_items("raters")]
    assert human[0] == {"coherence.0": 3.0, "coherence.1": 4.0, "coherence.2": 5.0, "coherence": 4.0}
    assert human[1] == {"coherence.0": 2.0, "coherence.2": 4.0, "coherence": 3.0}  # rater 1 stays rater 1
    assert human[2] == {} and human[3] == {}
    csv = tmp_path / "raters.csv"
    csv.write_text('id,text,c\na,x,"[1, 2]"\nb,y,3\n', encoding="utf-8")
    lib.import_dataset(csv, "csv", DatasetMapping(inputs={"summary": "text"}, human={"c": "c"}))
    assert [i.human for i in lib.dataset_items("csv")] == [{"c.0": 1.0, "c.1": 2.0, "c": 1.5}, {"c": 3.0}]


def test_a_mistyped_rating_path_is_still_refused(lib, tmp_path):
    path = tmp_path / "typo.jsonl"
    path.write_text(
        json.dumps({"id": "a", "text": "x", "experts": {"coherence": [1, 2]}}) + "\n", encoding="utf-8"
    )
    mapping = DatasetMapping(inputs={"summary": "text"}, human={"coherence": "experts.coherense"})
    with pytest.raises(InputError, match="human rating 'coherence'"):
        lib.import_dataset(path, "typo", mapping)
    bad = DatasetMapping(inputs={"summary": "text"}, human={"coherence": "experts.coherence"})
    path.write_text(
        json.dumps({"id": "a", "text": "x", "experts": {"coherence": [1, "good"]}}) + "\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match="not a number"):
        lib.import_dataset(path, "typo", bad)


def test_geval_raters_json_keys_and_an_independent_alpha(tmp_path):
    db = str(tmp_path / "lib.db")
    with Library(db) as lib:
        dataset_id, ids = sample(lib)
        ratings = {"al": [1, 2, 3, 4, 5, 3], "bo": [2, 2, 3, 5, 5, 2], "cy": [1, 3, 3, 4, 4, None]}
        for rater, values in ratings.items():
            for item_id, value in zip(ids, values, strict=False):
                if value is not None:
                    lib.add_rating(dataset_id, item_id, "coherence", rater, value)
        lib.save_ratings_version(dataset_id, "coherence")
    out = CliRunner().invoke(
        cli, ["raters", "sample@2", "--human", "coherence", "--db", db, "--json", "--bootstrap", "200"]
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert {"alpha_nominal", "alpha_ordinal", "alpha_interval", "items", "raters", "pairable_values"} <= set(
        result
    )
    assert (result["items"], result["raters"], result["pairable_values"]) == (6, 3, 17)
    assert result["alpha_interval"] == pytest.approx(interval_alpha_by_hand(ratings), abs=1e-9)
    text = CliRunner().invoke(cli, ["raters", "sample@2", "--human", "coherence", "--db", db])
    assert text.exit_code == 0 and "Krippendorff's alpha, interval" in text.output
    missing = CliRunner().invoke(cli, ["raters", "sample@2", "--human", "clarity", "--db", db])
    assert missing.exit_code == 1 and "no human rating 'clarity'" in missing.output


def interval_alpha_by_hand(ratings: dict[str, list]) -> float:
    """Interval alpha from its definition: 1 - D_o / D_e over all pairable values (Krippendorff 2011)."""
    units = [[r[u] for r in ratings.values() if u < len(r) and r[u] is not None] for u in range(6)]
    units = [u for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    n = len(values)
    observed = (
        sum(
            sum((a - b) ** 2 for i, a in enumerate(u) for j, b in enumerate(u) if i != j) / (len(u) - 1)
            for u in units
        )
        / n
    )
    expected = sum((a - b) ** 2 for i, a in enumerate(values) for j, b in enumerate(values) if i != j) / (
        n * (n - 1)
    )
    return 1 - observed / expected


def test_confidence_of_a_distribution():
    c = confidence({3: 0.6, 4: 0.3, 2: 0.05, 1: 0.0})
    p = [0.6 / 0.95, 0.3 / 0.95, 0.05 / 0.95]
    mean = 3 * p[0] + 4 * p[1] + 2 * p[2]
    assert c["entropy"] == pytest.approx(-sum(q * math.log2(q) for q in p))
    assert c["sd"] == pytest.approx(
        math.sqrt(sum(q * (r - mean) ** 2 for q, r in zip(p, (3, 4, 2), strict=True)))
    )
    assert c["margin"] == pytest.approx(p[0] - p[1])
    assert confidence({5: 1.0}) == {"entropy": 0.0, "sd": 0.0, "margin": 1.0}
    assert confidence({}) == {"entropy": None, "sd": None, "margin": None}


def test_review_queue_orders_and_resume():
    judged = {
        "a": {"score": 3.0, "distribution": {3: 1.0}},
        "b": {"score": 3.0, "distribution": {1: 0.5, 5: 0.5}},
        "c": {"score": None},
        "d": {"score": 2.0, "distribution": {2: 0.9, 3: 0.1}},
    }
    ids = ["a", "b", "c", "d"]
    assert [r["item"] for r in review_queue(ids, judged)] == ["c", "b", "d", "a"]
    human = {"a": 5.0, "d": 2.5}
    assert [r["item"] for r in review_queue(ids, judged, human, "disagree")] == ["a", "d", "c", "b"]
    acts = {"c": {"status": "skipped"}, "b": {"status": "rated"}}
    assert next_item(["c", "b", "d"], acts) == "d"
    assert next_item(["c", "b"], acts) == "c"  # skipped items come back last
    assert progress(["c", "b", "d"], acts) == {
        "rated": 1,
        "cannot_judge": 0,
        "skipped": 1,
        "left": 1,
        "total": 3,
    }


def test_ratings_carry_over_to_a_new_version_for_unchanged_items(lib):
    dataset_id, ids = sample(lib)
    lib.add_rating(dataset_id, ids[0], "coherence", "ann", 2)
    lib.add_rating(dataset_id, ids[1], "coherence", "ann", 5)
    items = lib.dataset_items(dataset_id)
    changed = [replace(items[0], fields={**items[0].fields, "summary": "A different summary."}), *items[1:]]
    new = lib.import_items("sample", changed)
    assert new["label"] == "sample@2"
    # The unchanged item keeps its rating; the changed one must be rated again (the text is not the same).
    assert {i: r["rating"] for i, r in lib.current_ratings(new["id"], "coherence")["ann"].items()} == {
        ids[1]: 5.0
    }
    lib.add_rating(
        new["id"], ids[1], "coherence", "ann", 3
    )  # supersedes the carried rating, on both versions
    assert lib.human_means(new["id"], "coherence")[ids[1]] == items[1].human["coherence"]  # the version's own
    assert ids[1] in lib.unsaved_ratings(new["id"], "coherence")
    assert lib.current_ratings(dataset_id, "coherence")["ann"][ids[1]]["rating"] == 3.0
    assert lib.undo_rating(new["id"], "coherence", "ann")["rating"] == 3.0
    assert lib.current_ratings(new["id"], "coherence")["ann"][ids[1]]["rating"] == 5.0
    # A version saved from the ratings carries them on: the rater resumes there with nothing to redo.
    saved = lib.save_ratings_version(dataset_id, "coherence")
    assert set(lib.current_ratings(saved["id"], "coherence")["ann"]) == {ids[0], ids[1]}
    # Another dataset's version with the same item ids shares nothing.
    lib.import_items("other", items)
    assert lib.current_ratings(lib.get_dataset("other").id, "coherence") == {}


def test_human_means_are_the_versions_own_until_rate_page_ratings_are_saved(lib):
    dataset_id, ids = sample(lib)
    own = {i.id: i.human["coherence"] for i in lib.dataset_items(dataset_id)}
    assert lib.unsaved_ratings(dataset_id, "coherence") == []
    lib.add_rating(dataset_id, ids[0], "coherence", "ann", 1)
    lib.add_rating(dataset_id, ids[0], "coherence", "bo", 4)
    assert lib.human_means(dataset_id, "coherence") == own  # Rate-page ratings do not count yet
    assert lib.unsaved_ratings(dataset_id, "coherence") == [ids[0]]
    saved = lib.save_ratings_version(dataset_id, "coherence")
    means = lib.human_means(saved["id"], "coherence")
    assert means[ids[0]] == 2.5 and means[ids[1]] == own[ids[1]] and len(means) == len(own)
    assert lib.unsaved_ratings(saved["id"], "coherence") == []  # carried over, and in this version
    assert lib.unsaved_ratings(dataset_id, "coherence") == [ids[0]]  # the old version still lacks them


def test_geval_review_lists_the_queue_like_the_rate_page(tmp_path):
    db = str(tmp_path / "lib.db")
    with Library(db) as lib:
        run_id, judge = judged_run(lib)
        dataset_id, ids = sample(lib)
        top = max(ids, key=judge.get)
        lib.add_rating(dataset_id, top, "coherence", "ann", 1)
        human = lib.human_means(dataset_id, "coherence")  # the version's own: the Rate-page 1 is not saved
        label = lib.get_dataset(dataset_id).label
    out = CliRunner().invoke(
        cli, ["review", run_id, "--order", "disagree", "--limit", "3", "--db", db, "--json"]
    )
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["human"] == "coherence" and result["rated"] == len(ids) and len(result["items"]) == 3
    gaps = sorted(((abs(judge[i] - human[i]), -n) for n, i in enumerate(ids)), reverse=True)
    assert [r["item"] for r in result["items"]] == [ids[-n] for _, n in gaps[:3]]
    assert f"1 item has Rate-page ratings not in {label}; Save as dataset version" in out.stderr
    text = CliRunner().invoke(cli, ["review", run_id, "--db", db])
    assert text.exit_code == 0 and "least certain" in text.output
    missing = CliRunner().invoke(cli, ["review", "no-such-run", "--db", db])
    assert missing.exit_code == 1 and "Traceback" not in missing.output


def test_rate_keys_include_0_for_the_10_of_a_1_to_10_scale():
    from workbench_ui.rate_parts import key_hint, shortcut

    points = list(range(1, 11))
    assert [shortcut(p, points) for p in points] == [*"123456789", "0"]
    assert shortcut(10, list(range(0, 11))) is None and shortcut(0, list(range(0, 11))) == "0"
    assert key_hint(points).endswith("0 for 10") and "0 for 10" not in key_hint([1, 2, 3, 4, 5])


@pytest.mark.parametrize("rating", [99, -7.5, 2.5, 0])
def test_ratings_off_the_scale_are_refused_by_the_library(tmp_path, rating):
    from prompt_library import Library

    with Library(tmp_path / "scale.db") as lib:  # the seeded coherence prompt rates 1-5
        dataset_id = lib.get_dataset("sample").id
        item = lib.dataset_items(dataset_id)[0].id
        prompt = lib.get_prompt("coherence")
        for prompt_id in (prompt.id, None):  # named, or found by the dimension's name
            with pytest.raises(InputError, match="one of the scale's points 1-5"):
                lib.add_rating(dataset_id, item, "Coherence", "ann", rating, prompt_id=prompt_id)
        assert lib.rating_rows(dataset_id, "Coherence") == []


def test_a_look_alike_name_is_refused_at_freeze(tmp_path):
    from runner_helpers import dimension

    from prompt_library import Library

    with Library(tmp_path / "names.db") as lib:
        with pytest.raises(InputError, match="looks like the library's 'coherence'"):
            lib.freeze(dimension(definition="Another definition."), name="c\u043eherence")
        assert lib.freeze(dimension(definition="Another definition."), name="coherence").prompt.version == 2
