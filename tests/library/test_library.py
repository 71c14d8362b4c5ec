"""The prompt library on real SQLite files: seeding, drafts, freezing, immutability, datasets, runs."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from functools import partial

import pytest
import runner_helpers

from geval_core.errors import InputError, IntegrityError, NotFoundError
from geval_core.judgment import Judgment
from geval_core.prompts import content_hash, default_template
from geval_core.stats import agreement_inputs_from_run
from geval_core.types import HAND_WRITTEN, Item, JudgeSettings, Scale
from prompt_library import Library, open_library

# A three-point Coherence dimension over document and summary; dimension(field=...) overrides fields.
dimension = partial(
    runner_helpers.dimension,
    definition="How well the sentences of the summary fit together.",
    scale=Scale(1, 3),
    anchors={1: "Disconnected.", 2: "Partly connected.", 3: "One well-ordered account."},
    steps=("Read the document.", "Read the summary.", "Rate it."),
)


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.db", seed_examples=False)
    yield library
    library.close()


def test_new_library_is_seeded_once_with_examples(tmp_path):
    path = tmp_path / "seeded.db"
    with open_library(path) as library:
        labels = [p["label"] for p in library.list_prompts()]
        assert labels == ["coherence@1", "consistency@1", "fluency@1", "relevance@1"]
        sample = library.get_dataset("sample")
        assert sample.version == 1 and sample.item_count == 67
        assert sample.human == ("coherence", "consistency", "fluency", "relevance")
        fluency = library.get_prompt("fluency").dimension
        assert fluency.scale == Scale(1, 3) and fluency.inputs == ("summary",)
        assert set(fluency.anchors) == {1, 2, 3} and fluency.steps_model == HAND_WRITTEN
        assert fluency.judge == JudgeSettings()  # the local judge with its defaults
    with open_library(path) as library:  # reopening neither duplicates nor re-versions
        assert len(library.list_prompts()) == 4 and len(library.list_datasets()) == 1
    items = Library(path).dataset_items("sample")
    groups = {i.group for i in items}
    assert len(groups) == 24 and all(2 <= sum(i.group == g for i in items) <= 4 for g in groups)
    assert any(
        "<script>alert(1)</script>" in i.fields["summary"] and "**bold**" in i.fields["summary"]
        for i in items
    )


def test_default_path_honours_geval_db(tmp_path, monkeypatch):
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "env.db"))
    with Library(seed_examples=False) as library:
        assert library.path == tmp_path / "env.db"
    assert (tmp_path / "env.db").exists()
    with sqlite3.connect(tmp_path / "env.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_drafts_are_mutable_and_keep_steps_with_their_model(lib):
    draft = lib.save_draft(dimension(steps=()))
    assert lib.get_draft(draft).steps == ()
    lib.set_steps(draft, ["Read it.", "  ", "Rate it."], "gpt-4o-2024-08-06")
    got = lib.get_draft(draft)
    assert got.steps == ("Read it.", "Rate it.") and got.steps_model == "gpt-4o-2024-08-06"
    assert lib.save_draft(replace(got, definition="Changed."), draft) == draft
    assert lib.get_draft(draft).definition == "Changed."
    assert [d["id"] for d in lib.list_drafts()] == [draft]
    with pytest.raises(NotFoundError):
        lib.get_draft(draft + 1)


def test_freeze_versions_and_is_idempotent(lib):
    first = lib.freeze(dimension())
    assert first.created and first.prompt.label == "coherence@1"
    again = lib.freeze(dimension())
    assert not again.created and again.prompt.id == first.prompt.id and again.prompt.version == 1
    second = lib.freeze(dimension(definition="A new definition."))
    assert second.created and second.prompt.label == "coherence@2"
    assert [p.version for p in lib.prompt_versions("coherence")] == [1, 2]
    assert lib.get_prompt("coherence").version == 2
    assert lib.get_prompt("coherence@1").id == first.prompt.id
    assert lib.get_prompt("coherence", version=1).id == first.prompt.id
    assert lib.get_prompt(first.prompt.id[:10]).version == 1
    assert [p["label"] for p in lib.list_prompts(latest_only=True)] == ["coherence@2"]
    # The id is the content hash, and the stored template is the full one.
    assert first.prompt.id == content_hash(dimension())
    assert first.prompt.dimension.template == default_template(("document", "summary"))
    with pytest.raises(NotFoundError, match="known prompts: coherence"):
        lib.get_prompt("fluency")


def test_freeze_from_draft_and_refusal_lists_failed_checks(lib):
    draft = lib.save_draft(dimension(anchors={1: "Bad.", 3: "Good."}))
    with pytest.raises(InputError) as info:
        lib.freeze(draft)
    assert "missing: 2" in str(info.value)
    assert lib.list_prompts() == []
    lib.save_draft(dimension(), draft)
    assert lib.freeze(draft).prompt.label == "coherence@1"


def test_freeze_warns_on_undated_hosted_model(lib):
    alias = lib.freeze(dimension(judge=JudgeSettings(provider="openai", model="gpt-4o")))
    assert any("without a date" in w for w in alias.warnings)
    dated = lib.freeze(dimension(judge=JudgeSettings(provider="openai", model="gpt-4o-2024-08-06")))
    assert not any("without a date" in w for w in dated.warnings)
    assert lib.freeze(dimension()).warnings == []  # the local model is a pinned file


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE prompts SET dimension = '{}'",
        "UPDATE prompts SET name = 'other'",
        "DELETE FROM prompts",
        "UPDATE datasets SET name = 'other'",
        "DELETE FROM datasets",
        "UPDATE items SET fields = '{}'",
        "DELETE FROM items",
    ],
)
def test_frozen_rows_refuse_plain_sql_changes(tmp_path, sql):
    path = tmp_path / "frozen.db"
    with Library(path) as library:
        before = library.get_prompt("coherence")
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute(sql)
    conn.close()
    with Library(path) as library:
        assert library.get_prompt("coherence") == before
        assert len(library.dataset_items("sample")) == 67


def test_a_tampered_stored_prompt_is_detected(tmp_path):
    path = tmp_path / "tampered.db"
    with Library(path, seed_examples=False) as library:
        prompt = library.freeze(dimension()).prompt
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER prompts_no_update")  # only a deliberate act can change a frozen row
    data = dimension(definition="Sneaky.").to_dict()
    conn.execute("UPDATE prompts SET dimension = ? WHERE id = ?", [json.dumps(data), prompt.id])
    conn.commit()
    conn.close()
    with Library(path, seed_examples=False) as library, pytest.raises(IntegrityError, match="does not match"):
        library.get_prompt("coherence")


def test_import_items_versions_and_reuses_identical_content(lib):
    items = [Item("a", {"summary": "x"}, {"fluency": 3.0}, "g1"), Item("b", {"summary": "y"}, {}, "g1")]
    first = lib.import_items("mine", items)
    assert first["created"] and first["label"] == "mine@1" and first["item_count"] == 2
    again = lib.import_items("mine", list(items))
    assert not again["created"] and again["id"] == first["id"]
    changed = lib.import_items("mine", [*items, Item("c", {"summary": "z"})])
    assert changed["created"] and changed["version"] == 2
    assert [i.id for i in lib.dataset_items("mine@1")] == ["a", "b"]
    assert lib.dataset_items(first["id"])[0] == items[0]
    assert [d.label for d in lib.list_datasets()] == ["mine@1", "mine@2"]
    with pytest.raises(InputError, match="duplicate"):
        lib.import_items("dup", [items[0], items[0]])


def judgment(item_id, score, error=None, **extra):
    return Judgment(
        item_id,
        score=score,
        raw_score=score,
        top_rating=3,
        distribution={2: 0.25, 3: 0.75},
        valid_mass=0.9,
        replies=["3"],
        parsed=1,
        unparsed=0,
        ambiguous=False,
        mode="logprobs",
        fallback=False,
        model_version="m-1",
        input_tokens=10,
        output_tokens=1,
        latency_s=0.5,
        cached=False,
        error=error,
        **extra,
    )


def test_runs_and_judgments_round_trip(lib):
    prompt = lib.freeze(dimension()).prompt
    data = lib.import_items(
        "d",
        [
            Item(str(i), {"document": "d", "summary": "s"}, {"coherence": float(i % 3 + 1)}, f"g{i // 2}")
            for i in range(4)
        ],
    )
    run = lib.create_run("coherence", "d", JudgeSettings(), item_ids=["0", "1", "2", "3"])
    assert lib.get_run(run).status == "running" and lib.get_run(run).items_total == 4
    assert lib.save_judgment(run, judgment("1", 2.75, differs=False))
    assert lib.save_judgment(run, judgment("0", None, error="JudgeError: boom"))
    assert lib.judged_item_ids(run) == {"1"}
    assert lib.judged_item_ids(run, include_errors=True) == {"0", "1"}
    assert not lib.save_judgment(run, judgment("1", 1.0))  # a stored judgment never changes
    assert lib.save_judgment(run, judgment("0", 2.0))  # an errored one is retried
    rows = lib.judgments(run)
    assert [r["item_id"] for r in rows] == ["0", "1"]  # dataset order
    assert rows[1]["score"] == 2.75 and rows[1]["distribution"] == {2: 0.25, 3: 0.75}
    assert rows[1]["replies"] == ["3"] and rows[1]["ambiguous"] is False and rows[1]["differs"] is False
    assert rows[0]["error"] is None and rows[0]["score"] == 2.0
    lib.set_run_fields(run, model_version="m-1", cost_usd=0.25, fallbacks=0)
    lib.finish_run(run, "done", input_tokens=20, output_tokens=2)
    got = lib.get_run(run[:15])
    assert (got.status, got.input_tokens, got.cost_usd, got.extra["fallbacks"]) == ("done", 20, 0.25, 0)
    assert got.judged == 2 and got.errors == 0 and got.finished_at
    assert got.prompt_id == prompt.id and got.dataset_id == data["id"] and got.prompt_label == "coherence@1"
    assert [r.id for r in lib.list_runs(prompt="coherence")] == [run]
    assert lib.list_runs(prompt="coherence@2") == [] and lib.list_runs(dataset="d@1")[0].id == run
    # Items 0 and 1: human 1 and 2; item 1 -> judge 2.75, item 0 -> 2.0.
    assert agreement_inputs_from_run(lib, run, "coherence") == ([2.0, 2.75], [1.0, 2.0], ["g0", "g0"])
    with pytest.raises(InputError):
        lib.finish_run(run, "exploded")
    with pytest.raises(InputError, match="not in dataset"):
        lib.create_run("coherence", "d", JudgeSettings(), item_ids=["nope"])


def test_judge_cache_and_settings(lib):
    assert lib.cache_get("k") is None
    reply = {"choices": [{"text": "3"}], "model_version": "m"}
    lib.cache_put("k", reply)
    assert lib.cache_get("k") is None  # no origin: never replayed
    lib.freeze(dimension())
    lib.import_items("d", [Item("a", {"document": "d", "summary": "s"})])
    run = lib.create_run("coherence", "d", JudgeSettings())
    lib.cache_put("k", reply, origin=f"{run}/a")  # replaces the entry that named no judgment
    with lib.transaction():  # the session writes the entry and the judgment it is scored into together
        lib.save_judgment(run, Judgment("a", score=3.0, replies=["3"], mode="sampling"))
    assert lib.cache_get("k") == reply
    assert lib.get_setting("prices", {}) == {}
    lib.set_setting("prices", {"m": {"input": 1.0, "output": 2.0}})
    assert lib.get_setting("prices") == {"m": {"input": 1.0, "output": 2.0}}


def test_a_failed_write_leaves_nothing_behind(lib):
    with pytest.raises(RuntimeError), lib._write() as db:
        db.execute("INSERT INTO meta (key, value) VALUES ('half', '1')")
        raise RuntimeError("crash mid-write")
    assert lib.get_setting("half") is None


def test_a_failed_nested_write_rolls_back_alone_at_any_depth(lib):
    with lib.transaction():
        lib.set_setting("outer", 1)
        with lib._write() as db:
            db.execute("INSERT INTO meta (key, value) VALUES ('middle', '2')")
            with pytest.raises(RuntimeError), lib._write() as inner:
                inner.execute("INSERT INTO meta (key, value) VALUES ('inner', '3')")
                raise RuntimeError("the innermost write fails")
            db.execute("INSERT INTO meta (key, value) VALUES ('after', '4')")
        with pytest.raises(RuntimeError), lib._write() as sibling:
            sibling.execute("INSERT INTO meta (key, value) VALUES ('sibling', '5')")
            raise RuntimeError("a second nested write fails")
    assert [lib.get_setting(k) for k in ("outer", "middle", "inner", "after", "sibling")] == [
        1,
        2,
        None,
        4,
        None,
    ]


def test_n_and_temperature_are_part_of_the_frozen_metric(lib):
    sampling = JudgeSettings(mode="sampling", n=5, temperature=0.7)
    first = lib.freeze(dimension(judge=sampling)).prompt
    more = lib.freeze(dimension(judge=replace(sampling, n=10))).prompt
    hotter = lib.freeze(dimension(judge=replace(sampling, temperature=1.0))).prompt
    assert [p.label for p in (first, more, hotter)] == ["coherence@1", "coherence@2", "coherence@3"]
    assert len({first.id, more.id, hotter.id}) == 3
    assert lib.freeze(dimension(judge=JudgeSettings(mode="sampling", n=5, temperature=0.7))).prompt == first


def test_sample_data_is_marked_illustrative_and_fits_the_example_scales():
    from prompt_library.seed import SAMPLE_DIR, SAMPLE_FILE, example_dimensions

    rows = [json.loads(line) for line in SAMPLE_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    scales = {d.name.lower(): d.scale for d in example_dimensions()}
    assert scales == {
        "coherence": Scale(1, 5),
        "consistency": Scale(1, 5),
        "fluency": Scale(1, 3),
        "relevance": Scale(1, 5),
    }
    assert all("illustrative" in r["note"].lower() and "authors" in r["note"] for r in rows)
    assert "ratings are illustrative" in (SAMPLE_DIR / "README.md").read_text(encoding="utf-8")
    assert {r["kind"] for r in rows} == {"news", "dialogue"}
    for r in rows:
        assert all(scales[d].min <= v <= scales[d].max for d, v in r["ratings"].items()), r["id"]
    # "Clearly different quality": no two outputs of one document share every rating.
    by_doc: dict[str, set] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], set()).add(tuple(sorted(r["ratings"].items())))
    assert sum(len(v) for v in by_doc.values()) == len(rows) and len(by_doc) >= 24
