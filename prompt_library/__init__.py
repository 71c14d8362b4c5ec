"""The prompt library: one SQLite file of drafts, frozen prompts, golden datasets, runs and judgments."""

from .base import default_path
from .datasets import DatasetMapping, read_items
from .library import Library, open_library
from .prompts import FreezeResult
from .verify import LibraryIntegrityWarning, verify_library

__all__ = [
    "DatasetMapping",
    "FreezeResult",
    "Library",
    "LibraryIntegrityWarning",
    "default_path",
    "open_library",
    "read_items",
    "verify_library",
]
