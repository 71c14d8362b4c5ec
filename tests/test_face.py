"""The package face, both ways (httpx's test of its exported members): every name `geval_core` exports is the
object its module defines, every public name the package shows is exported, every error of the one error tree
is on the face, and the type checkers' stub says the same as the table."""

from __future__ import annotations

import importlib
import inspect
import types

import geval_core
from geval_core import errors, lazy


def test_every_exported_name_imports_and_is_the_object_its_module_defines():
    assert len(geval_core.__all__) == len(set(geval_core.__all__)) > 50
    for module_name, names in geval_core._EXPORTS.items():
        module = importlib.import_module(module_name, "geval_core")
        for name in names:
            exported = getattr(geval_core, name)
            assert exported is getattr(module, name), name
            if inspect.isclass(exported) or inspect.isfunction(exported):
                # Defined there, not re-exported through it: the table names where a reader finds the code.
                assert exported.__module__ == module.__name__, (name, exported.__module__, module.__name__)


def test_every_public_name_the_package_shows_is_exported_and_nothing_else():
    for name in geval_core.__all__:
        getattr(geval_core, name)  # loads every lazy name, so vars() holds them all
    shown = {
        name
        for name in dir(geval_core)
        if not name.startswith("_") and not isinstance(getattr(geval_core, name), types.ModuleType)
    }
    assert shown == set(geval_core.__all__)
    assert geval_core.__all__ == sorted(geval_core.__all__)


def test_every_public_error_is_on_the_face():
    defined = {
        name
        for name, value in vars(errors).items()
        if not name.startswith("_")
        and inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }
    assert {"RunBusyError", "LibraryLockedError", "RetryLaterError", "ContextLengthError"} <= defined
    assert defined == set(errors.__all__)
    assert defined <= set(geval_core.__all__)
    for name in defined:
        assert getattr(geval_core, name) is getattr(errors, name)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    try:
        geval_core.score_itme  # noqa: B018
    except AttributeError as exc:
        assert "score_itme" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_the_type_checkers_stub_is_written_from_the_table():
    """`python -c 'from geval_core.lazy import write_stub; write_stub()'` rewrites it after the table changes."""
    written = lazy.stub_path("geval_core").read_text(encoding="utf-8")
    assert written == lazy.stub("geval_core", geval_core._EXPORTS)
    assert "from .run.one_item import (\n    score_item as score_item,\n)" in written
    assert '    "RunBusyError",' in written
