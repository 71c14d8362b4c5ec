"""Model work in headless Chromium: Generate shows which model is writing the steps and for how long, and can be
cancelled (the steps stay as they were); generating again writes them. The scripted judge holds its steps
generation while a file exists, so the test cancels on a state it chose, not on a clock."""

from __future__ import annotations

import re

import pytest
from browser_support import browser_page, click_button, playwright_api, serve_app, settle
from scripted_app_judge import WRITING_HOLD_ENV, plugin_env
from test_browser import choose, go

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_generate_shows_progress_and_can_be_cancelled(chromium, tmp_path):
    expect = playwright_api.expect
    hold = tmp_path / "writing-hold"
    hold.write_text("hold")
    with (
        serve_app(tmp_path, tmp_path / "work.db", **plugin_env(), **{WRITING_HOLD_ENV: str(hold)}) as url,
        browser_page(chromium, tmp_path) as page,
    ):
        page.goto(url)
        go(page, "Design")
        choose(page, "stSelectbox", "Judge", "Scripted test judge")
        # A new library opens on a blank form, the examples beside it; loading one reruns the page.
        click_button(page, "Example: coherence")
        settle(page)
        before = page.get_by_role("textbox", name="Steps (one per line; edit freely before freezing)")
        expect(before).to_be_visible(timeout=60_000)
        expect(before).not_to_have_value("", timeout=30_000)  # the example's steps, once loaded
        steps_before = before.input_value()
        click_button(page, "Generate evaluation steps")
        click_button(
            page, "Replace my steps"
        )  # the example's steps were written by hand: the page asks first
        working = page.get_by_text(
            re.compile(r"Writing the evaluation steps with scripted:scripted-1 · \d+ s so far")
        )
        expect(working).to_be_visible(timeout=60_000)
        expect(page.get_by_text(re.compile(r"· [1-9]\d* s so far"))).to_be_visible(
            timeout=30_000
        )  # it counts
        page.get_by_role("button", name="Cancel", exact=True).click()
        expect(page.get_by_text("Step generation cancelled: the steps are unchanged.")).to_be_visible(
            timeout=60_000
        )
        box = page.get_by_role("textbox", name="Steps (one per line; edit freely before freezing)")
        assert box.input_value() == steps_before
        hold.unlink()
        click_button(page, "Generate evaluation steps")
        click_button(page, "Replace my steps")
        expect(page.get_by_text("Generated 3 steps with scripted-1")).to_be_visible(timeout=60_000)


def test_step_variation_shows_progress_outside_its_section_and_its_report_open(chromium, tmp_path):
    expect = playwright_api.expect
    hold = tmp_path / "writing-hold"
    hold.write_text("hold")
    with (
        serve_app(tmp_path, tmp_path / "work.db", **plugin_env(), **{WRITING_HOLD_ENV: str(hold)}) as url,
        browser_page(chromium, tmp_path) as page,
    ):
        page.goto(url)
        go(page, "Design")
        choose(page, "stSelectbox", "Judge", "Scripted test judge")
        click_button(page, "Example: coherence")
        settle(page)
        page.get_by_text("Step variation: how different are steps generated k times?").click()
        click_button(page, "Generate k times and compare")
        working = page.get_by_text(
            re.compile(r"Generating the steps k times to compare with scripted:scripted-1 · \d+ s so far")
        )
        expect(working).to_be_visible(timeout=60_000)  # shown, whether the section stays open or not
        expect(page.get_by_role("button", name="Cancel", exact=True)).to_be_visible(timeout=30_000)
        hold.unlink()
        expect(page.get_by_text("Mean similarity between generations (1 = identical)")).to_be_visible(
            timeout=60_000
        )  # the report in a section that opens for it
        click_button(page, "Use generation 1 as the steps")
        expect(page.get_by_text("using this generation replaces them", exact=False)).to_be_visible(
            timeout=30_000
        )
