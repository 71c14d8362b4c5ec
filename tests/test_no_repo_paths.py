"""What a user reads names no file of this repository (issue 40): someone who installed the package has no bench/ or
tests/ folder, so a page, a message or a command's help says what was measured instead. Read from the source:
every string constant a user can see, i.e. all but module, class and function docstrings, except that a command's
docstring is its --help."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHOWN = ("app.py", "app_pages", "workbench_ui", "geval_core", "prompt_library")
REPO_PATH = re.compile(r"\b(bench|tests)/|\bbench_\w+\.py\b")  # sample_data/ ships in the package


def files() -> list[Path]:
    found = []
    for name in SHOWN:
        path = ROOT / name
        found.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return found


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def shown_strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = docstrings(tree)
    if "cli" in path.parts:  # a command's docstring is its --help; only the module's stays unseen
        body = tree.body  # type: ignore[attr-defined]
        first = body[0] if body and isinstance(body[0], ast.Expr) else None
        hidden = {id(first.value)} if first is not None else set()
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in hidden
    ]


@pytest.mark.parametrize("path", files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_text_a_user_sees_names_a_repository_path(path):
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for line, text in shown_strings(path)
        if REPO_PATH.search(text)
    ]
    assert not found, "\n".join(found)
