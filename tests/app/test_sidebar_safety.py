"""AppTest: the sidebar's "Library file" box opens libraries inside one folder only and creates no folder; a
Base URL carrying a key is refused; the Library page shows what an import ignored; the app binds loopback
and loads nothing from outside the machine."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from app_support import ROOT, open_design, open_page, page_text, use_temp_library, values

from geval_core.export import export_prompt
from prompt_library import Library

KEY = "sk-test-SIDEBAR0url0KEY000000000000000000000099"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """GEVAL_HOME: the one folder the box may open; the default library (GEVAL_DB) lives inside it."""
    folder = tmp_path / "home"
    folder.mkdir()
    use_temp_library(folder, monkeypatch)
    monkeypatch.setenv("GEVAL_HOME", str(folder))
    return folder


def type_library(at, text: str):
    at.sidebar.text_input(key="sb_db").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def sidebar_errors(at) -> list[str]:
    return values(at.sidebar.error)


def test_a_library_inside_the_folder_opens(home):
    at = type_library(open_page("library"), "other.db")
    assert sidebar_errors(at) == [] and (home / "other.db").exists()
    assert at.dataframe[0].value["prompt"].tolist()[0] == "coherence@1"  # the new file, seeded


@pytest.mark.parametrize(
    "typed, said",
    [
        ("../outside.db", "must be inside"),
        ("/tmp/elsewhere/evil.db", "must be inside"),
        ("new/folder/lib.db", "never creates folders"),
        ("notes.txt", "not a library file name"),
        ("app.py", "not a library file name"),
    ],
)
def test_paths_outside_the_folder_are_refused_and_nothing_is_created(home, tmp_path, typed, said):
    at = open_page("library")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    type_library(at, typed)
    errors = sidebar_errors(at)
    assert len(errors) == 1 and said in errors[0] and f"Using {home / 'lib.db'}" in errors[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # no file, no folder
    assert at.title[0].value == "Library" and at.dataframe  # the default library stays open


def test_a_symlink_out_of_the_folder_is_refused(home, tmp_path):
    (tmp_path / "outside").mkdir()
    (home / "link.db").symlink_to(tmp_path / "outside" / "target.db")
    at = type_library(open_page(), "link.db")
    assert any("must be inside" in e for e in sidebar_errors(at))
    assert not (tmp_path / "outside" / "target.db").exists()


def test_a_base_url_with_a_key_is_refused_and_cleared(home):
    at = open_page()
    at.sidebar.selectbox(key="sb_judge").set_value("compatible").run()
    at.sidebar.text_input(key="sb_base_url").set_value(f"http://user:{KEY}@127.0.0.1:8080/v1").run()
    assert not at.exception
    errors = sidebar_errors(at)
    assert errors and "OPENAI_API_KEY" in errors[0] and "credentials" in errors[0]
    assert at.sidebar.text_input(key="sb_base_url").value == "http://127.0.0.1:8080/v1"  # the key is gone
    shown = page_text(at) + " ".join(str(t.value) for t in at.sidebar.text_input) + " ".join(errors)
    assert KEY not in shown and KEY[8:24] not in shown


def test_the_library_page_shows_what_an_import_ignored(home):
    at = open_page("library")
    with Library(home / "lib.db") as lib:
        fluency = lib.get_prompt("fluency")
    data = export_prompt(fluency)
    data["judge"]["base_url"] = "http://203.0.113.9/v1"  # not hashed: the file still loads
    data["name"] = "readability"
    at.file_uploader(key="lib_upload").set_value(("x.json", json.dumps(data).encode(), "application/json"))
    at.run()
    at.button(key="lib_import").click().run()
    assert not at.exception and not at.error
    assert any("names a server (http://203.0.113.9/v1) under judge; ignored" in w for w in values(at.warning))
    [done] = [s for s in values(at.success) if s.startswith("Already in the library as")]
    assert f"fluency@1 ({fluency.id[:12]})" in done and "the file calls it readability@1" in done
    text = page_text(at)
    assert "Unverified metadata" in text and "the hash is the prompt's identity" in text
    coherence = Library(home / "lib.db").get_prompt("coherence")
    assert f"coherence@1 · {coherence.id[:12]} is the only version" in page_text(
        at
    )  # the hash beside the label


def test_the_app_binds_loopback_and_loads_nothing_from_outside():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1" and config["browser"]["gatherUsageStats"] is False
    assert (
        config["browser"]["serverAddress"] == "localhost"
    )  # a stopped app asks "still running?", not "internet?"
    assert "--server.address 127.0.0.1" in (ROOT / "Makefile").read_text(encoding="utf-8")
    sources = [ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"), *(ROOT / "workbench_ui").glob("*.py")]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        # Streamlit draws a :material/...: page icon from fonts.gstatic.com; nav icons use its bundled font.
        assert not re.search(r"page_icon\s*=\s*[\"']:material", text), path
        urls = [u for u in re.findall(r"https?://[^\s\"'<>)]+", text) if not u.startswith("http://127.0.0.1")]
        assert urls == [] or all("example" in u for u in urls), (path, urls)
        assert "@import" not in text and "<link" not in text and "fonts.googleapis" not in text, path
    assert json.dumps(config)  # read as TOML: a typo would have failed above


def test_a_refused_library_name_is_said_once_and_the_box_goes_back_to_the_default(home):
    at = type_library(open_page("library"), "../outside.db")
    assert len(sidebar_errors(at)) == 1
    assert at.sidebar.text_input(key="sb_db").value == str(home / "lib.db")
    at.switch_page("app_pages/score.py").run()
    assert sidebar_errors(at) == []  # no red box left on every page
    assert f"Libraries open from {home} only." in values(at.sidebar.caption)


def test_a_library_next_to_the_default_one_opens_without_geval_home(tmp_path, monkeypatch):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    use_temp_library(folder, monkeypatch)  # GEVAL_DB=elsewhere/lib.db, the working directory is another
    monkeypatch.delenv("GEVAL_HOME", raising=False)
    at = type_library(open_page("library"), "second.db")
    assert sidebar_errors(at) == [] and (folder / "second.db").exists()


def test_a_gguf_file_of_the_users_is_pinned_and_one_outside_the_folder_refused(home, gguf_path, tmp_path):
    import hashlib
    import shutil

    shutil.copyfile(gguf_path, home / "mine.gguf")
    at = open_design()
    at.sidebar.selectbox(key="sb_judge").set_value("local").run()
    at.sidebar.text_input(key="sb_local_file").set_value("mine.gguf").run()
    digest = hashlib.sha256((home / "mine.gguf").read_bytes()).hexdigest()
    assert sidebar_errors(at) == [] and f"mine.gguf · sha256 {digest[:12]}…" in values(at.sidebar.caption)
    assert at.session_state["workbench_sidebar"].judge.model == f"{home / 'mine.gguf'}#sha256={digest}"
    shutil.copyfile(gguf_path, tmp_path / "outside.gguf")
    at.sidebar.text_input(key="sb_local_file").set_value(str(tmp_path / "outside.gguf")).run()
    [error] = sidebar_errors(at)
    assert "must be inside" in error and "Using the bundled SmolLM2" in error
    assert at.session_state["workbench_sidebar"].judge.model == "smollm2-135m-instruct"
