"""Panels, cascades, splits and test-side uses in one protected table (issue 38): SQLite refuses every change to a
stored record, a row changed with the triggers dropped is named by `geval verify`, and a library that kept them
in its settings migrates with every record intact."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.diagnostics.cascade import freeze_cascade, get_cascade
from geval_core.errors import IntegrityError
from geval_core.run.panel import freeze_panel, get_panel
from geval_core.run.splits import get_split, make_split, record_test_use, sealed_uses
from geval_core.types import Item, JudgeSettings
from prompt_library import Library, migrations
from prompt_library.frozen_records import record_hash

CHEAP, STRONG = (
    JudgeSettings(provider="openai", model="cheap"),
    JudgeSettings(provider="openai", model="strong"),
)


def grouped_items(count: int = 12) -> list[Item]:
    return [
        Item(
            f"i{k:02d}",
            {"document": f"Document {k // 2}.", "summary": f"Summary {k}."},
            {"coherence": float(1 + k % 5)},
            f"doc{k // 2}",
        )
        for k in range(count)
    ]


@pytest.fixture
def records(tmp_path):
    """A library file holding one record of each kind (two test-side uses), and their keys."""
    path = tmp_path / "lib.db"
    with Library(path, seed_examples=False) as library:
        cheap = library.freeze(dimension(CHEAP), name="cheap").prompt
        strong = library.freeze(
            dimension(STRONG, definition="Coherence, read closely."), name="strong"
        ).prompt
        dataset = library.import_items("golden", grouped_items())
        panel, _ = freeze_panel(library, "jury", [cheap, strong], "mean")
        cascade, _ = freeze_cascade(library, "tiered", "cheap", "strong", "entropy", 0.5)
        split, _ = make_split(library, dataset["id"], dev=0.5, seed=2)
        record_test_use(library, split, cheap.id, "run-1")
        record_test_use(library, split, strong.id, "run-2")
    return path, {"panel": "jury", "cascade": "tiered", "split": dataset["id"], "test-use": split["hash"]}


def plain(path) -> sqlite3.Connection:
    """Another tool's connection: autocommit, default pragmas (no recursive triggers)."""
    return sqlite3.connect(path, isolation_level=None)


def verify(path, *extra: str):
    return CliRunner().invoke(cli, ["verify", "--db", str(path), *extra])


CHANGES = {
    "update": "UPDATE frozen_records SET body = json_set(body, '$.x', 1) WHERE kind = :kind AND key = :key",
    "delete": "DELETE FROM frozen_records WHERE kind = :kind AND key = :key",
    "insert or replace": "INSERT OR REPLACE INTO frozen_records SELECT id, kind, key, seq, '{}', created_at, prev, "
    "row_hash FROM frozen_records WHERE kind = :kind AND key = :key",
    "replace same version": "REPLACE INTO frozen_records (kind, key, seq, body, created_at, row_hash) SELECT kind, "
    "key, seq, '{}', created_at, row_hash FROM frozen_records "
    "WHERE kind = :kind AND key = :key",
    "insert a version out of sequence": "INSERT INTO frozen_records (kind, key, seq, body, created_at, row_hash) "
    "VALUES (:kind, :key, 9, '{}', 'now', 'x')",
}


@pytest.mark.parametrize("kind", ["test-use", "split", "panel", "cascade"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_sqlite_refuses_every_change_to_a_stored_record(records, kind, change):
    path, keys = records
    conn = plain(path)
    before = conn.execute("SELECT * FROM frozen_records ORDER BY id").fetchall()
    with pytest.raises(sqlite3.IntegrityError, match="frozen records are append-only"):
        conn.execute(CHANGES[change], {"kind": kind, "key": keys[kind]})
    assert conn.execute("SELECT * FROM frozen_records ORDER BY id").fetchall() == before
    conn.close()
    assert verify(path).exit_code == 0


def test_the_records_read_back_as_stored(records):
    path, keys = records
    with Library(path, seed_examples=False) as library:
        assert get_panel(library, "jury").version == 1 and get_cascade(library, "tiered")["version"] == 1
        split = get_split(library, keys["split"])
        assert [u["run_id"] for u in sealed_uses(library, split)] == ["run-1", "run-2"]
        assert library.setting_names("panel:") == ["jury"] and library.record_keys("cascade") == ["tiered"]
        # The same content again is the stored version, not a new row; a use is always a new row.
        assert (
            freeze_panel(
                library, "jury", [library.get_prompt("cheap"), library.get_prompt("strong")], "mean"
            )[1]
            is False
        )
        assert record_test_use(library, split, library.get_prompt("cheap").id, "run-1") == 2
        assert len(sealed_uses(library, split)) == 3
        assert library.get_setting("split-test-uses:" + split["hash"]) is None  # nothing left in the settings


@pytest.mark.parametrize("kind", ["test-use", "split", "panel", "cascade"])
def test_a_row_edited_with_the_triggers_dropped_is_named_by_verify(records, kind):
    path, keys = records
    conn = plain(path)
    conn.execute("DROP TRIGGER frozen_records_no_update")
    conn.execute(
        "UPDATE frozen_records SET body = json_set(body, '$.edited', 1) WHERE kind = ? AND key = ? "
        "AND seq = 1",
        [kind, keys[kind]],
    )
    conn.execute(migrations.PROTECTION_TRIGGERS["frozen_records_no_update"])  # the trigger back, as it was
    conn.close()
    result = verify(path, "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    named = [p["text"] for p in report["problems"]]
    assert named == [
        f"frozen {kind} {keys[kind][:40]}@1: stored hash does not match its content (changed after it "
        "was frozen)"
    ], named
    with Library(path, seed_examples=False) as library, pytest.raises(IntegrityError, match=f"frozen {kind}"):
        library.records(kind, keys[kind])  # a read refuses it too


def test_a_use_deleted_with_the_triggers_dropped_is_named_by_verify(records):
    """Deleting the first use (the one `align report` would count) breaks the chain at the row after it."""
    path, keys = records
    conn = plain(path)
    conn.execute("DROP TRIGGER frozen_records_no_delete")
    conn.execute("DELETE FROM frozen_records WHERE kind = 'test-use' AND seq = 1")
    conn.close()
    result = verify(path)
    assert result.exit_code == 1
    assert "trigger frozen_records_no_delete missing" in result.output
    use = f"frozen test-use {keys['test-use'][:40]}@2"
    assert f"{use}: does not follow the record stored before it" in result.output, result.output
    assert f"{use}: version 1 of it is missing (removed)" in result.output


def old_settings(cheap: str, strong: str, dataset_id: str) -> dict[str, object]:
    """Panels, a cascade, a split and its uses as the settings rows of schema version 10 held them."""
    body = {
        "dataset_id": dataset_id,
        "by": "group",
        "seed": 0,
        "dev_share": 0.5,
        "dev": ["i00", "i01"],
        "test": ["i02", "i03"],
    }
    from geval_core.prompts import canonical_hash

    split = {
        **body,
        "hash": canonical_hash(body),
        "groups": {"dev": 1, "test": 1},
        "created_at": "2026-01-02T00:00:00+00:00",
    }
    cascade = {"cheap": cheap, "strong": strong, "signal": "sd", "threshold": 0.25}
    return {
        "panel:jury": [
            {
                "id": canonical_hash({"members": m, "rule": r}),
                "version": n,
                "members": m,
                "rule": r,
                "created_at": f"2026-01-0{n}T00:00:00+00:00",
            }
            for n, (m, r) in enumerate((([cheap, strong], "mean"), ([strong, cheap], "median")), 1)
        ],
        "cascade:tiered": [
            {
                **cascade,
                "id": canonical_hash(cascade),
                "name": "tiered",
                "version": 1,
                "created_at": "2026-01-03T00:00:00+00:00",
            }
        ],
        f"split:{dataset_id}": [split],
        f"split-test-uses:{split['hash']}": [
            {"prompt_id": cheap, "run_id": "r1", "at": "2026-01-04T00:00:00+00:00"},
            {"prompt_id": strong, "run_id": None, "at": "2026-01-05T00:00:00+00:00"},
        ],
        "prices": {"openai:cheap": [1, 2]},  # a real setting: stays where it is
    }


def test_a_library_with_old_settings_rows_migrates_with_its_records_intact(tmp_path):
    import sqlite_utils

    with Library(tmp_path / "ids.db", seed_examples=False) as lib:  # the prompts' ids, to write by hand
        cheap = lib.freeze(dimension(CHEAP), name="cheap").prompt
        strong = lib.freeze(dimension(STRONG, definition="Coherence, read closely."), name="strong").prompt
    old = tmp_path / "older.db"
    db = sqlite_utils.Database(old)
    migrations.apply(db, stop_before="m011_frozen_records")
    for prompt in (cheap, strong):
        db.execute(
            "INSERT INTO prompts (id, name, version, dimension, judge, created_at) "
            "VALUES (?, ?, 1, ?, ?, 'then')",
            [prompt.id, prompt.name, json.dumps(prompt.dimension.to_dict()), prompt.dimension.judge.judge_id],
        )
    stored = old_settings(cheap.id, strong.id, "d" * 64)
    for key, value in stored.items():
        db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", [key, json.dumps(value)])
    db.conn.commit()
    db.close()
    with Library(old, seed_examples=False) as lib:
        panel = get_panel(lib, "jury")
        assert (panel.version, panel.members, panel.rule, panel.created_at) == (
            2,
            (strong.id, cheap.id),
            "median",
            "2026-01-02T00:00:00+00:00",
        )
        assert get_panel(lib, "jury@1").members == (cheap.id, strong.id)
        cascade = get_cascade(lib, "tiered")
        assert {
            k: cascade[k] for k in ("cheap", "strong", "signal", "threshold", "version", "created_at")
        } == {
            "cheap": cheap.id,
            "strong": strong.id,
            "signal": "sd",
            "threshold": 0.25,
            "version": 1,
            "created_at": "2026-01-03T00:00:00+00:00",
        }
        old_split = stored[f"split:{'d' * 64}"][0]
        assert lib.records("split", "d" * 64)[0]["body"] == {
            k: v for k, v in old_split.items() if k != "created_at"
        }
        assert sealed_uses(lib, old_split) == stored[f"split-test-uses:{old_split['hash']}"]
        assert lib.get_setting("prices") == {"openai:cheap": [1, 2]}
        assert (
            lib._rows(
                "SELECT key FROM meta WHERE key LIKE 'split%' OR key LIKE 'panel:%' OR key LIKE 'cascade:%'"
            )
            == []
        )
    output = verify(old, "--json").output
    report = json.loads(output[: output.rindex("}") + 1])
    assert report["checked"]["frozen_records"] == 6
    assert not [p for p in report["problems"] if p["kind"].startswith("frozen")], report["problems"]


def test_a_row_hash_is_the_one_verify_recomputes(records):
    path, _ = records
    with Library(path, seed_examples=False) as library:
        rows = library._rows("SELECT * FROM frozen_records ORDER BY id")
    assert [r["kind"] for r in rows] == ["panel", "cascade", "split", "test-use", "test-use"]
    assert all(r["row_hash"] == record_hash(r) for r in rows)
    assert [r["prev"] for r in rows] == [None, *(r["row_hash"] for r in rows[:-1])]
