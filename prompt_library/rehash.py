"""Migration m009's work: judgments rebuilt with an attempt number, row hashes and run digests backfilled.

Kept apart from migrations.py for its length; like a migration it must never change, since the hashes
it writes are the ones `hashes.py` defines for good.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .hashes import row_hash, run_digest

FINISHED_SQL = "status != 'running' AND finished_at IS NOT NULL"


def rebuild_judgments(conn: sqlite3.Connection, index_sql: str) -> None:
    """judgments with `attempt` in its key and a `row_hash`: SQLite cannot change a primary key in place."""
    columns = [(name, kind) for _, name, kind, *_ in conn.execute("PRAGMA table_info(judgments)")]
    defs = ", ".join(f"{name} {kind}".strip() for name, kind in columns)
    conn.execute(
        f"CREATE TABLE judgments_new ({defs}, attempt INTEGER NOT NULL DEFAULT 0, row_hash TEXT, "
        "PRIMARY KEY (run_id, item_id, attempt), FOREIGN KEY (run_id) REFERENCES runs(id))"
    )
    names = [name for name, _ in columns] + ["attempt", "row_hash"]
    insert = f"INSERT INTO judgments_new ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    cursor = conn.execute("SELECT * FROM judgments")
    keys = [c[0] for c in cursor.description]
    for values in cursor.fetchall():
        row = {**dict(zip(keys, values, strict=True)), "attempt": 0}
        conn.execute(insert, [*values, 0, row_hash("judgments", row)])
    # The old table's triggers and index go with it; the migration creates the new ones.
    conn.execute("DROP TABLE judgments")
    conn.execute("ALTER TABLE judgments_new RENAME TO judgments")
    conn.execute(index_sql)


def backfill(conn: sqlite3.Connection, table: str, key: str) -> None:
    """row_hash of every stored row of `table` (runs also get the digest of a finished run)."""
    rows = _rows(conn, f"SELECT * FROM {table}")
    for row in rows:
        conn.execute(f"UPDATE {table} SET row_hash = ? WHERE {key} = ?", [row_hash(table, row), row[key]])
    if table == "runs":
        for (run_id,) in conn.execute(f"SELECT id FROM runs WHERE {FINISHED_SQL}").fetchall():
            conn.execute("UPDATE runs SET digest = ? WHERE id = ?", [stored_digest(conn, run_id), run_id])


def stored_digest(conn: sqlite3.Connection, run_id: str) -> str:
    """The digest of a run over the row hashes its judgments carry."""
    return run_digest(h for (h,) in conn.execute("SELECT row_hash FROM judgments WHERE run_id = ?", [run_id]))


def _rows(conn: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    cursor = conn.execute(sql)
    keys = [c[0] for c in cursor.description]
    return [dict(zip(keys, values, strict=True)) for values in cursor.fetchall()]
