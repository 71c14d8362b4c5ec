"""The Start page's path walked in headless Chromium from a library with nothing of the user's to an exported
prompt, clicking only what the pages offer (the Start page's "next step" button between the steps), and the
choices a page made kept across a reload and a new browser context.

The app runs with the scripted judge (a provider plugin); runs are jobs of the library.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from browser_support import browser_page, click_button, playwright_api, serve_app, settle
from scripted_app_judge import plugin_env
from test_browser import choose, go
from test_browser_newcomer import design, type_into

from prompt_library import Library

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ITEMS = 12
JOB_MS = 120_000


def next_step(page, title: str, *shown: str) -> None:
    """Back on the Start page, the next step it names is `title` (and it shows `shown`): click its button."""
    go(page, "Start")
    playwright_api.expect(page.get_by_text(f"Next: {title}.", exact=False)).to_be_visible(timeout=60_000)
    for text in shown:
        playwright_api.expect(page.get_by_text(text, exact=False).first).to_be_visible()
    click_button(page, f"Go to the next step: {title}")


def upload_rated(page, expect, tmp_path) -> None:
    """A CSV with context, response and a clarity rating, imported with the rating named for the dimension."""
    path = tmp_path / "rated.csv"
    rows = [
        f'a{n},"Question {n}, asked plainly.",Answer {n} in a sentence.,{1 + n % 5}' for n in range(ITEMS)
    ]
    path.write_text("id,context,response,stars\n" + "\n".join(rows) + "\n", encoding="utf-8")
    expect(page.get_by_text("Upload a dataset", exact=False)).to_be_visible(timeout=60_000)
    page.locator("input[type=file]").set_input_files(str(path))
    expect(page.get_by_text("First rows of rated.csv")).to_be_visible(timeout=60_000)
    # context and response are clarity@1's inputs: the form has chosen them already.
    choose(page, "stMultiSelect", "Human rating columns (optional)", "stars")
    type_into(page, "textbox", "name for column 'stars'", "clarity")
    page.keyboard.press("Tab")
    expect(page.get_by_text(f"Preview: {ITEMS} items", exact=False)).to_be_visible(timeout=30_000)
    click_button(page, "Import")
    expect(page.get_by_text(f"Imported rated.csv as rated@1 ({ITEMS} items).")).to_be_visible(timeout=60_000)


def test_the_start_page_leads_from_nothing_to_an_exported_prompt(chromium, tmp_path):
    expect = playwright_api.expect
    db = tmp_path / "start.db"
    with (
        serve_app(tmp_path, db, **plugin_env()) as url,
        browser_page(chromium, tmp_path, height=2200) as page,
    ):
        page.goto(url)
        expect(page.get_by_text("Next: Describe one quality dimension.", exact=False)).to_be_visible(
            timeout=60_000
        )
        click_button(page, "Go to the next step: Describe one quality dimension")
        choose(page, "stSelectbox", "Judge", "Scripted test judge")  # the sidebar's judge writes the steps
        design(
            page, expect
        )  # a blank dimension on context and response, steps generated, frozen as clarity@1
        next_step(page, "Import data people rated")
        upload_rated(page, expect, tmp_path)
        next_step(page, "Score it with a judge")
        choose(page, "stSelectbox", "Frozen prompt", "clarity@1")
        choose(page, "stSelectbox", "Dataset", "rated@1")
        page.get_by_text("The sidebar's judge: ", exact=False).first.click()
        settle(page)
        click_button(page, "Start run")
        expect(page.get_by_text("Tie rate, top-token").first).to_be_visible(timeout=JOB_MS)
        # A finished run on rated data: Score is done, and the Agreement page is next until it has been seen.
        next_step(
            page,
            "Compare the judge with people",
            "1 finished run of your prompts",
            "open the Agreement page",
        )
        expect(page.get_by_role("heading", name="Agreement and comparison")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Bootstrap resamples", exact=False).first).to_be_visible(timeout=60_000)
        next_step(page, "Export the frozen prompt", "their agreement with people shown")
        expect(page.get_by_role("combobox", name="Prompt")).to_have_value(
            "clarity", timeout=60_000
        )  # the own one
        with page.expect_download() as download:
            click_button(page, "Download export (JSON)")
        saved = tmp_path / "clarity.json"
        download.value.save_as(saved)
        settle(page)  # the download's callback has recorded the export
        go(page, "Start")
        expect(page.get_by_text("exported", exact=False).first).to_be_visible(
            timeout=60_000
        )  # every step done
    with Library(db) as lib:
        assert lib.import_prompt(saved).prompt.label == "clarity@1"  # the same content: the same version


def test_choices_survive_a_reload_and_a_new_browser_context(chromium, tmp_path):
    expect = playwright_api.expect
    db = tmp_path / "kept.db"
    with Library(db) as lib:
        fluency = lib.get_prompt("fluency").dimension
        lib.freeze(replace(fluency, definition="How plainly the summary is written."), name="plainness")
    with serve_app(tmp_path, db, **plugin_env()) as url:
        with browser_page(chromium, tmp_path) as page:
            page.goto(url)
            go(page, "Score")
            choose(page, "stSelectbox", "Frozen prompt", "plainness@1")
            choose(page, "stSelectbox", "Judge", "Scripted test judge")
            settle(page)
            page.reload()
            go(page, "Score")
            expect(page.get_by_role("combobox", name="Frozen prompt")).to_have_value(
                "plainness@1", timeout=60_000
            )
        with browser_page(chromium, tmp_path) as fresh:  # another browser: no cookie, no session of the first
            fresh.goto(url)
            go(fresh, "Score")
            expect(fresh.get_by_role("combobox", name="Frozen prompt")).to_have_value(
                "plainness@1", timeout=60_000
            )
            expect(fresh.get_by_role("combobox", name="Judge")).to_have_value("Scripted test judge")
