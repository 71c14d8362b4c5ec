"""Statistics for SQLite's query planner, so a judgment is looked up by its key, never by its run alone.

Without statistics SQLite ranks the two indexes of `judgments` alike for `run_id = ? AND item_id = ? AND
error IS NULL` (the protection trigger's check before every INSERT) and took (run_id, error): each insert
walked every error-free judgment of its run, so a run's writes cost O(N) each, 10 ms at 100,000 items
(a 100k run slowed from 850 to 180 items/s). SQLite documents writing sqlite_stat1 as the way to tell
the planner the shape of the data (https://sqlite.org/optoverview.html#manual_control_of_query_plans_using_sqlite_stat_tables);
these rows say what holds in every library: one row per run and item, many per run and error. Statistics
an ANALYZE wrote from real data are kept. They are planner hints only: no row, trigger or hash changes.
"""

from __future__ import annotations

import sqlite3

# idx -> stat: rows in the table, then rows per distinct value of the first 1, 2, ... columns.
_SHAPES = {"pk": "1000000 1000 1 1", "judgments_by_run_error": "1000000 1000 500"}


def stats_missing(conn: sqlite3.Connection) -> bool:
    """Whether the planner has no statistics for the judgments table's indexes."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'").fetchone() is None:
        return bool(_indexes(conn))
    return bool(_indexes(conn)) and conn.execute("SELECT 1 FROM sqlite_stat1 WHERE tbl = 'judgments'").fetchone() is None


def write_stats(conn: sqlite3.Connection) -> None:
    """Record the judgments table's shape for the planner (inside the caller's write transaction)."""
    conn.execute("ANALYZE sqlite_master")  # creates sqlite_stat1 without reading any table of the library
    conn.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('judgments', ?, ?)",
                     [(name, _SHAPES[kind]) for name, kind in _indexes(conn).items()])
    conn.execute("ANALYZE sqlite_master")  # the planner reads the statistics again


def _indexes(conn: sqlite3.Connection) -> dict[str, str]:
    """Index name -> its shape key, for the judgments indexes this module knows (the primary key's by origin)."""
    found = {}
    for _, name, _, origin, _ in conn.execute("PRAGMA index_list(judgments)"):
        if origin == "pk":
            found[name] = "pk"
        elif name in _SHAPES:
            found[name] = name
    return found
