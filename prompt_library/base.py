"""The connection: WAL, a busy timeout, one write lock per transaction, JSON helpers."""

from __future__ import annotations

import functools
import gc
import json
import json.scanner
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geval_core.errors import InputError, LibraryLockedError

from .hashes import affinities

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_S = float(os.environ.get("GEVAL_BUSY_TIMEOUT") or 30.0)  # seconds a write waits for a lock
DEFAULT_FILE = "geval.db"
CACHE_KIB = 64 * 1024  # SQLite's page cache per library connection, filled on demand
WRITER_CACHE_KIB = 2000  # SQLite's own default: enough for a run's writes, whose pages are mostly new


class _Connection(sqlite3.Connection):
    """sqlite3's connection, which a weak reference can name (the C type cannot be)."""


# Every library connection this process has open. A connection outlives its Library until the cyclic
# collector runs (in Python 3.11 its statement cache refers back to it), so an exit that skips the
# interpreter's teardown must close them itself.
_OPEN: weakref.WeakSet[_Connection] = weakref.WeakSet()


def close_open_libraries() -> None:
    """Close every library connection this process still has open: before an exit that skips the
    interpreter's teardown, so no write is left only in a -wal file beside the library (a copy of the
    .db alone would miss it); the last connection to close moves the WAL into the file."""
    for conn in list(_OPEN):
        conn.close()


def default_path() -> Path:
    """$GEVAL_DB, else ./geval.db."""
    return Path(os.environ.get("GEVAL_DB") or DEFAULT_FILE)


def now() -> str:
    """The current time, ISO 8601 in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # built once, not per call


def dumps(value: Any) -> str:
    """Compact JSON that keeps non-ASCII text readable in the file."""
    return _compact(value)


# typeshed types the scanner's context as a scanner (a TODO of its own); json itself passes a decoder.
_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def insert_row(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> int:
    """INSERT one row (keys: column names stated in code; values: SQLite scalars, JSON already encoded)."""
    sql = f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
    rowid = conn.execute(sql, list(row.values())).lastrowid
    if rowid is None:  # sqlite3 sets it after every INSERT; None would mean the statement was not one
        raise sqlite3.DatabaseError(f"INSERT INTO {table} reported no row id")
    return rowid


def update_row(conn: sqlite3.Connection, table: str, key: tuple[str, Any], row: dict[str, Any]) -> None:
    """UPDATE the columns of `row` (as insert_row's) in the row whose column key[0] is key[1]."""
    sql = f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in row)} WHERE {key[0]} = ?"
    conn.execute(sql, [*row.values(), key[1]])


def loads(text: str | None, default: Any = None) -> Any:
    """json.loads that passes NULL through as `default`."""
    return default if text is None else json.loads(text)


@contextmanager
def collections_paused() -> Iterator[None]:
    """No cyclic garbage collection while a bulk read builds its rows (they hold no cycles to collect).

    CPython collects every 700 new containers; 20,000 judgments make hundreds of collections, and the
    oldest generation's walks over the whole heap (in the app: Streamlit, pandas, plotly) took a quarter
    of a 20,000-item read. Collection resumes after, unless something else had paused it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def loads_column(texts: list[str | None], default: Any = None) -> list[Any]:
    """loads() of every text of a column, through json's C scanner: 20,000 replies 28 ms -> 5 ms.

    json.loads wraps the same scanner in Python checks per call. A text the scanner does not read to its
    end (whitespace around it, or not JSON) goes through loads(), which reads it or raises its error.
    """
    out: list[Any] = []
    for text in texts:
        if text is None:
            out.append(default)
            continue
        try:
            value, end = _scan(text, 0)
        except (StopIteration, ValueError):
            end = -1
        out.append(value if end == len(text) else loads(text))
    return out


class LibraryBase:
    """Opens the file and serialises access to its one connection."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection shared by the threads of one process (Streamlit reruns hop threads), guarded by
        # an RLock; other processes are kept apart by SQLite's own locks and the busy timeout.
        self.conn = sqlite3.connect(
            str(self.path), timeout=BUSY_TIMEOUT_S, check_same_thread=False, factory=_Connection
        )
        _OPEN.add(self.conn)
        self._lock = threading.RLock()
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            if str(self.path) != ":memory:":
                self._enable_wal()
                # In WAL mode NORMAL stays crash-safe for the database; it saves an fsync per judgment.
                self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            # As sqlite-utils set it when it opened the library: a REPLACE over a row fires its DELETE triggers.
            self.conn.execute("PRAGMA recursive_triggers = ON")
            # A run's judgments are read through an index, a page at a time across the file: SQLite's default
            # 2 MiB cache rereads pages of a large run; bench/bench_score_page.py measures the difference.
            self.conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise open_error(exc, self.path) from None

    @functools.cached_property
    def db(self) -> Database:
        """sqlite-utils on the library's connection, for migrations (and tests); reads and writes are sqlite3.

        Importing sqlite-utils takes 60-80 ms, 40 % of `geval runs list`. No plugins: looking
        them up scans every installed package's metadata, and the library's SQL must not depend on what
        else is installed.
        """
        from ._sqlite import Database

        return Database(self.conn, execute_plugins=False)

    def _enable_wal(self) -> None:
        """Switch a file to WAL, waiting for other openers: the switch ignores SQLite's busy timeout.

        Changing the journal mode needs the file to itself, and SQLite answers "database is locked" at
        once while another process reads it (two `geval score` opening a new library together).
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        delay = 0.01
        while self.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                self.conn.execute("PRAGMA journal_mode = wal")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    def bound_page_cache(self, kib: int = WRITER_CACHE_KIB) -> None:
        """Cap this connection's page cache: a process that writes a long run reads little back, and a 64 MiB
        cache filled over 100,000 judgments was most of its memory (RSS then grows with the run, not flat)."""
        with self._lock:
            self.conn.execute(f"PRAGMA cache_size = -{int(kib)}")

    def close(self) -> None:
        """Close the connection (the last one to a file moves its WAL into it and deletes the WAL)."""
        with self._lock:
            self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes committed together (one write lock, one commit); nested writes join it."""
        with self._write():
            yield

    @contextmanager
    def _write(self, savepoint: bool = True) -> Iterator[sqlite3.Connection]:
        """One atomic write on the library's connection; the outermost one takes SQLite's write lock up front.

        A plain BEGIN reads first and upgrades later, and an upgrade that finds another process's newer
        commit fails at once with "database is locked" whatever the busy timeout. BEGIN IMMEDIATE waits
        for the lock instead; a nested write inside it is a savepoint, so it still rolls back alone.
        A write of one statement passes savepoint=False: a statement that fails undoes itself.
        """
        with self._lock:
            if self.conn.in_transaction:
                if not savepoint:
                    yield self.conn
                    return
                with self._savepoint():
                    yield self.conn
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")  # in WAL mode the pages are written here: a full disk fails it
            except BaseException as exc:
                if self.conn.in_transaction:  # an error such as RAISE(ROLLBACK) may have ended it already
                    self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
                    raise InputError(
                        f"the disk holding the library is full ({exc}); nothing of this write was "
                        "stored. Free some space, then run the same command again (a run resumes "
                        "where it stopped)",
                        file=str(self.path),
                    ) from None
                raise

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        """A nested write that rolls back alone. One name serves every depth: savepoints nest, and
        ROLLBACK TO and RELEASE act on the innermost savepoint of that name."""
        self.conn.execute("SAVEPOINT nested_write")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK TO SAVEPOINT nested_write")
                self.conn.execute("RELEASE SAVEPOINT nested_write")
            raise
        self.conn.execute("RELEASE SAVEPOINT nested_write")

    def _affinities(self, table: str) -> dict[str, str]:
        """Column -> type affinity of a table, read once per connection (the schema changes only by migration)."""
        cache = self.__dict__.setdefault("_affinity_cache", {})
        if table not in cache:
            with self._lock:
                cache[table] = affinities(self.conn, table)
        return cache[table]

    def _rows(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        """Every row of a query, as plain dicts."""
        with self._lock:
            cursor = self.conn.execute(sql, params)
            keys = [column[0] for column in cursor.description]
            return [dict(zip(keys, row, strict=True)) for row in cursor]

    def _one(self, sql: str, params: Any = ()) -> dict[str, Any] | None:
        """The first row of a query, or None."""
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A JSON value stored under `key` in the library (e.g. a price table)."""
        row = self._one("SELECT value FROM meta WHERE key = ?", [key])
        return default if row is None else loads(row["value"])

    def setting_keys(self, prefix: str) -> list[str]:
        """The keys of stored settings that start with `prefix` (panels, cascades, splits), sorted."""
        rows = self._rows(
            "SELECT key FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key", [len(prefix), prefix]
        )
        return [row["key"] for row in rows]

    def setting_names(self, prefix: str) -> list[str]:
        """What follows `prefix` in the keys of stored settings: the names of the panels for "panel:"."""
        return [key[len(prefix) :] for key in self.setting_keys(prefix)]

    def set_setting(self, key: str, value: Any) -> None:
        """Store a JSON value under `key`."""
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, dumps(value)])


# SQLite's words for a file it could not write (as opposed to one that is not a database): full, read-only, I/O.
_UNWRITABLE = ("full", "readonly", "read-only", "disk i/o error", "unable to open")


def open_error(exc: sqlite3.DatabaseError, path: Path) -> Exception:
    """What a failed open means: another process's lock, a file that cannot be written, or not a library."""
    text = str(exc)
    if "locked" in text:
        return LibraryLockedError(locked_message(path))
    if "full" in text:
        return InputError(
            f"could not write the library: the disk holding it is full ({text}); free some "
            "space, then run the same command again",
            file=str(path),
        )
    if any(word in text.lower() for word in _UNWRITABLE):
        return InputError(
            f"could not write the library ({text}): check that its folder is writable and the "
            "disk is mounted, then run the same command again",
            file=str(path),
        )
    return InputError(
        f"not a workbench library ({text}); name a library file, or a new file to create one", file=str(path)
    )


def locked_message(path: Path | str) -> str:
    """Why the library cannot be written: another process holds SQLite's lock; who may be scoring it."""
    holders = ""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0) as conn:
            rows = conn.execute("SELECT run_id, pid, host, started_at FROM run_leases").fetchall()
        holders = "; ".join(
            f"run {r[0]} is being scored by process {r[1]} on {r[2]} since {r[3]}" for r in rows
        )
    except sqlite3.Error:
        pass  # an older library without leases, or the lock reaches readers too
    return (
        f"the library {path} has been locked by another process for more than {BUSY_TIMEOUT_S:.0f} s"
        + (f" ({holders})" if holders else "")
        + "; try again when it has finished"
    )
