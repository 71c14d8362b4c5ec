"""Check a library against itself: every content hash recomputed, every protection trigger in place.

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

from . import migrations
from .base import loads
from .datasets import version_problem
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
    found = {name: _normal(sql) for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")}
    problems = []
    for name, sql in expected_triggers().items():
        if name not in found:
            problems.append(_problem("trigger", name, "missing"))
        elif found[name] != sql:
            problems.append(_problem("trigger", name, "altered (its SQL is not the one the migrations wrote)"))
    problems += [_problem("trigger", name, "is not part of the library's schema")
                 for name in sorted(set(found) - set(expected_triggers()))]
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
            problems.append(_problem("prompt", label, "stored judge label does not match its content", row["id"]))
    return len(rows), problems


def dataset_problems(library: Library) -> tuple[int, int, list[dict[str, Any]]]:
    """(versions checked, items checked, problems): each version's items counted and hashed again."""
    problems, items_seen = [], 0
    versions = library.list_datasets()
    for dataset in versions:
        rows = library._rows("SELECT item_id, fields, human, group_id FROM items WHERE dataset_id = ? "
                             "ORDER BY position", [dataset["id"]])
        items_seen += len(rows)
        try:
            items = [Item(r["item_id"], loads(r["fields"], {}), loads(r["human"], {}), r["group_id"]) for r in rows]
            problem = version_problem(dataset, items)
        except (TypeError, ValueError) as exc:
            problem = f"stored items cannot be read ({exc})"
        if problem:
            problems.append(_problem("dataset", dataset["label"], problem, dataset["id"]))
    orphans = library._rows("SELECT DISTINCT dataset_id FROM items WHERE dataset_id NOT IN (SELECT id FROM datasets)")
    problems += [_problem("items of dataset", r["dataset_id"][:12], "belong to no dataset version") for r in orphans]
    return len(versions), items_seen, problems


def cache_problems(library: Library) -> tuple[int, list[dict[str, Any]]]:
    """(entries checked, problems): each judge-cache entry's hash over its key and reply."""
    with library._lock:
        rows = library.conn.execute("SELECT key, reply, hash FROM judge_cache ORDER BY key").fetchall()
    problems = [_problem("cache entry", key[:12] + "…", "reply does not match its hash (it would be asked again)")
                for key, reply, digest in rows if not cache_entry_ok(key, reply, digest)]
    return len(rows), problems


def verify_library(library: Library) -> dict[str, Any]:
    """The whole check: {"ok", "checked": counts, "problems": [{kind, name, id, problem, text}]}."""
    with library._lock:
        problems = trigger_problems(library.conn)
    checked = {"prompts": 0, "dataset_versions": 0, "items": 0, "cache_entries": 0,
               "triggers": len(expected_triggers())}
    sections = (("prompts", prompt_problems, ("prompts",)),
                ("datasets", dataset_problems, ("dataset_versions", "items")),
                ("judge_cache", cache_problems, ("cache_entries",)))
    for table, check, counts in sections:
        try:
            *numbers, found = check(library)
        except sqlite3.Error as exc:  # a dropped or renamed table: say so, check the rest
            problems.append(_problem("table", table, f"cannot be read ({exc})"))
            continue
        checked.update(zip(counts, numbers, strict=True))
        problems += found
    return {"ok": not problems, "path": str(library.path), "checked": checked, "problems": problems}


def summary_line(report: dict[str, Any]) -> str:
    """'checked 4 prompts, 1 dataset version (67 items), 12 cache entries, 16 protection triggers'."""
    c = report["checked"]
    return (f"checked {_count(c['prompts'], 'prompt')}, {_count(c['dataset_versions'], 'dataset version')} "
            f"({_count(c['items'], 'item')}), {_count(c['cache_entries'], 'cache entry', 'cache entries')}, "
            f"{_count(c['triggers'], 'protection trigger')}")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
