"""The layering the design promises: the core and the library never need Streamlit, and their public
names exist.

geval_core and prompt_library are the scoring engine, the CLI and the library file; Streamlit belongs to
app.py, app_pages/ and workbench_ui/ only. A Streamlit import in the core would make `geval` and the
production snippet pay Streamlit's start-up and break them where Streamlit is not installed.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import geval_core
import prompt_library

ROOT = Path(__file__).resolve().parent.parent
CORE_PACKAGES = (geval_core, prompt_library)
STREAMLIT_IMPORT = re.compile(
    r"^[ \t]*(?:import\s+streamlit\b|from\s+streamlit\b[\w.]*\s+import\b)", re.MULTILINE
)


def _defines_all(path: str | None) -> bool:
    """Whether the module's source assigns __all__ at top level (read, not imported)."""
    if not path or not path.endswith(".py"):
        return False
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    targets = [
        t
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
    ]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def modules_with_all() -> list[str]:
    """geval_core, prompt_library and every module or subpackage under them whose source defines __all__.

    Found with pkgutil, so a new subpackage (stats, run, providers, cli, ...) is covered without a
    change here; a module is imported only when it defines __all__ (the optional local extra stays
    optional).
    """
    names = []
    for package in CORE_PACKAGES:
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            if _defines_all(spec.origin if spec else None):
                names.append(info.name)
    return names


def source_files() -> list[Path]:
    return sorted(
        p for package in CORE_PACKAGES for folder in package.__path__ for p in Path(folder).rglob("*.py")
    )


@pytest.mark.parametrize("module", ["geval_core", "geval_core.cli", "prompt_library"])
def test_importing_the_core_loads_no_streamlit(module):
    """In a fresh interpreter (this one has Streamlit loaded by the app tests), nothing named streamlit."""
    code = (
        "import importlib, sys; importlib.import_module(sys.argv[1]); "
        "print('\\n'.join(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, module], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [], f"importing {module} loaded {result.stdout.split()}"


def test_discovery_covers_the_subpackages():
    """The walk finds the packages that exist today (so an empty list cannot pass the next test)."""
    found = modules_with_all()
    for name in (
        "geval_core",
        "prompt_library",
        "geval_core.providers",
        "geval_core.run",
        "geval_core.stats",
    ):
        if importlib.util.find_spec(name) is not None:
            assert name in found


@pytest.mark.parametrize("name", modules_with_all())
def test_every_exported_name_exists(name):
    """Every name in __all__ is an attribute of the module, listed once (httpx's test_exported_members)."""
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert all(isinstance(n, str) for n in exported), exported
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what {name} does not define: {missing}"
    assert len(set(exported)) == len(exported), f"{name}.__all__ lists a name twice"


def test_no_core_source_file_imports_streamlit():
    """A plain-text check of every .py file under geval_core/ and prompt_library/, lazy imports included."""
    files = source_files()
    assert len(files) > 10
    found = [
        f"{path.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}: {match.group(0).strip()}"
        for path in files
        for text in [path.read_text(encoding="utf-8")]
        for match in STREAMLIT_IMPORT.finditer(text)
    ]
    assert found == []


def test_the_streamlit_pattern_catches_the_forms_of_import():
    for line in (
        "import streamlit as st",
        "    import streamlit",
        "from streamlit.testing.v1 import AppTest",
        "from streamlit import session_state",
    ):
        assert STREAMLIT_IMPORT.search(line), line
    for line in ("import streamlit_extras", "# no Streamlit here", "x = 'import streamlit'"):
        assert not STREAMLIT_IMPORT.search(line), line
