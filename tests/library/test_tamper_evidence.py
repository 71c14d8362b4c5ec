"""Edits of results and schema that verify must name (issue 24, item 3), on a real library file.

Each statement runs through a plain sqlite3 connection, as another tool would; where a trigger refuses
the edit, the statement drops it first and re-creates it after, so only the row hashes, the run digest
or the schema check can see the change. Each statement is first shown to take effect, so the check can
fail: "edits of judgments, runs, ratings or schema that verify misses: 0".
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import run_scoring
from prompt_library import Library, migrations
from prompt_library.base import now
from prompt_library.hashes import row_hash
from prompt_library.runs import cache_hash
from prompt_library.schema import EXPECTED_COLUMNS


def _unprotected(trigger: str, sql: str) -> str:
    """`sql` with the trigger dropped before and re-created, exactly as the migrations wrote it, after."""
    return f"DROP TRIGGER {trigger}; {sql}; {migrations.PROTECTION_TRIGGERS[trigger]}"


# (name, SQL with :placeholders, a query that is true once the statement took effect, texts verify prints)
STATEMENTS = [
    (
        "update a judgment's score, trigger re-created",
        _unprotected(
            "judgments_no_update", "UPDATE judgments SET score = 1.25 WHERE run_id = :run AND item_id = :item"
        ),
        "SELECT score = 1.25 FROM judgments WHERE run_id = :run AND item_id = :item",
        [
            "judgment {run}/{item}/0: stored hash does not match its content",
            "run {run}: digest does not match",
        ],
    ),
    (
        "turn an errored judgment into a score",
        _unprotected(
            "judgments_no_update", "UPDATE judgments SET score = 3.0, error = NULL WHERE item_id = :errored"
        ),
        "SELECT error IS NULL AND score = 3.0 FROM judgments WHERE item_id = :errored",
        ["judgment {run}/{errored}/0: stored hash does not match its content"],
    ),
    (
        "edit a rating",
        _unprotected("ratings_no_update", "UPDATE ratings SET rating = 4.5 WHERE id = :rating"),
        "SELECT rating = 4.5 FROM ratings WHERE id = :rating",
        ["rating {rating}: stored hash does not match"],
    ),
    (
        "edit a run's judge",
        _unprotected(
            "runs_no_update", "UPDATE runs SET judge = json_set(judge, '$.model', 'other') WHERE id = :run"
        ),
        "SELECT json_extract(judge, '$.model') = 'other' FROM runs WHERE id = :run",
        ["run {run}: stored hash does not match its content"],
    ),
    (
        "delete a judgment, trigger re-created",
        _unprotected("judgments_no_delete", "DELETE FROM judgments WHERE run_id = :run AND item_id = :item"),
        "SELECT COUNT(*) = 0 FROM judgments WHERE item_id = :item",
        ["run {run}: digest does not match its judgments"],
    ),
    (
        "score over a final judgment as its successor",
        _unprotected(
            "judgments_no_replace",
            "INSERT INTO judgments (run_id, item_id, attempt, score, mode, created_at) "
            "VALUES (:run, :item, 1, 5.0, 'logprobs', 'now')",
        ),
        "SELECT COUNT(*) = 2 FROM judgments WHERE item_id = :item",
        ["judgment {run}/{item}/1: carries no row hash", "judgment {run}/{item}/1: follows a final judgment"],
    ),
    (
        "drop column score",
        "ALTER TABLE judgments DROP COLUMN score",
        "SELECT COUNT(*) = 0 FROM pragma_table_info('judgments') WHERE name = 'score'",
        ["table judgments: column score missing"],
    ),
    (
        "drop a trigger",
        "DROP TRIGGER judgments_no_update",
        "SELECT COUNT(*) = 0 FROM sqlite_master WHERE name = 'judgments_no_update'",
        ["trigger judgments_no_update missing"],
    ),
    (
        "delete a migration record",
        "DELETE FROM _sqlite_migrations WHERE name = 'm003_pin'",
        "SELECT COUNT(*) = 0 FROM _sqlite_migrations WHERE name = 'm003_pin'",
        ["migration m003_pin: record missing"],
    ),
    (
        "delete the last migration record",
        "DELETE FROM _sqlite_migrations WHERE name = 'm009_tamper_evidence'",
        "SELECT COUNT(*) = 0 FROM _sqlite_migrations WHERE name = 'm009_tamper_evidence'",
        ["migration m009_tamper_evidence: record missing"],
    ),
    (
        "insert a forged cache row with a recomputed hash",
        "INSERT INTO judge_cache (key, reply, hash, created_at) VALUES ('forged-key', :forged, :forged_hash, 'now')",
        "SELECT COUNT(*) = 1 FROM judge_cache WHERE key = 'forged-key'",
        ["cache entry forged-key…: names no judgment it came from (it is never replayed)"],
    ),
    (
        "forge a cache row naming a real judgment",
        "INSERT INTO judge_cache (key, reply, hash, created_at, origin) VALUES ('forged-key', :forged, :forged_hash, "
        "'now', :origin)",
        "SELECT COUNT(*) = 1 FROM judge_cache WHERE origin = :origin AND key = 'forged-key'",
        [
            "cache entry forged-key…: its reply is not the one its origin judgment {run}/{item} was scored from"
        ],
    ),
]
FORGED = {
    "choices": [{"text": "5 (forged)", "positions": None}],
    "model_version": "m",
    "usage": {},
    "latency_s": 0.0,
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, object]]:
    """A seeded library: a finished run (5 judgments and 1 errored), a cache entry naming its judgment, a rating."""
    path = tmp_path_factory.mktemp("tamper") / "template.db"
    with Library(path) as lib:
        prompt = lib.get_prompt("coherence")
        items = lib.dataset_items("sample")[:6]
        run = lib.create_run(prompt.id, "sample", prompt.dimension.judge, item_ids=[i.id for i in items])
        with (
            lib.transaction()
        ):  # the runner's cache writes are cleared: this file holds one entry, with origin
            run_scoring(prompt, items[:5], ScriptedJudge(), lib, run)
            real = lib._one("SELECT reply FROM judge_cache WHERE origin = ?", [f"{run}/{items[0].id}"])[
                "reply"
            ]
            lib.conn.execute("DELETE FROM judge_cache")
        lib.save_judgment(run, Judgment(items[5].id, mode="logprobs", error="JudgeError: boom"))
        lib.finish_run(run, "done")
        first = lib.judgments(run)[0]
        # The whole reply the first judgment was scored from (its texts alone would not be replayed).
        lib.cache_put("real-key", json.loads(real), origin=f"{run}/{first['item_id']}")
        rating = lib.add_rating(lib.get_dataset("sample").id, items[0].id, "coherence", "ann", 4.0)
    text = json.dumps(FORGED, sort_keys=True, separators=(",", ":"))
    params = {
        "run": run,
        "item": first["item_id"],
        "errored": items[5].id,
        "rating": rating,
        "forged": text,
        "forged_hash": cache_hash("forged-key", text),
        "origin": f"{run}/{first['item_id']}",
    }
    return path, params


@pytest.fixture
def library_file(template, tmp_path) -> tuple[Path, dict[str, object]]:
    path = tmp_path / "lib.db"
    shutil.copy(template[0], path)
    return path, template[1]


def execute(path: Path, sql: str, params: dict[str, object]) -> None:
    """Run statements as another tool would: a plain connection, autocommit, default pragmas."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in re.split(r";\s+(?=(?:DROP|UPDATE|INSERT|DELETE|CREATE|ALTER)\b)", sql):
            conn.execute(statement, {k: v for k, v in params.items() if f":{k}" in statement})
    finally:
        conn.close()


def holds(path: Path, query: str, params: dict[str, object]) -> bool:
    with sqlite3.connect(path) as conn:
        return bool(conn.execute(query, {k: v for k, v in params.items() if f":{k}" in query}).fetchone()[0])


def verify(path: Path, *extra: str):
    return CliRunner().invoke(cli, ["verify", "--db", str(path), *extra])


@pytest.mark.parametrize("name,sql,proof,expected", STATEMENTS, ids=[s[0] for s in STATEMENTS])
def test_each_edit_takes_effect_and_verify_names_it(library_file, name, sql, proof, expected):
    path, params = library_file
    clean = verify(path)
    assert clean.exit_code == 0 and "ok: every hash matches" in clean.output, clean.output
    assert not holds(path, proof, params)
    execute(path, sql, params)
    assert holds(path, proof, params)  # the edit is in the file: verify has something to find
    result = verify(path)
    assert result.exit_code == 1 and "Traceback" not in result.output
    for text in expected:
        assert text.format(**params) in result.output, result.output
    if "trigger re-created" in name:  # the triggers are whole again: only the hashes saw the edit
        assert "trigger " not in result.output.split("\n", 1)[1]


def test_a_retry_appends_a_successor_and_reads_return_the_latest(tmp_path):
    with Library(tmp_path / "lib.db") as lib:
        run = lib.create_run("coherence", "sample", lib.get_prompt("coherence").dimension.judge)
        assert lib.save_judgment(run, Judgment("d01-a", mode="logprobs", error="JudgeError: boom"))
        assert lib.get_run(run).errors == 1 and lib.judged_item_ids(run) == set()
        assert lib.save_judgment(run, Judgment("d01-a", score=3.5, top_rating=4, mode="logprobs"))
        assert not lib.save_judgment(run, Judgment("d01-a", score=1.0, mode="logprobs"))  # final is final
        stored = lib.conn.execute("SELECT attempt, score, error FROM judgments ORDER BY attempt").fetchall()
        assert stored == [(0, None, "JudgeError: boom"), (1, 3.5, None)]
        assert [(j["item_id"], j["score"], j["top_rating"]) for j in lib.judgments(run)] == [
            ("d01-a", 3.5, 4.0)
        ]
        got = lib.get_run(run)
        assert (got.judged, got.errors, lib.scored_count(run)) == (1, 0, 1)
        assert lib.judged_item_ids(run) == lib.judged_item_ids(run, include_errors=True) == {"d01-a"}
        lib.finish_run(run)
        assert len(lib.get_run(run).digest) == 64
    assert verify(tmp_path / "lib.db").exit_code == 0


def test_a_row_hash_is_over_the_values_as_stored(tmp_path):
    """An int rating in a REAL column is stored as 3.0, a bool as 1: the hash taken on insert is verify's."""
    with Library(tmp_path / "lib.db") as lib:
        run = lib.create_run("coherence", "sample", lib.get_prompt("coherence").dimension.judge)
        lib.save_judgment(
            run,
            Judgment(
                "d01-a",
                score=3,
                top_rating=3,
                latency_s=1,
                cached=True,
                mode="logprobs",
                distribution={3: 1.0},
                replies=["3"],
                differs=True,
            ),
        )
        row = lib._one("SELECT * FROM judgments")
        assert row["score"] == 3.0 and isinstance(row["score"], float) and row["cached"] == 1
        assert row["row_hash"] == row_hash("judgments", row)
    assert verify(tmp_path / "lib.db").exit_code == 0


def test_expected_columns_are_the_ones_a_migrated_file_has(tmp_path):
    import sqlite_utils

    db = sqlite_utils.Database(tmp_path / "fresh.db")
    migrations.apply(db)
    tables = [t for t in db.table_names() if not t.startswith("_")]
    found = {t: tuple((c[1], c[2]) for c in db.execute(f"PRAGMA table_info({t})")) for t in tables}
    assert found == EXPECTED_COLUMNS


def test_the_migration_hashes_rows_written_before_it(tmp_path):
    """A library of the previous schema: its judgments, runs and ratings get hashes, a finished run its digest."""
    with Library(tmp_path / "seeded.db") as lib:  # ids to refer to (the rows below are made by hand)
        prompt, dataset = lib.get_prompt("coherence"), lib.get_dataset("sample")
    import sqlite_utils

    old = tmp_path / "older.db"
    db = sqlite_utils.Database(old)
    migrations.apply(db, stop_before="m009_tamper_evidence")
    db.execute(
        "INSERT INTO prompts (id, name, version, dimension, judge, created_at) VALUES (?, 'p', 1, ?, 'j', ?)",
        [prompt.id, json.dumps(prompt.dimension.to_dict()), now()],
    )
    db.execute(
        "INSERT INTO datasets (id, name, version, item_count, created_at) VALUES (?, 's', 1, 1, ?)",
        [dataset.id, now()],
    )
    db.execute(
        "INSERT INTO items (dataset_id, item_id, position, fields) VALUES (?, 'a', 0, '{}')", [dataset.id]
    )
    db.execute(
        "INSERT INTO runs (id, prompt_id, dataset_id, judge, status, created_at, finished_at) "
        "VALUES ('r1', ?, ?, '{}', 'done', 'then', 'later')",
        [prompt.id, dataset.id],
    )
    db.execute(
        "INSERT INTO judgments (run_id, item_id, score, replies, mode, created_at) "
        "VALUES ('r1', 'a', 2.5, '[\"2\"]', 'sampling', 'then')"
    )
    db.execute(
        "INSERT INTO ratings (dataset_id, item_id, dimension, rater, rating, status, created_at) "
        "VALUES (?, 'a', 'coherence', 'ann', 3, 'rated', 'then')",
        [dataset.id],
    )
    db.conn.commit()
    db.close()
    with Library(old, seed_examples=False) as lib:
        assert [j["score"] for j in lib.judgments("r1")] == [2.5]
        assert len(lib.get_run("r1").digest) == 64
        assert lib._one("SELECT COUNT(*) AS n FROM ratings WHERE row_hash IS NOT NULL")["n"] == 1
    result = verify(old, "--json")
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    # The hand-made prompt and dataset rows do not match their hashes; every result row does.
    assert {p["kind"] for p in report["problems"]} == {"prompt", "dataset"}, report["problems"]
    assert {k: report["checked"][k] for k in ("runs", "run_digests", "judgments", "ratings")} == {
        "runs": 1,
        "run_digests": 1,
        "judgments": 1,
        "ratings": 1,
    }


def test_a_forger_who_rehashes_passes_verify_but_not_the_signature(library_file, tmp_path, monkeypatch):
    """What a local file cannot promise (anyone can recompute an unkeyed hash) and what the key adds."""
    path, params = library_file
    key = tmp_path / "signing.key"
    key.write_text("0123456789abcdef0123456789abcdef\n")
    signed = CliRunner().invoke(
        cli, ["verify", "--db", str(path), "--sign", str(params["run"]), "--key-file", str(key)]
    )
    assert signed.exit_code == 0, signed.output
    signature = tmp_path / "run.sig.json"
    signature.write_text(signed.output[signed.output.index("{") : signed.output.rindex("}") + 1])
    check = ["verify", "--db", str(path), "--check-signature", str(signature)]
    monkeypatch.setenv("GEVAL_SIGNING_KEY", "0123456789abcdef0123456789abcdef")
    assert CliRunner().invoke(cli, check).exit_code == 0
    # The forger: a new score, its row hash and the run's digest recomputed, every trigger put back.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER judgments_no_update")
    conn.execute(
        "UPDATE judgments SET score = 1.25 WHERE run_id = ? AND item_id = ?", [params["run"], params["item"]]
    )
    cursor = conn.execute(
        "SELECT * FROM judgments WHERE run_id = ? AND item_id = ?", [params["run"], params["item"]]
    )
    row = dict(zip([c[0] for c in cursor.description], cursor.fetchone(), strict=True))
    conn.execute(
        "UPDATE judgments SET row_hash = ? WHERE run_id = ? AND item_id = ?",
        [row_hash("judgments", row), params["run"], params["item"]],
    )
    from prompt_library.rehash import stored_digest

    conn.execute(
        "UPDATE runs SET digest = ? WHERE id = ?", [stored_digest(conn, str(params["run"])), params["run"]]
    )
    conn.execute(migrations.PROTECTION_TRIGGERS["judgments_no_update"])
    conn.close()
    assert verify(path).exit_code == 0  # the unkeyed hashes agree with the forgery
    forged = CliRunner().invoke(cli, check)
    assert forged.exit_code == 1 and "differs from what was signed (digest)" in forged.output, forged.output
    monkeypatch.setenv("GEVAL_SIGNING_KEY", "another key of enough length")
    assert "not made with this key" in CliRunner().invoke(cli, check).output
    monkeypatch.delenv("GEVAL_SIGNING_KEY")
    missing = CliRunner().invoke(cli, check)
    assert (
        missing.exit_code == 1 and "GEVAL_SIGNING_KEY" in missing.output and "Traceback" not in missing.output
    )


def test_runs_export_writes_a_signature_verify_checks(library_file, tmp_path, monkeypatch):
    path, params = library_file
    monkeypatch.setenv("GEVAL_SIGNING_KEY", "0123456789abcdef0123456789abcdef")
    out = tmp_path / "results.jsonl"
    done = CliRunner().invoke(
        cli, ["runs", "export", str(params["run"]), "-o", str(out), "--sign", "--db", str(path)]
    )
    assert done.exit_code == 0, done.output
    signed = json.loads((tmp_path / "results.jsonl.sig.json").read_text())
    assert signed["run_id"] == params["run"] and signed["judgments"] == 6 and len(signed["signature"]) == 64
    assert "GEVAL_SIGNING_KEY" not in (tmp_path / "results.jsonl.sig.json").read_text()
    with sqlite3.connect(path) as conn:  # the key is nowhere in the library
        assert not conn.execute("SELECT 1 FROM meta WHERE value LIKE '%0123456789abcdef%'").fetchone()
    check = CliRunner().invoke(
        cli, ["verify", "--db", str(path), "--check-signature", str(tmp_path / "results.jsonl.sig.json")]
    )
    assert check.exit_code == 0 and "signature ok" in check.output, check.output
