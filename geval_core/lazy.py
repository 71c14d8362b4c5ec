"""Lazy re-exports for a package `__init__`: `from geval_core import X` loads X's module on first use.

A `geval` command that only lists runs should not pay for numpy, scipy or the SDKs, yet the
package keeps one `__init__` with `__all__`, as httpx does. Type checkers cannot follow a module's
`__getattr__`, so they read `__init__.pyi`, which `stub` writes from the same table:
`python -m geval_core.lazy` rewrites it after the table changes (a test says when it is due).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, tuple[str, ...]]
) -> tuple[dict[str, str], Callable[[str], Any], Callable[[], list[str]]]:
    """(name -> module, the package's __getattr__, its __dir__) for `exports`: module -> names."""
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        vars(sys.modules[package])[name] = value  # once loaded, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return module_of, __getattr__, __dir__


def stub(package: str, exports: Mapping[str, tuple[str, ...]]) -> str:
    """The `__init__.pyi` of a lazy package: every name imported from its module (re-exported), and `__all__`."""
    lines = [
        f'"""Type stub of {package}\'s lazy face, written by geval_core.lazy.write_stub from its table."""',
        "",
    ]
    for module in sorted(exports, key=lambda m: (m.startswith("."), m)):  # absolute modules first
        lines += [f"from {module} import (", *(f"    {n} as {n}," for n in sorted(exports[module])), ")"]
    every = sorted(name for names in exports.values() for name in names)
    lines += ["", "__all__ = [", *(f'    "{name}",' for name in every), "]", ""]
    return "\n".join(lines)


def stub_path(package: str) -> Path:
    """Where a package's stub lives: beside its `__init__.py`."""
    return Path(importlib.import_module(package).__file__ or "").with_suffix(".pyi")


def write_stub(package: str = "geval_core") -> Path:
    """Write a lazy package's stub from its `_EXPORTS` table (after the table changes); its path."""
    path = stub_path(package)
    path.write_text(stub(package, importlib.import_module(package)._EXPORTS), encoding="utf-8")
    return path
