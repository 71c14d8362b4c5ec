"""The Rate page in real headless Chromium: rate items with the keyboard (digits, S to skip, U to undo) and
see hostile item text shown literally. No judge is needed: the library's sample set and prompts suffice."""

from __future__ import annotations

import json

import pytest
from browser_support import browser_page, serve_app

from geval_core.types import Item
from prompt_library import Library

HOSTILE = "<script>window.pwned=1</script> **bold** [link](http://evil.example) :red[x]"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def rate_url(chromium, tmp_path):
    """`streamlit run app.py` on a free loopback port; the library holds a first item with hostile text."""
    db = tmp_path / "rate.db"
    with Library(db) as lib:
        sample = lib.dataset_items("sample")
        lib.import_items(
            "aaa-hostile", [Item("h0", {"document": HOSTILE, "summary": HOSTILE}, {}, None), *sample[:5]]
        )
    with serve_app(tmp_path, db) as url:
        yield url, db


def shown_item(page) -> str:
    return page.get_by_role("heading", name="Item ").first.inner_text().strip().removeprefix("Item ")


def press(page, key: str, before: str) -> str:
    """Press a key on the page body and wait for the next item to appear."""
    page.keyboard.press(key)
    page.wait_for_function("t => !document.body.innerText.includes('Item ' + t)", arg=before, timeout=30_000)
    return shown_item(page)


def test_keyboard_rating_and_literal_text(rate_url, chromium, tmp_path):
    url, db = rate_url
    with browser_page(chromium, tmp_path) as page:
        page.goto(url + "/rate", timeout=60_000)
        name = page.get_by_role("textbox", name="Rater name")
        name.fill("kim")
        name.press("Enter")
        page.get_by_text("Item h0", exact=True).wait_for(timeout=60_000)
        # The hostile text is on the page as characters, not as markup; its script never ran. (Both fields are drawn
        # after the item's heading: wait for the second before counting.)
        page.get_by_text(HOSTILE, exact=True).nth(1).wait_for(timeout=30_000)
        assert page.get_by_text(HOSTILE, exact=True).count() == 2
        assert page.evaluate("window.pwned === undefined")
        page.get_by_role("heading", name="Rate", exact=True).click()  # focus leaves the name box
        second = press(page, "4", "h0")
        third = press(page, "2", second)
        fourth = press(page, "s", third)
        page.keyboard.press("u")  # undo the skip: the third item is back
        page.get_by_text(f"Item {third}", exact=True).wait_for(timeout=30_000)
        press(page, "5", third)
    with Library(db) as lib:
        acts = lib.current_ratings(lib.get_dataset("aaa-hostile").id, "coherence")["kim"]
    assert {i: a["rating"] for i, a in acts.items()} == {"h0": 4.0, second: 2.0, third: 5.0}, json.dumps(acts)
    assert fourth not in acts
