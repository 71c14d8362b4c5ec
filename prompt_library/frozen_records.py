"""Frozen records: panels, cascades, splits, test-side uses and drift watches and checks, in one append-only, content-hashed table.

A record is (kind, key) with versions seq 1, 2, ...: each row holds one version's body (canonical JSON), when it
was made, the row hash of the row stored before it (`prev`, in insertion order across every kind) and its own
row hash. SQLite triggers refuse UPDATE, DELETE and an INSERT over a stored row or out of sequence (migration
m011); `geval verify` recomputes every row hash and follows the chain, so a row changed by someone who dropped
the triggers first is named, and so is a row removed from before the newest one.

The hash is defined here for good (like rehash.py's): migration m011 writes it for the records it moves.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from geval_core.errors import InputError, IntegrityError
from geval_core.prompts import canonical_json

from .base import LibraryBase, loads, now
from .hashes import row_hash

TABLE = "frozen_records"
KINDS = ("panel", "cascade", "split", "test-use", "drift", "drift-check")
HASHED = ("kind", "key", "seq", "body", "created_at", "prev")
RECORD_COLUMNS = ("id", *HASHED, "row_hash")
# Settings prefixes that name records (the names of the panels for "panel:"): kept for readers of names.
NAME_PREFIXES = {"panel:": "panel", "cascade:": "cascade"}


def record_hash(row: dict[str, Any]) -> str:
    """The row hash of one stored record row (its id and own hash left out)."""
    return row_hash(TABLE, {c: row[c] for c in HASHED})


def append(conn: sqlite3.Connection, kind: str, key: str, body: Any, created_at: str) -> dict[str, Any]:
    """Store the next version of record (kind, key) on `conn` (the caller holds the write lock); the row."""
    (seq,) = conn.execute(
        f"SELECT COALESCE(MAX(seq), 0) + 1 FROM {TABLE} WHERE kind = ? AND key = ?", [kind, key]
    ).fetchone()
    last = conn.execute(f"SELECT row_hash FROM {TABLE} ORDER BY id DESC LIMIT 1").fetchone()
    row = {
        "kind": kind,
        "key": key,
        "seq": seq,
        "body": canonical_json(body),
        "created_at": created_at,
        "prev": last[0] if last else None,
    }
    row["row_hash"] = record_hash(row)
    conn.execute(
        f"INSERT INTO {TABLE} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values())
    )
    return row


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InputError(f"a frozen record is one of {', '.join(KINDS)}, not {kind!r}", field="kind")


def _public(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row as callers read it, its body decoded; IntegrityError when it does not match its hash."""
    if record_hash(row) != row["row_hash"]:
        raise IntegrityError(
            f"frozen {row['kind']} {row['key']!r} version {row['seq']} was changed outside the "
            "workbench (its row hash does not match its content); nothing was read. `geval "
            "verify` names what differs"
        )
    return {
        "kind": row["kind"],
        "key": row["key"],
        "seq": row["seq"],
        "body": loads(row["body"]),
        "created_at": row["created_at"],
        "row_hash": row["row_hash"],
    }


class FrozenRecordsMixin(LibraryBase):
    """Panels, cascades, splits and test-side uses: one freeze, one read, for every kind."""

    def freeze_record(self, kind: str, key: str, body: Any, once: bool = True) -> tuple[dict[str, Any], bool]:
        """(the record, created): `body` as the next version of (kind, key); with `once`, an identical body
        already stored is returned instead (test-side uses pass once=False: every use is a row)."""
        _check_kind(kind)
        if not str(key).strip():
            raise InputError(f"a frozen {kind} needs a non-empty key", field="key")
        text = canonical_json(body)
        with self._write() as db:
            if once:
                cursor = db.execute(
                    f"SELECT * FROM {TABLE} WHERE kind = ? AND key = ? AND body = ? ORDER BY seq LIMIT 1",
                    [kind, key, text],
                )
                found = cursor.fetchone()
                if found is not None:
                    names = [c[0] for c in cursor.description]
                    return _public(dict(zip(names, found, strict=True))), False
            row = append(db, kind, key, body, now())
        return _public(row), True

    def records(self, kind: str, key: str) -> list[dict[str, Any]]:
        """Every version of record (kind, key), oldest first: {kind, key, seq, body, created_at, row_hash}."""
        _check_kind(kind)
        rows = self._rows(f"SELECT * FROM {TABLE} WHERE kind = ? AND key = ? ORDER BY seq", [kind, key])
        return [_public(row) for row in rows]

    def record_keys(self, kind: str) -> list[str]:
        """The keys of the stored records of `kind` (the names of the panels), sorted."""
        _check_kind(kind)
        return [
            r["key"]
            for r in self._rows(f"SELECT DISTINCT key FROM {TABLE} WHERE kind = ? ORDER BY key", [kind])
        ]

    def setting_keys(self, prefix: str) -> list[str]:
        """Settings keys starting with `prefix`; "panel:" and "cascade:" name the frozen records of that kind."""
        kind = NAME_PREFIXES.get(prefix)
        if kind is None:
            return super().setting_keys(prefix)
        return [prefix + key for key in self.record_keys(kind)]


def _panel(version: dict[str, Any]) -> dict[str, Any]:
    return {"id": version["id"], "members": list(version["members"]), "rule": version["rule"]}


def _cascade(version: dict[str, Any]) -> dict[str, Any]:
    return {k: version[k] for k in ("id", "cheap", "strong", "signal", "threshold")}


def _split(split: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in split.items() if k != "created_at"}


def _use(use: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in use.items() if k != "at"}


# Settings key prefix -> (kind, the body a stored list entry becomes, the entry's time field).
_OLD_SETTINGS = {
    "panel:": ("panel", _panel, "created_at"),
    "cascade:": ("cascade", _cascade, "created_at"),
    "split:": ("split", _split, "created_at"),
    "split-test-uses:": ("test-use", _use, "at"),
}


def move_settings(conn: sqlite3.Connection) -> int:
    """Migration m011's move: the settings rows that held panels, cascades, splits and test-side uses become
    frozen records (every version, in order, with its time), and leave the settings table; a value this
    cannot read stays where it is. How many settings rows moved."""
    moved = 0
    for key, value in conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall():
        prefix = next((p for p in _OLD_SETTINGS if key.startswith(p)), None)
        if prefix is None or not key[len(prefix) :]:
            continue
        kind, body_of, time_field = _OLD_SETTINGS[prefix]
        try:
            entries = loads(value)
            bodies = [(body_of(entry), entry.get(time_field) or now()) for entry in entries]
        except (AttributeError, KeyError, TypeError, ValueError):
            continue  # not the shape this version wrote: kept as a setting, never half moved
        for body, created_at in bodies:
            append(conn, kind, key[len(prefix) :], body, str(created_at))
        conn.execute("DELETE FROM meta WHERE key = ?", [key])
        moved += 1
    return moved


def chain_problems(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(kind, name, problem) for every stored record row, in insertion order, that fails its row hash, does not
    follow the row before it (a row removed or changed), or skips a version of its record."""
    problems: list[tuple[str, str, str]] = []
    last_seq: dict[tuple[str, str], int] = {}
    previous = None
    for row in rows:
        kind, name = f"frozen {row['kind']}", f"{str(row['key'])[:40]}@{row['seq']}"
        if record_hash(row) != row["row_hash"]:
            problems.append(
                (kind, name, "stored hash does not match its content (changed after it was frozen)")
            )
        if row["prev"] != previous:
            problems.append(
                (
                    kind,
                    name,
                    "does not follow the record stored before it: one was removed or changed "
                    "(the chain of hashes breaks here)",
                )
            )
        expected = last_seq.get((row["kind"], row["key"]), 0) + 1
        if row["seq"] != expected:
            problems.append((kind, name, f"version {expected} of it is missing (removed)"))
        last_seq[(row["kind"], row["key"])] = row["seq"]
        previous = row["row_hash"]
    return problems
