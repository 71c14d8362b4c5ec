"""Archive and restore datasets, runs and drafts: hidden from the app's pickers, never deleted."""

from __future__ import annotations

from geval_core.errors import InputError

from .base import LibraryBase, now

KINDS = ("dataset", "run", "draft")


class ArchiveMixin(LibraryBase):
    """The `archived` table: one row per hidden object; frozen rows are never touched."""

    def archive(self, kind: str, object_id: str | int) -> None:
        """Hide a dataset version, run or draft from the pickers (archiving twice is harmless)."""
        _check(kind)
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO archived (kind, id, archived_at) VALUES (?, ?, ?)",
                [kind, str(object_id), now()],
            )

    def restore(self, kind: str, object_id: str | int) -> None:
        """Show an archived object in the pickers again."""
        _check(kind)
        with self._write() as db:
            db.execute("DELETE FROM archived WHERE kind = ? AND id = ?", [kind, str(object_id)])

    def archived_ids(self, kind: str) -> set[str]:
        """The ids of archived objects of one kind (as text: draft ids too)."""
        _check(kind)
        return {r["id"] for r in self._rows("SELECT id FROM archived WHERE kind = ?", [kind])}


def _check(kind: str) -> None:
    if kind not in KINDS:
        raise InputError(f"can archive {', '.join(KINDS)}, not {kind!r}")
