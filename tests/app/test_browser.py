"""The app in real headless Chromium: design → generate steps → freeze → score with the local judge →
open an item's distribution → agreement numbers; a screenshot of every page under tmp_path.

`streamlit run app.py` serves a temporary library on a free loopback port; the judge is the real
embedded SmolLM2 (no key, no network). The scored subset includes the sample item whose summary
holds `<script>` and Markdown, which must show literally.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_support import browser_page, click_button, playwright_api, serve_app

SLOW_MS = 240_000  # the local judge writes steps in ~20 s and scores an item in ~2 s on two cores
NUMBER = re.compile(r"^-?\d+\.\d{3}$")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def app_url(gguf_path, tmp_path):
    """`streamlit run app.py` on a free loopback port with a temporary library and the local judge
    (gguf_path: the local extra is there, or the test skips locally and fails under CI)."""
    with serve_app(tmp_path, tmp_path / "browser.db") as url:
        yield url


def choose(page, testid: str, label: str, option: str) -> None:
    """Pick an option in a Streamlit selectbox / multiselect found by its label."""
    box = page.get_by_test_id(testid).filter(has=page.get_by_text(label, exact=True))
    # A rerun that lands between opening the list and clicking (the end of a live run reruns the
    # page) closes the list again: open it anew, a bounded number of times.
    for attempt in range(4):
        box.locator("input").first.click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=10_000)
            break
        except playwright_api.Error:
            if attempt == 3:
                raise
    page.keyboard.press("Escape")  # a multiselect stays open, hiding the page from role queries


def metric_value(page, label: str) -> str:
    card = page.get_by_test_id("stMetric").filter(has=page.get_by_text(label, exact=True)).first
    return card.get_by_test_id("stMetricValue").inner_text().strip()


def go(page, name: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()


def snap(page, tmp_path: Path, shots: list, name: str) -> None:
    path = tmp_path / f"{len(shots) + 1:02d}-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    shots.append(path)


def test_design_freeze_score_inspect_agree(chromium, app_url, tmp_path):
    shots: list[Path] = []
    dialogs: list[str] = []
    with browser_page(chromium, tmp_path) as page:
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        flow(page, app_url, tmp_path, shots)
    assert dialogs == []  # the <script> in the item never ran
    assert all(s.stat().st_size > 10_000 for s in shots)


def flow(page, app_url: str, tmp_path: Path, shots: list) -> None:
    """The user's path through the five pages."""
    expect = playwright_api.expect
    page.goto(app_url)
    expect(page.get_by_text("Next: Describe one quality dimension.", exact=False)).to_be_visible(
        timeout=60_000
    )
    go(page, "Design")  # the Start page opens first; the path's steps are walked in test_browser_start.py
    # Design: generate the steps once with the local judge, then freeze.
    expect(page.get_by_text("Design a dimension")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("not a trustworthy judge")).to_be_visible()
    click_button(page, "Example: coherence")  # a new library opens on a blank form, the examples beside it
    click_button(page, "Generate evaluation steps")
    click_button(page, "Replace my steps")  # the example's steps were written by hand: the page asks first
    expect(page.get_by_text(re.compile(r"Generated \d+ steps with SmolLM2"))).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text(re.compile(r"Steps written by SmolLM2"))).to_be_visible()
    click_button(page, "Freeze")
    expect(page.get_by_text("Frozen as coherence@2")).to_be_visible(timeout=60_000)
    snap(page, tmp_path, shots, "design-frozen")
    # Library and Datasets: the new version is listed; the sample set is there.
    go(page, "Library")
    expect(page.get_by_text("Export coherence@2")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Import a prompt export")).to_be_visible()
    snap(page, tmp_path, shots, "library")
    go(page, "Datasets")
    expect(page.get_by_text("Browse items of")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Upload a dataset (CSV, JSONL or a JSON array)")).to_be_visible(timeout=60_000)
    snap(page, tmp_path, shots, "datasets")
    # Score: the new prompt on two documents of the sample set (one holds <script> and Markdown).
    go(page, "Score")
    expect(page.get_by_text("Frozen prompt")).to_be_visible(timeout=60_000)
    choose(page, "stSelectbox", "Frozen prompt", "coherence@2")
    choose(page, "stMultiSelect", "Only these groups (optional)", "d01")
    choose(page, "stMultiSelect", "Only these groups (optional)", "d05")
    expect(page.get_by_test_id("stMetric").filter(has_text="Items").first).to_contain_text("6")
    click_button(page, "Start run")
    expect(page.get_by_text("Tie rate, top-token").first).to_be_visible(timeout=SLOW_MS)
    assert metric_value(page, "Judged") == "6 / 6"
    choose(page, "stSelectbox", "Open item", "d05-a")
    # .first: while Streamlit swaps the chart for the newly opened item, two copies can coexist.
    expect(page.get_by_text("Probability on each rating").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("other tokens").first).to_be_visible()
    expect(page.get_by_text("<script>alert(1)</script>", exact=False).first).to_be_visible()
    expect(page.get_by_text("**Update now:**", exact=False).first).to_be_visible()
    assert page.locator("strong", has_text="Update now").count() == 0  # no Markdown rendered
    assert NUMBER.match(metric_value(page, "Weighted score"))
    snap(page, tmp_path, shots, "score-item")
    # Agreement: numbers against the illustrative human ratings.
    go(page, "Agreement")
    expect(page.get_by_text("Spearman ρ").first).to_be_visible(timeout=120_000)
    assert metric_value(page, "Items") == "6"
    for label in ("Spearman ρ", "Kendall τ-b", "Tie rate (judge)"):
        assert NUMBER.match(metric_value(page, label)), (label, metric_value(page, label))
    # The diagnostics are computed when their panel is opened: the click reruns the page.
    assert page.get_by_text("ECE", exact=True).count() == 0  # closed: not computed, not drawn
    page.get_by_text("Calibration", exact=True).first.click()
    expect(page.get_by_text("ECE", exact=True).first).to_be_visible(timeout=60_000)
    assert NUMBER.match(metric_value(page, "ECE")), metric_value(page, "ECE")
    snap(page, tmp_path, shots, "agreement")
