"""Requirements a test cannot run without: skipped on a developer's machine, a failure under CI.

A skip is invisible in a green run, so under CI (the environment variable `CI` set, as `.ci/run` and
hosted CI services do) a missing data file, optional package or browser fails the test with a message
naming what is missing. Hard dependencies (openai, streamlit, pandas, ...) are imported plainly instead.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

FALSE = ("", "0", "false", "no", "off")


def under_ci() -> bool:
    """True when the environment variable CI is set to anything but an empty or false-like value."""
    return os.environ.get("CI", "").strip().lower() not in FALSE


def missing(reason: str) -> NoReturn:
    """Skip with reason locally; fail with it under CI. Also usable at module level."""
    if under_ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_file(path: str | os.PathLike[str], what: str = "required file") -> Path:
    """The path, if it is a file; otherwise skip (locally) or fail (CI) naming the path."""
    path = Path(path)
    if not path.is_file():
        missing(f"{what} not found at {path}")
    return path


def require_module(name: str, hint: str = "") -> ModuleType:
    """The imported module; otherwise skip (locally) or fail (CI) naming the module and the import error."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} is not importable ({exc}){'; ' + hint if hint else ''}")


def require_executable(*candidates: str, hint: str = "") -> str:
    """The first candidate that is an executable file or a command on PATH; otherwise skip or fail."""
    for candidate in candidates:
        found = shutil.which(candidate)  # a path with a directory part is checked as it is
        if found:
            return found
    missing(f"none of {', '.join(candidates)} is installed{'; ' + hint if hint else ''}")
