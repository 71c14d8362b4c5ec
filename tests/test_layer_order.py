"""The layers, read from the source: each package imports only from its own layer and those below it,
no module reaches into another package's private names, and product code uses only the SDKs' public API.

Order, lowest first: neutral types (types, records, errors, judgment, store, urls) <- scoring <- prompts <- stats <- files <-
providers <- run <- diagnostics <- prompt_library <- cli <- workbench_ui, app_pages, app.py. Imports inside
functions count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = [
    (
        "geval_core.lazy",
        "geval_core.errors",
        "geval_core.types",
        "geval_core.records",
        "geval_core.judgment",
        "geval_core.store",
        "geval_core.urls",
    ),
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


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_files() -> list[Path]:
    return sorted([p for d in PRODUCT for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"])


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names) of every import in a file, relative ones resolved; a module loaded by a
    constant string (`importlib.import_module("..run.runner", __package__)`, `__import__("x")`) counts too."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append(
                (
                    node.lineno,
                    _absolute(package, node.module or "", node.level),
                    [alias.name for alias in node.names],
                )
            )
        elif isinstance(node, ast.Call) and (loaded := _string_import(node)):
            level = len(loaded) - len(loaded.lstrip("."))
            found.append(
                (node.lineno, _absolute(package, loaded.lstrip("."), level) if level else loaded, [])
            )
    return found


def _absolute(package: str, target: str, level: int) -> str:
    """A relative import's absolute module name."""
    if not level:
        return target
    base = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join(base + ([target] if target else []))


def _string_import(node: ast.Call) -> str | None:
    """The module a call loads by a constant string (import_module, __import__), None for any other call."""
    name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def face_module(package: str, name: str) -> str:
    """The module a package's face serves `name` from (`from geval_core import score_frame` ->
    prompt_library.frames); `package.name` for a submodule or a package without a face table."""
    table = getattr(importlib.import_module(package), "_MODULE_OF", {})
    module = table.get(name)
    if module is None:
        return f"{package}.{name}"
    return package + module if module.startswith(".") else module


def layer_of(module: str) -> int | None:
    """The index of the layer a module belongs to (the longest matching prefix), None outside the product."""
    best, rank = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def upward_imports(files: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    found = []
    for path in product_files() if files is None else files:
        source = module_name(path, root)
        mine = layer_of(source)
        if source in FACADES or mine is None:
            continue
        for line, target, names in imports(path, root):
            targets = [target]
            if target in ("geval_core", "prompt_library") and names:  # `from geval_core import x`: x's module
                targets = [face_module(target, name) for name in names]
            for name in targets:
                theirs = layer_of(name)
                if theirs is not None and theirs > mine and name not in FACADES:
                    found.append(
                        f"{path.relative_to(root)}:{line}: {source} (layer {mine}) imports {name} "
                        f"(layer {theirs})"
                    )
    return found


def test_every_product_module_has_a_layer():
    unplaced = [
        module_name(p)
        for p in product_files()
        if layer_of(module_name(p)) is None and module_name(p) not in FACADES
    ]
    assert unplaced == []


def test_no_module_imports_from_a_layer_above_it():
    assert upward_imports() == []


def probe_file(tmp_path: Path, where: str, source: str) -> Path:
    """A probe module written under tmp_path at the place `where` names (never into the source tree)."""
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "source",
    [
        "from ..run.runner import run_scoring\n",
        "from geval_core import run_scoring\n",  # through the package's face
        "import importlib\nrunner = importlib.import_module('..run.runner', __package__)\n",  # loaded by a string
        "runner = __import__('geval_core.run.runner')\n",
    ],
)
def test_the_layer_check_sees_an_upward_import(tmp_path, source):
    """The check itself: a scoring module reaching the runner, by any of these roads, is reported (so an empty
    list means something)."""
    fake = probe_file(tmp_path, "geval_core/scoring/zz_upward_probe.py", source)
    assert [line.split(": ", 1)[1] for line in upward_imports([fake], tmp_path)] == [
        "geval_core.scoring.zz_upward_probe (layer 1) imports geval_core.run.runner (layer 6)"
    ]


def private_crossings(files: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """Imports of a private name (or module) that belongs to another package, and of SDK internals."""
    found = []
    for path in product_files() if files is None else files:
        module = module_name(path, root)
        package = module.rpartition(".")[0] if path.name != "__init__.py" else module
        for line, target, names in imports(path, root):
            where = f"{path.relative_to(root)}:{line}: {target}"
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


@pytest.mark.parametrize(
    "line", ["from openai._models import FinalRequestOptions", "import google.genai._api_client"]
)
def test_the_private_check_sees_sdk_internals(line, tmp_path):
    fake = probe_file(tmp_path, "geval_core/providers/zz_private_probe.py", line + "\n")
    assert len(private_crossings([fake], tmp_path)) == 1


# Private attributes read on something other than self or cls: each is the same package's own (a Library's
# row reader inside prompt_library, a module of the same package) or the standard library's documented os._exit.
# An SDK object's private attribute (llama_cpp's Llama._model, say) is never read: the list would grow.
PRIVATE_ATTRIBUTES_OF_OWN_PACKAGE = {
    ("geval_core/lazy.py", "_EXPORTS"),
    ("geval_core/providers/gemini_judge.py", "_raw"),
    ("geval_core/providers/gemini_judge.py", "_choices"),
    ("geval_core/providers/gemini_judge.py", "_version"),
    ("geval_core/providers/gemini_judge.py", "_usage"),
    ("geval_core/cli/__init__.py", "_exit"),
    ("geval_core/cli/_interrupt.py", "_exit"),
    ("prompt_library/verify.py", "_rows"),
    ("prompt_library/verify.py", "_lock"),
    ("prompt_library/schema.py", "_STEPS"),
    ("prompt_library/signing.py", "_one"),
    ("prompt_library/signing.py", "_rows"),
    ("workbench_ui/raters_view.py", "_cell"),
}


def private_attributes(files: list[Path] | None = None, root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, attribute) of every `x._name` read or written where x is not self or cls."""
    found = set()
    for path in product_files() if files is None else files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.add((str(path.relative_to(root)), node.attr))
    return found


def test_no_private_attribute_of_another_package_or_sdk_is_read():
    assert private_attributes() - PRIVATE_ATTRIBUTES_OF_OWN_PACKAGE == set()


def test_the_private_attribute_check_sees_an_sdk_objects_private_field(tmp_path):
    fake = probe_file(
        tmp_path, "geval_core/providers/zz_attr_probe.py", "def vocab(llm):\n    return llm._model.vocab\n"
    )
    assert private_attributes([fake], tmp_path) == {("geval_core/providers/zz_attr_probe.py", "_model")}


def test_pages_and_widgets_never_import_the_cli():
    found = [
        f"{p.relative_to(ROOT)}:{line}: {target}"
        for p in product_files()
        if module_name(p).startswith(("workbench_ui", "app_pages", "app"))
        for line, target, _ in imports(p)
        if target.startswith("geval_core.cli")
    ]
    assert found == []
