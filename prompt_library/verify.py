"""Check a library against itself: every content and row hash recomputed, the schema and triggers in place.

The triggers make frozen rows refuse changes; the hashes tell whether a row was changed anyway (by
someone who dropped a trigger first). Nothing here repairs: re-creating protection over data that may
have been altered would bless the alteration.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import TYPE_CHECKING, Any

from geval_core.prompts import content_hash
from geval_core.types import Dimension, Item

from . import migrations, schema
from .base import loads
from .datasets import version_problem
from .frozen_records import RECORD_COLUMNS, chain_problems
from .hashes import HASHED_TABLES, row_hash, run_digest
from .rehash import FINISHED_SQL
from .runs import cache_entry_ok

if TYPE_CHECKING:
    from .library import Library


class LibraryIntegrityWarning(UserWarning):
    """A library was opened whose protection triggers are missing or altered."""


@functools.cache  # the migrations' SQL: the same for the whole process (checked at every open)
def expected_triggers() -> dict[str, str]:
    """Trigger name -> SQL (whitespace normalised), as the migrations create them."""
    return {name: _normal(sql) for name, sql in migrations.PROTECTION_TRIGGERS.items()}


def _normal(sql: str | None) -> str:
    return " ".join((sql or "").split())


def _problem(kind: str, name: str, problem: str, object_id: str | None = None) -> dict[str, Any]:
    label = f"{kind} {name}" + (f" ({object_id[:12]}…)" if object_id else "")
    text = f"{label} {problem}" if kind == "trigger" else f"{label}: {problem}"
    return {"kind": kind, "name": name, "id": object_id, "problem": problem, "text": text}


def trigger_problems(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every protection trigger that is missing or altered, and every trigger the schema does not know."""
    found = {
        name: _normal(sql)
        for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
    }
    problems = []
    for name, sql in expected_triggers().items():
        if name not in found:
            problems.append(_problem("trigger", name, "missing"))
        elif found[name] != sql:
            problems.append(
                _problem("trigger", name, "altered (its SQL is not the one the migrations wrote)")
            )
    problems += [
        _problem("trigger", name, "is not part of the library's schema")
        for name in sorted(set(found) - set(expected_triggers()))
    ]
    return problems


def prompt_problems(library: Library) -> tuple[int, list[dict[str, Any]]]:
    """(prompts checked, problems): each stored dimension hashed again and compared with its id."""
    rows = library._rows("SELECT id, name, version, dimension, judge FROM prompts ORDER BY name, version")
    problems = []
    for row in rows:
        label = f"{row['name']}@{row['version']}"
        try:
            dimension = Dimension.from_dict(loads(row["dimension"]))
        except (TypeError, ValueError, KeyError) as exc:
            problems.append(_problem("prompt", label, f"stored content cannot be read ({exc})", row["id"]))
            continue
        if content_hash(dimension) != row["id"]:
            problems.append(_problem("prompt", label, "stored hash does not match its content", row["id"]))
        elif row["judge"] != dimension.judge.judge_id:
            problems.append(
                _problem("prompt", label, "stored judge label does not match its content", row["id"])
            )
    return len(rows), problems


def dataset_problems(library: Library) -> tuple[int, int, list[dict[str, Any]]]:
    """(versions checked, items checked, problems): each version's items counted and hashed again."""
    problems, items_seen = [], 0
    versions = library.list_datasets()
    for dataset in versions:
        rows = library._rows(
            "SELECT item_id, fields, human, group_id FROM items WHERE dataset_id = ? ORDER BY position",
            [dataset.id],
        )
        items_seen += len(rows)
        try:
            items = [
                Item(r["item_id"], loads(r["fields"], {}), loads(r["human"], {}), r["group_id"]) for r in rows
            ]
            problem = version_problem(dataset, items)
        except (TypeError, ValueError) as exc:
            problem = f"stored items cannot be read ({exc})"
        if problem:
            problems.append(_problem("dataset", dataset.label, problem, dataset.id))
    orphans = library._rows(
        "SELECT DISTINCT dataset_id FROM items WHERE dataset_id NOT IN (SELECT id FROM datasets)"
    )
    problems += [
        _problem("items of dataset", r["dataset_id"][:12], "belong to no dataset version") for r in orphans
    ]
    return len(versions), items_seen, problems


def cache_problems(library: Library) -> tuple[int, list[dict[str, Any]]]:
    """(entries checked, problems): each judge-cache entry's hash, and the judgment its origin names."""
    with library._lock:
        rows = library.conn.execute(
            "SELECT key, reply, hash, origin FROM judge_cache ORDER BY key"
        ).fetchall()
    problems = []
    for key, reply, digest, origin in rows:
        if not cache_entry_ok(key, reply, digest):
            problems.append(
                _problem(
                    "cache entry", key[:12] + "…", "reply does not match its hash (it would be asked again)"
                )
            )
            continue
        why = library.origin_problem(origin, loads(reply))
        if why:
            problems.append(_problem("cache entry", key[:12] + "…", f"{why} (it is never replayed)"))
    return len(rows), problems


def frozen_record_problems(library: Library) -> tuple[int, list[dict[str, Any]]]:
    """(records checked, problems): panels, cascades, splits and test-side uses, each row hash and the chain."""
    rows = library._rows("SELECT * FROM frozen_records ORDER BY id")
    if rows and not set(RECORD_COLUMNS) <= set(rows[0]):  # a dropped column is reported by the schema check
        return len(rows), [
            _problem("table", "frozen_records", "rows not checked: its columns differ from the schema")
        ]
    return len(rows), [_problem(kind, name, problem) for kind, name, problem in chain_problems(rows)]


def schema_problems(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every table or column that differs from the migrations', and every migration not recorded."""
    problems = [_problem("table", table, what) for table, what in schema.column_problems(conn)]
    done = set(schema.recorded(conn))
    problems += [
        _problem("migration", name, "record missing") for name in schema.step_names() if name not in done
    ]
    return problems


_KEYS = {"judgments": ("run_id", "item_id", "attempt"), "runs": ("id",), "ratings": ("id",)}
_KIND = {"judgments": "judgment", "runs": "run", "ratings": "rating"}


def result_problems(library: Library, broken: set[str]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """(rows checked per table, problems): every row hash of judgments, runs and ratings recomputed, every
    finished run's digest recomputed over its judgments, every retry checked to follow an errored attempt."""
    checked: dict[str, int] = {}
    problems: list[dict[str, Any]] = []
    hashes: dict[str, list[str]] = {}
    for table in HASHED_TABLES:
        if table in broken:  # its columns differ (reported): every hash would, too
            problems.append(_problem("table", table, "rows not checked: its columns differ from the schema"))
            continue
        rows = library._rows(f"SELECT * FROM {table} ORDER BY {', '.join(_KEYS[table])}")
        checked[table] = len(rows)
        for row in rows:
            label = "/".join(str(row[k]) for k in _KEYS[table])
            recomputed = row_hash(table, row)
            if table == "judgments":
                hashes.setdefault(row["run_id"], []).append(recomputed)
            if row["row_hash"] is None:
                problems.append(_problem(_KIND[table], label, "carries no row hash"))
            elif row["row_hash"] != recomputed:
                problems.append(_problem(_KIND[table], label, "stored hash does not match its content"))
        if table == "judgments":
            problems += _attempt_problems(rows)
    if "judgments" not in broken and "runs" not in broken:
        checked["run_digests"], found = _digest_problems(library, hashes)
        problems += found
    return checked, problems


def _attempt_problems(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Attempts of an item must be 0, 1, ... and each one but the last errored (a final judgment is final)."""
    problems: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for row in rows:  # ordered by run, item, attempt
        same = previous is not None and (previous["run_id"], previous["item_id"]) == (
            row["run_id"],
            row["item_id"],
        )
        label = f"{row['run_id']}/{row['item_id']}/{row['attempt']}"
        if row["attempt"] != (previous["attempt"] + 1 if previous is not None and same else 0):
            problems.append(
                _problem("judgment", label, "attempt out of sequence (an earlier attempt is missing)")
            )
        elif previous is not None and same and previous["error"] is None:
            problems.append(
                _problem("judgment", label, "follows a final judgment (only an errored one is retried)")
            )
        previous = row
    return problems


def _digest_problems(library: Library, hashes: dict[str, list[str]]) -> tuple[int, list[dict[str, Any]]]:
    # A run a session has held since (a lease left behind) may have judgments its digest does not cover yet.
    runs = library._rows(
        f"SELECT id, digest FROM runs WHERE {FINISHED_SQL} AND id NOT IN "
        "(SELECT run_id FROM run_leases) ORDER BY id"
    )
    problems = []
    for run in runs:
        if run["digest"] is None:
            problems.append(_problem("run", run["id"], "finished but carries no digest of its judgments"))
        elif run["digest"] != run_digest(hashes.get(run["id"], [])):
            problems.append(
                _problem(
                    "run",
                    run["id"],
                    "digest does not match its judgments (one was added, "
                    "removed or changed after it finished)",
                )
            )
    return len(runs), problems


def verify_library(library: Library) -> dict[str, Any]:
    """The whole check: {"ok", "checked": counts, "problems": [{kind, name, id, problem, text}]}."""
    with library._lock:
        problems = trigger_problems(library.conn) + schema_problems(library.conn)
    broken = {p["name"] for p in problems if p["kind"] == "table"}
    checked = {
        "prompts": 0,
        "dataset_versions": 0,
        "items": 0,
        "cache_entries": 0,
        "triggers": len(expected_triggers()),
        "judgments": 0,
        "runs": 0,
        "ratings": 0,
        "run_digests": 0,
        "frozen_records": 0,
    }
    sections = (
        ("prompts", prompt_problems, ("prompts",)),
        ("datasets", dataset_problems, ("dataset_versions", "items")),
        ("judge_cache", cache_problems, ("cache_entries",)),
        ("frozen_records", frozen_record_problems, ("frozen_records",)),
    )
    for table, check, counts in sections:
        try:
            *numbers, found = check(library)
        except sqlite3.Error as exc:  # a dropped or renamed table: say so, check the rest
            problems.append(_problem("table", table, f"cannot be read ({exc})"))
            continue
        checked.update(zip(counts, numbers, strict=True))
        problems += found
    try:
        counted, found = result_problems(library, broken)
        checked.update(counted)
        problems += found
    except sqlite3.Error as exc:
        problems.append(_problem("table", "results", f"cannot be read ({exc})"))
    return {"ok": not problems, "path": str(library.path), "checked": checked, "problems": problems}


def summary_line(report: dict[str, Any]) -> str:
    """'checked 4 prompts, 1 dataset version (67 items), 2 runs (1 digest), 12 judgments, 0 ratings, ...'."""
    c = report["checked"]
    return (
        f"checked {_count(c['prompts'], 'prompt')}, {_count(c['dataset_versions'], 'dataset version')} "
        f"({_count(c['items'], 'item')}), {_count(c['runs'], 'run')} ({_count(c['run_digests'], 'digest')}), "
        f"{_count(c['judgments'], 'judgment')}, {_count(c['ratings'], 'rating')}, "
        f"{_count(c['cache_entries'], 'cache entry', 'cache entries')}, "
        f"{_count(c['frozen_records'], 'frozen record')} (panels, cascades, splits, test-side uses, drift watches and checks), "
        f"{_count(c['triggers'], 'protection trigger')}, the schema and its migration records"
    )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
