"""AppTest: the Library page runs the same check as `geval verify` and shows what differs (issue 9)."""

from __future__ import annotations

import sqlite3

import pytest
from app_support import open_page, use_temp_library, values

from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def test_verify_library_reports_an_intact_library(lib_path):
    at = open_page("library")
    at.button(key="lib_verify").click().run()
    assert any("every protection trigger is in place" in v for v in values(at.success))
    assert not at.error and not at.warning


@pytest.mark.filterwarnings("ignore::prompt_library.LibraryIntegrityWarning")
def test_verify_library_names_each_object_that_differs(lib_path):
    Library(lib_path).close()
    conn = sqlite3.connect(lib_path, isolation_level=None)
    conn.execute("DROP TRIGGER items_no_update")
    conn.execute('UPDATE items SET fields = \'{"document":"x","summary":"<b>y</b>"}\' WHERE position = 0')
    conn.close()
    at = open_page("library", clean=False)
    assert any("trigger items_no_update missing" in v for v in values(at.warning))  # shown on opening
    at.button(key="lib_verify").click().run()
    assert any("2 problems" in v for v in values(at.error))
    [listing] = [c.value for c in at.code if "trigger items_no_update missing" in c.value]
    assert "dataset sample@1 (" in listing and "stored hash does not match its items" in listing
