"""The test harness itself: an isolated HOME for every test and session fixture, and requirements that
skip on a developer's machine but fail under CI (needs.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REAL_HOME
from needs import require_executable, require_file, require_module, under_ci

from geval_core.run.cost import USER_PRICES, load_prices, price_for
from geval_core.types import JudgeSettings


@pytest.fixture(scope="session")
def session_home() -> str:
    """HOME as a session-scoped fixture (a server, the local model) sees it."""
    return os.environ["HOME"]


def test_home_is_a_fresh_temporary_folder(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    home = Path("~").expanduser()
    assert home != Path(REAL_HOME) and home.is_relative_to(base)
    assert Path.home() == home and Path(os.environ["XDG_CONFIG_HOME"]) == home / ".config"
    assert USER_PRICES.expanduser().is_relative_to(base)  # never the developer's ~/.config/geval/prices.json
    assert list(home.iterdir()) == [] and "GEVAL_PRICES" not in os.environ


def test_session_fixtures_see_an_isolated_home_too(session_home, tmp_path_factory):
    assert session_home != REAL_HOME and Path(session_home).is_relative_to(tmp_path_factory.getbasetemp())


def test_the_price_file_read_is_the_one_under_the_isolated_home():
    """The cost code reads ~/.config/geval/prices.json from this HOME, so a real one is never read."""
    model = JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18")
    assert price_for(model, load_prices()) == {
        "input": 0.15,
        "cached_input": 0.075,
        "output": 0.60,
    }  # built in
    file = Path.home() / ".config" / "geval" / "prices.json"
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps({"openai:gpt-4o-mini": {"input": 1, "output": 2}}))
    assert price_for(model, load_prices()) == {"input": 1.0, "output": 2.0}


@pytest.mark.parametrize(
    "value, ci", [("", False), ("0", False), ("false", False), ("1", True), ("true", True), ("yes", True)]
)
def test_ci_is_read_from_the_environment(monkeypatch, value, ci):
    monkeypatch.setenv("CI", value)
    assert under_ci() is ci
    monkeypatch.delenv("CI")
    assert under_ci() is False


@pytest.mark.parametrize(
    "require, argument, named",
    [
        (require_file, "/nonexistent/shared/data/summeval.jsonl", "/nonexistent/shared/data/summeval.jsonl"),
        (require_module, "no_such_module_for_geval", "no_such_module_for_geval"),
        (require_executable, "/nonexistent/bin/chromium", "/nonexistent/bin/chromium"),
    ],
)
def test_a_missing_requirement_skips_locally_and_fails_under_ci(monkeypatch, require, argument, named):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=named):
        require(argument)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=named):
        require(argument)


def test_a_present_requirement_is_returned(tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "1")
    file = tmp_path / "data.jsonl"
    file.write_text("{}\n")
    assert require_file(file) == file
    assert require_module("json") is json
    assert Path(require_executable("/nonexistent/python", "sh")).name == "sh"
