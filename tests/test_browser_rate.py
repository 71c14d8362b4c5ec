"""The Rate page in real headless Chromium: rate items with the keyboard (digits, S to skip, U to undo) and
see hostile item text shown literally. No judge is needed: the library's sample set and prompts suffice."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import free_port, served
from needs import require_executable, require_module

from geval_core.types import Item
from prompt_library import Library

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE = "<script>window.pwned=1</script> **bold** [link](http://evil.example) :red[x]"

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = require_module("playwright.sync_api", "install the test extra: pip install -e '.[test]'")


@pytest.fixture
def rate_url(tmp_path):
    """`streamlit run app.py` on a free loopback port; the library holds a first item with hostile text."""
    require_executable("/usr/bin/chromium", "chromium", hint="install Debian's chromium (.ci/run does)")
    db = tmp_path / "rate.db"
    with Library(db) as lib:
        sample = lib.dataset_items("sample")
        lib.import_items("aaa-hostile", [Item("h0", {"document": HOSTILE, "summary": HOSTILE}, {}, None),
                                         *sample[:5]])
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("GEVAL_TEST_JUDGE", "OPENAI_API_KEY")}
    env.update(GEVAL_DB=str(db), STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
               "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none"]
    url = f"http://127.0.0.1:{port}"
    with served(command, f"{url}/_stcore/health", tmp_path / "streamlit.log", timeout=60.0, cwd=ROOT, env=env):
        yield url, db


def shown_item(page) -> str:
    return page.get_by_role("heading", name="Item ").first.inner_text().strip().removeprefix("Item ")


def press(page, key: str, before: str) -> str:
    """Press a key on the page body and wait for the next item to appear."""
    page.keyboard.press(key)
    page.wait_for_function("t => !document.body.innerText.includes('Item ' + t)", arg=before, timeout=30_000)
    return shown_item(page)


def test_keyboard_rating_and_literal_text(rate_url):
    url, db = rate_url
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page()
        page.goto(url + "/rate", timeout=60_000)
        name = page.get_by_role("textbox", name="Rater name")
        name.fill("kim")
        name.press("Enter")
        page.get_by_text("Item h0", exact=True).wait_for(timeout=60_000)
        # The hostile text is on the page as characters, not as markup; its script never ran.
        assert page.get_by_text(HOSTILE, exact=True).count() == 2
        assert page.evaluate("window.pwned === undefined")
        page.get_by_role("heading", name="Rate", exact=True).click()  # focus leaves the name box
        second = press(page, "4", "h0")
        third = press(page, "2", second)
        fourth = press(page, "s", third)
        page.keyboard.press("u")  # undo the skip: the third item is back
        page.get_by_text(f"Item {third}", exact=True).wait_for(timeout=30_000)
        press(page, "5", third)
        browser.close()
    with Library(db) as lib:
        acts = lib.current_ratings(lib.get_dataset("aaa-hostile")["id"], "coherence")["kim"]
    assert {i: a["rating"] for i, a in acts.items()} == {"h0": 4.0, second: 2.0, third: 5.0}, json.dumps(acts)
    assert fourth not in acts
