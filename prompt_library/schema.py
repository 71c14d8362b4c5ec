"""What a library's schema must be: its migration records and the columns of its tables.

Checked when a library is opened (a newer library is refused, a damaged one named, before anything reads
or writes it) and by `geval verify` (every difference, by table and column).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from geval_core.errors import InputError, IntegrityError

from . import migrations
from .hashes import affinity

# Tables and columns (with their declared types) as the migrations make them; tests/library/
# test_tamper_evidence.py checks these against a freshly migrated file.
EXPECTED_COLUMNS = {
    table: tuple(tuple(c.split(":")) for c in spec.split())
    for table, spec in {
        "archived": "kind:TEXT id:TEXT archived_at:TEXT",
        "datasets": "id:TEXT name:TEXT version:INTEGER source:TEXT mapping:TEXT item_count:INTEGER fields:TEXT "
        "human:TEXT created_at:TEXT",
        "drafts": "id:INTEGER name:TEXT dimension:TEXT steps_model:TEXT created_at:TEXT updated_at:TEXT",
        "frozen_records": "id:INTEGER kind:TEXT key:TEXT seq:INTEGER body:TEXT created_at:TEXT prev:TEXT "
        "row_hash:TEXT",
        "items": "dataset_id:TEXT item_id:TEXT position:INTEGER fields:TEXT human:TEXT group_id:TEXT",
        "judge_cache": "key:TEXT reply:TEXT created_at:TEXT hash:TEXT origin:TEXT",
        "judgments": "run_id:TEXT item_id:TEXT score:REAL raw_score:REAL top_rating:REAL distribution:TEXT "
        "valid_mass:REAL replies:TEXT parsed:INTEGER unparsed:INTEGER ambiguous:INTEGER mode:TEXT "
        "fallback:INTEGER model_version:TEXT input_tokens:INTEGER output_tokens:INTEGER latency_s:REAL "
        "cached:INTEGER error:TEXT extra:TEXT created_at:TEXT first_rating:FLOAT parsed_share:FLOAT "
        "differs:INTEGER note:TEXT server:TEXT source:TEXT attempt:INTEGER row_hash:TEXT "
        "cached_input_tokens:INTEGER",
        "meta": "key:TEXT value:TEXT",
        "prompts": "id:TEXT name:TEXT version:INTEGER dimension:TEXT steps_model:TEXT judge:TEXT created_at:TEXT",
        "ratings": "id:INTEGER dataset_id:TEXT item_id:TEXT dimension:TEXT prompt_id:TEXT rater:TEXT rating:REAL "
        "status:TEXT undoes:INTEGER created_at:TEXT row_hash:TEXT",
        "run_jobs": "run_id:TEXT options:TEXT pid:INTEGER host:TEXT started_at:TEXT stop_requested_at:TEXT "
        "ended_at:TEXT summary:TEXT error:TEXT",
        "run_leases": "run_id:TEXT owner:TEXT pid:INTEGER host:TEXT started_at:TEXT heartbeat:REAL",
        "runs": "id:TEXT prompt_id:TEXT dataset_id:TEXT judge:TEXT item_ids:TEXT status:TEXT items_total:INTEGER "
        "created_at:TEXT finished_at:TEXT model_version:TEXT input_tokens:INTEGER output_tokens:INTEGER "
        "cost_usd:REAL extra:TEXT row_hash:TEXT digest:TEXT",
    }.items()
}


def step_names() -> list[str]:
    """Every migration this version knows, in order."""
    return [step.__name__ for step in migrations._STEPS]


def schema_version() -> int:
    """The schema version this tool reads and writes: how many migrations it knows."""
    return len(migrations._STEPS)


def recorded(conn: sqlite3.Connection) -> list[str]:
    """The names of the migrations the file records as applied (none for a new file)."""
    table = migrations.MIGRATIONS_TABLE
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]).fetchone():
        return []
    return [
        name
        for (name,) in conn.execute(
            f"SELECT name FROM {table} WHERE migration_set = ? ORDER BY id", [migrations.MIGRATION_SET]
        )
    ]


def check_records(conn: sqlite3.Connection, path: Any, gaps: bool = True) -> None:
    """Refuse a library written by a newer version, or (with `gaps`) whose record of its migrations has a gap."""
    done, known = recorded(conn), step_names()
    unknown = [name for name in done if name not in known]
    stamped = conn.execute("PRAGMA user_version").fetchone()[0]
    if unknown or stamped > len(known):
        version = max(stamped, len(known) + len(unknown))
        raise InputError(
            f"this library was written by a newer version of the workbench (schema version "
            f"{version}{', migrations ' + ', '.join(unknown) if unknown else ''}); this version "
            f"reads schema version {len(known)} and opens nothing newer: upgrade geval-workbench",
            file=str(path),
        )
    missing = record_gaps(done) if gaps else []
    if missing:
        raise IntegrityError(
            f"library {path}: its record of applied migrations is damaged ({', '.join(missing)} "
            "missing though later ones are recorded); nothing was changed. `geval verify` "
            "names what else differs"
        )


def record_gaps(done: list[str]) -> list[str]:
    """Known migrations not recorded while a later one is."""
    known = step_names()
    last = max((known.index(name) for name in done if name in known), default=-1)
    return [name for name in known[: max(last, 0)] if name not in done]


def column_problems(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(table, what differs) for every missing table, missing or extra column, or column of another type."""
    problems = []
    for table, expected in EXPECTED_COLUMNS.items():
        found = {name: kind for _, name, kind, *_ in conn.execute(f"PRAGMA table_info({table})")}
        if not found:
            problems.append((table, "table missing"))
            continue
        for name, kind in expected:
            if name not in found:
                problems.append((table, f"column {name} missing"))
            elif affinity(found[name]) != affinity(kind):
                problems.append((table, f"column {name} is {found[name] or 'untyped'}, not {kind}"))
        names = {name for name, _ in expected}
        problems += [
            (table, f"column {name} is not part of the schema") for name in found if name not in names
        ]
    return problems


def check_columns(conn: sqlite3.Connection, path: Any) -> None:
    """Refuse a library whose tables lack a column the workbench reads (a dropped column, a dropped table)."""
    missing = [f"{table}: {what}" for table, what in column_problems(conn) if what.endswith("missing")]
    if missing:
        raise IntegrityError(
            f"library {path}: its schema was changed outside the workbench ({'; '.join(missing)}); "
            "nothing was read or changed. `geval verify` names every difference"
        )
