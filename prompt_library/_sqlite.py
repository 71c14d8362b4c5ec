"""sqlite-utils without pandas and numpy at start-up.

sqlite-utils imports pandas and numpy whenever they are installed (0.5-0.7 s, most of a `geval` command's
start-up), only to map their scalar types to column types. The library never stores such values, so
sqlite-utils is imported with them hidden from the importing thread (unless they are loaded already; other
threads can import them meanwhile), and the mapping still answers for numpy and pandas types on demand,
should one ever reach a column.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_HIDDEN = ("pandas", "numpy")


class _ColumnTypes(dict):
    """sqlite-utils' COLUMN_TYPE_MAPPING, answering for numpy and pandas scalar types when they are loaded."""

    def __missing__(self, key: Any) -> str:
        found = _optional_type(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(key) or _optional_type(key) or default


def _optional_type(key: Any) -> str | None:
    module = (getattr(key, "__module__", None) or "").partition(".")[0]
    if module == "numpy" and "numpy" in sys.modules:
        np = sys.modules["numpy"]
        if isinstance(key, type) and issubclass(key, np.integer):
            return "INTEGER"
        if isinstance(key, type) and issubclass(key, np.floating):
            return "REAL"
    if (
        module == "pandas"
        and "pandas" in sys.modules
        and key is getattr(sys.modules["pandas"], "Timestamp", None)
    ):
        return "TEXT"
    return None


class _Hide:
    """A finder that says pandas and numpy are not installed, to the thread importing sqlite-utils only."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in _HIDDEN and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"{name} is not loaded for sqlite-utils", name=name)


def _load() -> Any:
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    hidden = [name for name in _HIDDEN if name not in sys.modules]
    finder = _Hide()
    sys.meta_path.insert(0, finder)
    try:
        import sqlite_utils.db
    finally:
        sys.meta_path.remove(finder)
    if hidden:
        sqlite_utils.db.COLUMN_TYPE_MAPPING = _ColumnTypes(sqlite_utils.db.COLUMN_TYPE_MAPPING)
    return sqlite_utils


sqlite_utils = _load()
Database = sqlite_utils.Database
Migrations = sqlite_utils.Migrations
