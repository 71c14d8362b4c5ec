"""The Library: one SQLite file holding drafts, frozen prompts, datasets, runs and the judge cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from geval_core.export import prompt_from_export, read_export

from . import migrations
from .base import now
from .prompts import FreezeResult
from .runs import RunsMixin
from .seed import SEEDED_KEY, seed


class Library(RunsMixin):
    """The prompt library. Rows come back as plain dicts; prompts as FrozenPrompt, items as Item."""

    def __init__(self, path: str | Path | None = None, seed_examples: bool = True) -> None:
        super().__init__(path)
        # Check without the write lock first: most opens find an up-to-date, seeded file.
        if migrations.pending(self.db) or (seed_examples and not self._seeded()):
            with self._write():
                # Re-check under the lock: another process may have migrated or seeded meanwhile.
                migrations.apply(self.db)
                if seed_examples and not self._seeded():
                    seed(self)
                    self.set_setting(SEEDED_KEY, now())

    def _seeded(self) -> bool:
        if not self.db["meta"].exists():
            return False
        return self._one("SELECT 1 AS x FROM meta WHERE key = ?", [SEEDED_KEY]) is not None

    def import_prompt(self, data_or_path: dict[str, Any] | str | Path) -> FreezeResult:
        """Freeze an exported prompt (dict or file) after checking its hash; identical content is reused."""
        data = data_or_path if isinstance(data_or_path, dict) else read_export(data_or_path)
        prompt = prompt_from_export(data)
        return self.freeze(prompt.dimension, name=prompt.name)


def open_library(path: str | Path | None = None, seed_examples: bool = True) -> Library:
    """Open (creating, migrating and seeding as needed) the library at `path`, $GEVAL_DB or ./geval.db."""
    return Library(path, seed_examples=seed_examples)

