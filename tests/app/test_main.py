"""AppTest: the entry point's sidebar (library file, judge, key status) and that every page opens."""

from __future__ import annotations

import pytest
import scripted_app_judge
from app_support import open_page, page_text, use_temp_library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


PAGES = {
    "start": "G-Eval Workbench",
    "design": "Design a dimension",
    "library": "Library",
    "datasets": "Datasets",
    "score": "Score",
    "agreement": "Agreement and comparison",
}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_opens_on_a_fresh_library(lib_path, page):
    at = open_page(page)
    assert [t.value for t in at.title] == [PAGES[page]]
    assert lib_path.exists()  # the app opened (and seeded) the library named by GEVAL_DB


def test_sidebar_defaults_to_the_library_file_and_says_the_local_judge_is_tiny(lib_path, monkeypatch):
    scripted_app_judge.withdraw(monkeypatch)  # the judges users are offered
    at = open_page()
    assert at.sidebar.text_input(key="sb_db").value == str(lib_path)
    assert at.sidebar.selectbox(key="sb_judge").value == "local"
    assert "API key: not needed" in [c.value for c in at.sidebar.caption]
    info = " ".join(i.value for i in at.sidebar.info)
    assert "tiny" in info and "not a trustworthy judge" in info


def test_key_status_shows_presence_never_the_key(lib_path, monkeypatch):
    at = open_page()
    at.sidebar.selectbox(key="sb_judge").set_value("openai").run()
    captions = [c.value for c in at.sidebar.caption]
    assert "API key (OPENAI_API_KEY): missing ❌" in captions
    secret = "sk-test-0123456789abcdef-not-a-real-key"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    at.run()
    assert "API key (OPENAI_API_KEY): present ✅" in [c.value for c in at.sidebar.caption]
    everything = page_text(at) + " ".join(c.value for c in at.sidebar.caption)
    everything += " ".join(str(t.value) for t in at.sidebar.text_input)
    assert secret not in everything


def test_gemini_accepts_either_key_variable(lib_path, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    at = open_page()
    at.sidebar.selectbox(key="sb_judge").set_value("gemini").run()
    assert "API key (GEMINI_API_KEY or GOOGLE_API_KEY): present ✅" in [c.value for c in at.sidebar.caption]


def test_compatible_server_asks_for_a_base_url(lib_path):
    at = open_page()
    at.sidebar.selectbox(key="sb_judge").set_value("compatible").run()
    assert at.sidebar.text_input(key="sb_base_url").value == "http://127.0.0.1:8080/v1"
    assert "API key (OPENAI_API_KEY): not set, fine for a local server that needs none" in [
        c.value for c in at.sidebar.caption
    ]
