"""Migration m013 (issue 42): cached input tokens per judgment. Rows written before it keep their hashes (a NULL
column is left out of a row hash), rows written after carry the count, and `geval verify` passes over both."""

from __future__ import annotations

import json

import sqlite_utils
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.run.totals import current_tally
from prompt_library import Library, migrations
from prompt_library.hashes import row_hash, run_digest


def test_old_rows_verify_and_new_rows_carry_cached_tokens(tmp_path):
    with Library(tmp_path / "seeded.db") as lib:  # ids to refer to
        prompt, dataset = lib.get_prompt("coherence"), lib.get_dataset("sample")
        first = lib.dataset_items(dataset.id)[0].id
    old = tmp_path / "older.db"
    db = sqlite_utils.Database(old)
    migrations.apply(db, stop_before="m013_cached_input_tokens")
    for table in ("prompts", "datasets", "items"):  # the seeded library's own rows, hashes and all
        db.attach(table + "_src", str(tmp_path / "seeded.db"))
        db.execute(f"INSERT INTO {table} SELECT * FROM {table}_src.{table}")
        db.conn.commit()
        db.execute(f"DETACH DATABASE {table}_src")
    run = {
        "id": "r1",
        "prompt_id": prompt.id,
        "dataset_id": dataset.id,
        "judge": "{}",
        "item_ids": None,
        "created_at": "then",
    }
    db.execute(
        "INSERT INTO runs (id, prompt_id, dataset_id, judge, status, created_at, finished_at, row_hash) "
        "VALUES (?, ?, ?, '{}', 'done', 'then', 'later', ?)",
        [run["id"], run["prompt_id"], run["dataset_id"], row_hash("runs", run)],
    )
    judgment = {
        "run_id": "r1",
        "item_id": first,
        "score": 2.5,
        "replies": '["2"]',
        "mode": "sampling",
        "input_tokens": 2000,
        "output_tokens": 1,
        "created_at": "then",
        "attempt": 0,
    }
    hashed = row_hash("judgments", judgment)
    db.execute(
        f"INSERT INTO judgments ({', '.join(judgment)}, row_hash) VALUES ({', '.join('?' * len(judgment))}, ?)",
        [*judgment.values(), hashed],
    )
    db.execute("UPDATE runs SET digest = ? WHERE id = 'r1'", [run_digest([hashed])])
    db.conn.commit()
    db.close()

    with Library(old, seed_examples=False) as lib:  # m013 runs on open
        [before] = lib.judgments("r1")
        assert before["cached_input_tokens"] is None and before["input_tokens"] == 2000
        assert current_tally(lib, "r1").cached_input_tokens == 0
        new = lib.create_run(prompt.id, dataset.id, prompt.dimension.judge, item_ids=[first])
        lib.save_judgment(
            new,
            Judgment(
                first,
                score=3.0,
                mode="logprobs",
                input_tokens=2000,
                output_tokens=1,
                cached_input_tokens=1920,
            ),
        )
        lib.finish_run(new, "done")
        assert lib.judgments(new)[0]["cached_input_tokens"] == 1920
        assert current_tally(lib, new).cached_input_tokens == 1920  # the fold over stored rows reads them
    result = CliRunner().invoke(cli, ["verify", "--db", str(old), "--json"])
    report = json.loads(result.output[: result.output.rindex("}") + 1])
    assert report["problems"] == [], report["problems"]
    assert report["checked"]["judgments"] == 2 and report["checked"]["run_digests"] == 2
