"""The judge cache holds (issue 9): entries are hash-checked on read, keyed by server; protection is watched.

The attack from the issue: an edited `judge_cache` row made a new run score every item 5.0 with 0 judge
calls. Here the edited entries are ignored, counted in `cache_rejected`, asked again and replaced.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import warnings
from dataclasses import replace

import pytest
from runner_helpers import WORKED_SCORE, close, dimension, setup_library, worked_judge
from sqlite_utils import Database

from geval_core.errors import IntegrityError
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.calls import build_request, server_id
from geval_core.types import Item, JudgeSettings
from prompt_library import Library, LibraryIntegrityWarning, verify_library
from prompt_library import migrations as library_migrations


def scored_run(library, prompt, items, judge, settings=None):
    run = library.create_run(prompt.id, "tiny", settings or prompt.dimension.judge)
    summary = run_scoring(prompt, items, judge, library, run, RunOptions(settings=settings, concurrency=2))
    return run, summary


def sql(path, statement, params=()):
    """A change made by another tool: a plain connection, autocommit."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(statement, params)
    finally:
        conn.close()


def fives_everywhere(path, prompt, item):
    """The issue's attack: every cached reply rewritten to a sure 5 (the hash column left as it was)."""
    five = ScriptedJudge(lambda request: {"5": 1.0}).judge(
        build_request(prompt, item, prompt.dimension.judge, "logprobs")
    )
    sql(path, "UPDATE judge_cache SET reply = ?", [json.dumps(five.to_dict())])


def test_an_edited_cache_entry_is_ignored_counted_and_asked_again(tmp_path):
    path = tmp_path / "lib.db"
    library, prompt, items, _ = setup_library(path, count=6)
    _, first = scored_run(library, prompt, items, worked_judge())
    assert first.judge_calls == 6 and first.cached == 0
    fives_everywhere(path, prompt, items[0])
    assert not verify_library(library)["ok"]
    judge = worked_judge()
    run, second = scored_run(library, prompt, items, judge)
    assert (
        second.cache_rejected == 6
        and second.cached == 0
        and second.judge_calls == 6
        and len(judge.requests) == 6
    )
    assert all(close(j["score"], WORKED_SCORE) for j in library.judgments(run))  # never 5.0
    assert verify_library(library)["ok"]  # the fresh replies replaced the bad entries
    _, third = scored_run(library, prompt, items, worked_judge())
    assert (third.cached, third.judge_calls, third.cache_rejected) == (6, 0, 0)


def test_an_entry_without_its_hash_is_a_miss(tmp_path):
    path = tmp_path / "lib.db"
    library, prompt, items, _ = setup_library(path, count=3)
    scored_run(library, prompt, items, worked_judge())
    sql(path, "UPDATE judge_cache SET hash = NULL")
    _, again = scored_run(library, prompt, items, worked_judge())
    assert (again.cache_rejected, again.cached, again.judge_calls) == (3, 0, 3)


def judged(library: Library, *texts: str, **about) -> list[str]:
    """Origins (RUN/ITEM) of judgments scored from replies with these texts, one item each; `about` adds the
    judgment's model version and tokens (a cache entry must agree with them too)."""
    library.freeze(dimension())
    items = [Item(f"i{n}", {"document": f"d{n}", "summary": "s"}) for n in range(len(texts))]
    library.import_items("origins", items)
    run = library.create_run("coherence", "origins", JudgeSettings())
    for item, text in zip(items, texts, strict=True):
        library.save_judgment(run, Judgment(item.id, score=3.0, replies=[text], mode="sampling", **about))
    return [f"{run}/{item.id}" for item in items]


def test_cache_get_refuses_an_edit_and_cache_put_replaces_only_a_bad_entry(tmp_path):
    path = tmp_path / "lib.db"
    library = Library(path, seed_examples=False)
    three, four = judged(library, "3", "4")
    library.cache_put("k", {"choices": [{"text": "3"}]}, origin=three)
    library.cache_put("k", {"choices": [{"text": "4"}]}, origin=four)  # a verified entry is kept
    assert library.cache_get("k") == {"choices": [{"text": "3"}]}
    sql(path, 'UPDATE judge_cache SET reply = \'{"choices":[{"text":"5"}]}\'')
    with pytest.raises(IntegrityError, match="does not match its hash"):
        library.cache_get("k")
    sql(path, "UPDATE judge_cache SET reply = 'not json'")
    with pytest.raises(IntegrityError):
        library.cache_get("k")
    library.cache_put("k", {"choices": [{"text": "4"}]}, origin=four)  # the one allowed overwrite
    assert library.cache_get("k") == {"choices": [{"text": "4"}]}


def test_the_same_request_to_two_servers_is_two_entries(tmp_path):
    library, prompt, items, _ = setup_library(tmp_path / "lib.db", count=4)
    one = replace(prompt.dimension.judge, base_url="http://127.0.0.1:8001/v1")
    two = replace(prompt.dimension.judge, base_url="http://127.0.0.1:8002/v1")
    _, first = scored_run(library, prompt, items, ScriptedJudge(), one)
    _, other = scored_run(library, prompt, items, ScriptedJudge(), two)
    assert first.judge_calls == 4 and (other.judge_calls, other.cached) == (4, 0)
    assert library._one("SELECT COUNT(*) AS n FROM judge_cache")["n"] == 8
    same = replace(one, base_url="HTTP://127.0.0.1:8001/v1/")  # the same server, written differently
    _, again = scored_run(library, prompt, items, ScriptedJudge(), same)
    assert (again.judge_calls, again.cached) == (0, 4)


@pytest.mark.parametrize(
    "url,expected",
    [
        (None, "openai"),
        ("", "openai"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("HTTP://User:sk-SECRET@LocalHost:8080/V1/", "http://localhost:8080/V1"),
        ("https://example.com/v1/?api_key=SECRET#frag", "https://example.com/v1"),
    ],
)
def test_server_id_is_the_url_without_credentials(url, expected):
    assert server_id(url, "openai") == expected and "SECRET" not in server_id(url, "openai")


def test_opening_a_library_with_a_missing_trigger_warns_and_does_not_recreate_it(tmp_path):
    path = tmp_path / "lib.db"
    Library(path, seed_examples=False).close()
    sql(path, "DROP TRIGGER items_no_update")
    for _ in range(2):  # reopening never puts it back
        with (
            pytest.warns(LibraryIntegrityWarning, match="trigger items_no_update missing"),
            Library(path) as library,
        ):
            assert library.integrity_warnings == ["trigger items_no_update missing"]
    sql(path, "CREATE TRIGGER sneaky AFTER INSERT ON meta BEGIN SELECT 1; END")
    with pytest.warns(LibraryIntegrityWarning), Library(path) as library:
        assert "trigger sneaky is not part of the library's schema" in library.integrity_warnings


def test_an_intact_library_opens_without_warnings(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Library(tmp_path / "lib.db") as library:
            assert library.integrity_warnings == []


def test_upgrading_an_older_library_adds_protection_but_restores_nothing_dropped(tmp_path):
    path = tmp_path / "old.db"
    db = Database(path)
    library_migrations.apply(db, stop_before="m003_pin")
    db.execute("DROP TRIGGER prompts_no_delete")  # tampered before the upgrade
    db.execute("INSERT INTO judge_cache (key, reply, created_at) VALUES ('k', '{}', 'then')")  # no hash
    db.conn.commit()
    db.close()
    with pytest.warns(LibraryIntegrityWarning), Library(path, seed_examples=False) as library:
        assert library.integrity_warnings == ["trigger prompts_no_delete missing"]
        names = {r["name"] for r in library._rows("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert {"items_no_extra", "judgments_no_update", "runs_no_delete"} <= names
        assert library._one("SELECT COUNT(*) AS n FROM judge_cache")["n"] == 0  # unverifiable: dropped


def test_a_tampered_dataset_is_refused_on_read(tmp_path):
    path = tmp_path / "lib.db"
    library, prompt, items, dataset = setup_library(path, count=3)
    sql(path, "DROP TRIGGER items_no_update")
    sql(path, 'UPDATE items SET fields = \'{"document":"x","summary":"y"}\' WHERE item_id = ?', [items[0].id])
    with pytest.raises(IntegrityError, match=r"tiny@1 .* stored hash does not match its items"):
        library.dataset_items("tiny")


def test_entries_are_stored_canonical_and_hashed_as_before(tmp_path):
    """cache_put stores sorted-key JSON and hashes that text directly; the hash is the documented one
    (canonical JSON of {"key", "reply"}), and entries written before (insertion order) still verify."""
    from prompt_library.runs import cache_entry_ok, cache_hash

    path = tmp_path / "lib.db"
    library = Library(path, seed_examples=False)
    reply = {
        "usage": {"output_tokens": 1, "input_tokens": 9},
        "model_version": "m-ü",
        "choices": [{"text": "3 — «ok»", "positions": [["3", -0.1, [["3", -0.1], ["4", -2.5]]]]}],
        "latency_s": 0.25,
        "raw": None,
    }
    [origin] = judged(library, "3 — «ok»", model_version="m-ü", input_tokens=9, output_tokens=1)
    library.cache_put("key-1", reply, origin=origin)
    text, digest = sqlite3.connect(path).execute("SELECT reply, hash FROM judge_cache").fetchone()
    assert text == json.dumps(reply, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha256(
        json.dumps(
            {"key": "key-1", "reply": reply}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    ).hexdigest()
    assert digest == expected == cache_hash("key-1", text)
    old_text = json.dumps(reply, separators=(",", ":"), ensure_ascii=False)  # as stored before issue 15
    assert old_text != text and cache_entry_ok("key-1", old_text, cache_hash("key-1", old_text))
    assert not cache_entry_ok("key-2", text, digest) and not cache_entry_ok(
        "key-1", text.replace("3", "4"), digest
    )
    assert library.cache_get("key-1") == reply
