"""Lazy re-exports for a package `__init__`: `from geval_core import X` loads X's module on first use.

A `geval` command that only lists runs should not pay for numpy, scipy or the SDKs, yet the
package keeps one `__init__` with `__all__`, as httpx does.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]
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
