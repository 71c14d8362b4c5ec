"""The layers, read from the source: each package imports only from its own layer and those below it,
no module reaches into another package's private names, and product code uses only the SDKs' public API.

Order, lowest first: neutral types (types, errors, judgment, store, urls) <- scoring <- prompts <- stats <- files <-
providers <- run <- diagnostics <- prompt_library <- cli <- workbench_ui, app_pages, app.py. Imports inside
functions count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = [
    ("geval_core.lazy", "geval_core.errors", "geval_core.types", "geval_core.judgment", "geval_core.store",
     "geval_core.urls"),
    ("geval_core.scoring",),
    ("geval_core.prompts",),
    ("geval_core.stats",),
    ("geval_core.files",),
    ("geval_core.providers",),
    ("geval_core.run",),
    ("geval_core.diagnostics",),
    ("prompt_library",),
    ("geval_core.cli",),
    ("workbench_ui", "app_pages", "app"),
]
# Facades that only re-export names from every layer for users: the package's lazy __init__ and the
# production snippet's documented `from geval_core.export import load_prompt, score_item`.
FACADES = {"geval_core", "geval_core.export"}
PRODUCT = ("geval_core", "prompt_library", "workbench_ui", "app_pages")
PRIVATE_SDK = ("openai._", "google.genai._", "google.auth._", "httpx._")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_files() -> list[Path]:
    return sorted([p for d in PRODUCT for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"])


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names) of every import in a file, relative ones resolved."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


def layer_of(module: str) -> int | None:
    """The index of the layer a module belongs to (the longest matching prefix), None outside the product."""
    best, rank = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def upward_imports() -> list[str]:
    found = []
    for path in product_files():
        source = module_name(path)
        mine = layer_of(source)
        if source in FACADES or mine is None:
            continue
        for line, target, names in imports(path):
            targets = [target] if names == [] or layer_of(target) is not None else [target]
            if target in ("geval_core", "prompt_library") and names:  # `from geval_core import x`: x's module
                targets = [f"{target}.{name}" for name in names]
            for name in targets:
                theirs = layer_of(name)
                if theirs is not None and theirs > mine and name not in FACADES:
                    found.append(f"{path.relative_to(ROOT)}:{line}: {source} (layer {mine}) imports {name} "
                                 f"(layer {theirs})")
    return found


def test_every_product_module_has_a_layer():
    unplaced = [module_name(p) for p in product_files() if layer_of(module_name(p)) is None
                and module_name(p) not in FACADES]
    assert unplaced == []


def test_no_module_imports_from_a_layer_above_it():
    assert upward_imports() == []


def test_the_layer_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The check itself: a scoring module importing the runner is reported (so an empty list means something)."""
    fake = ROOT / "geval_core" / "scoring" / "zz_upward_probe.py"
    monkeypatch.setattr(__import__(__name__), "product_files", lambda: [fake])
    fake.write_text("from ..run.runner import run_scoring\n", encoding="utf-8")
    try:
        assert [line.split(": ", 1)[1] for line in upward_imports()] == [
            "geval_core.scoring.zz_upward_probe (layer 1) imports geval_core.run.runner (layer 6)"]
    finally:
        fake.unlink()


def private_crossings() -> list[str]:
    """Imports of a private name (or module) that belongs to another package, and of SDK internals."""
    found = []
    for path in product_files():
        package = module_name(path).rpartition(".")[0] if path.name != "__init__.py" else module_name(path)
        for line, target, names in imports(path):
            where = f"{path.relative_to(ROOT)}:{line}: {target}"
            if target.startswith(PRIVATE_SDK):
                found.append(f"{where} (a private module of an SDK)")
            own = target.rpartition(".")[0] == package or target == package
            if own or layer_of(target) is None:
                continue
            private = [n for n in names if n.startswith("_")]
            hidden = [part for part in target.split(".")[1:] if part.startswith("_")]
            if private or hidden:
                found.append(f"{where} {private or hidden} (private to {target.rpartition('.')[0]})")
    return found


def test_no_private_name_crosses_a_package_and_no_sdk_internals_are_imported():
    assert private_crossings() == []


@pytest.mark.parametrize("line", ["from openai._models import FinalRequestOptions",
                                  "import google.genai._api_client"])
def test_the_private_check_sees_sdk_internals(line, monkeypatch):
    fake = ROOT / "geval_core" / "providers" / "zz_private_probe.py"
    monkeypatch.setattr(__import__(__name__), "product_files", lambda: [fake])
    fake.write_text(line + "\n", encoding="utf-8")
    try:
        assert len(private_crossings()) == 1
    finally:
        fake.unlink()


def test_pages_and_widgets_never_import_the_cli():
    found = [f"{p.relative_to(ROOT)}:{line}: {target}" for p in product_files()
             if module_name(p).startswith(("workbench_ui", "app_pages", "app"))
             for line, target, _ in imports(p) if target.startswith("geval_core.cli")]
    assert found == []
