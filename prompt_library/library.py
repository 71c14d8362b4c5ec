"""The Library: one SQLite file holding drafts, frozen prompts, datasets, runs and the judge cache."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geval_core.errors import InputError, IntegrityError
from geval_core.files.prompt_files import open_export, read_export

from . import migrations, schema
from .archive import ArchiveMixin
from .base import now
from .frozen_records import FrozenRecordsMixin
from .jobs import JobsMixin
from .leases import LeasesMixin
from .prompts import FreezeResult
from .ratings import RatingsMixin
from .runs import RunsMixin
from .seed import SEEDED_KEY, seed
from .verify import LibraryIntegrityWarning, trigger_problems

if TYPE_CHECKING:
    from geval_core.store import Store


class Library(FrozenRecordsMixin, JobsMixin, LeasesMixin, RunsMixin, RatingsMixin, ArchiveMixin):
    """The prompt library. Rows come back as plain dicts; prompts as FrozenPrompt, items as Item."""

    def __init__(
        self, path: str | Path | None = None, seed_examples: bool = True, migrate: bool = True
    ) -> None:
        """Open, migrate and seed; `migrate=False` (for `geval verify`) reads a damaged file as it is."""
        super().__init__(path)
        try:
            self._open(seed_examples, migrate)
        except BaseException:
            self.conn.close()
            raise

    def _open(self, seed_examples: bool, migrate: bool) -> None:
        with self._lock:
            # A newer schema is refused before anything is read or written; a damaged one named.
            schema.check_records(self.conn, self.path, gaps=migrate)
        # Check without the write lock first: most opens find an up-to-date, seeded file.
        if migrate and (migrations.pending(self.conn) or (seed_examples and not self._seeded())):
            with self._write():
                # Re-check under the lock: another process may have migrated or seeded meanwhile.
                self._migrate()
                if seed_examples and not self._seeded():
                    seed(self)
                    self.set_setting(SEEDED_KEY, now())
        if migrate:
            with self._lock:
                schema.check_columns(self.conn, self.path)
        self.integrity_warnings: list[str] = self._check_protection()

    def _migrate(self) -> None:
        """Apply the pending migrations; one that fails (its table or column exists already, say) is named."""
        schema.check_records(self.conn, self.path)
        pending = [name for name in schema.step_names() if name not in schema.recorded(self.conn)]
        try:
            migrations.apply(self.db)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "full" in str(exc):
                raise
            raise IntegrityError(
                f"library {self.path}: applying migration {pending[0] if pending else '?'} failed "
                f"({exc}): the schema does not match its record of applied migrations (a record "
                "deleted?); nothing was changed. `geval verify` names what differs"
            ) from None
        # The version a newer workbench compares with its own, to refuse this file once it is newer.
        self.conn.execute(f"PRAGMA user_version = {schema.schema_version()}")

    def _check_protection(self) -> list[str]:
        """Warn about missing or altered protection triggers; never re-create them over possibly changed data."""
        with self._lock:
            problems = [p["text"] for p in trigger_problems(self.conn)]
        for problem in problems:
            warnings.warn(
                f"library {self.path}: {problem}; frozen rows may have been changed, run `geval verify`",
                LibraryIntegrityWarning,
                stacklevel=4,
            )
        return problems

    def _seeded(self) -> bool:
        if not self._one("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'meta'"):
            return False
        return self._one("SELECT 1 AS x FROM meta WHERE key = ?", [SEEDED_KEY]) is not None

    def import_prompt(self, data_or_path: dict[str, Any] | str | Path) -> FreezeResult:
        """Freeze an exported prompt (dict or file) after checking its hash; identical content is reused.

        A server URL in the file is ignored and agreement failing its own hash dropped: both are in
        `warnings`; `note` says whether the content is new and how it differs from the latest version.
        """
        try:
            data = data_or_path if isinstance(data_or_path, dict) else read_export(data_or_path)
            return self.import_checked(open_export(data))
        except RecursionError:  # JSON nested thousands deep: Python's parser gives up before reading it
            raise InputError(
                "the file is nested too deeply to be a prompt export", file=str(data_or_path)[:200]
            ) from None


def open_library(path: str | Path | None = None, seed_examples: bool = True) -> Library:
    """Open (creating, migrating and seeding as needed) the library at `path`, $GEVAL_DB or ./geval.db."""
    return Library(path, seed_examples=seed_examples)


if TYPE_CHECKING:

    def _is_a_store(library: Library) -> Store:
        """Never called: the type checker holds Library to the core's Store protocol here."""
        return library
