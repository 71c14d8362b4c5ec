"""The newcomer's way through in headless Chromium (issue 14): a blank dimension → freeze → upload a CSV with
a mapping → score → Stop → the stopped run shown with Resume → resume to the end.

The app runs with the scripted judge (a provider plugin) held after a few items (a hold file), so a run stops
on a state the test chose, never on a clock. Runs are jobs of the library: a reload or a closed tab leaves them
running, and a page opened later finds them finished.
"""

from __future__ import annotations

import re

import pytest
from browser_support import browser_page, click_button, playwright_api, serve_app, settle
from scripted_app_judge import HOLD_ENV, plugin_env
from test_browser import choose, go, metric_value

from prompt_library import Library

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ITEMS = 30
HELD_AFTER = 4  # the scripted judge answers this many requests of a worker, then waits for the hold to go
DEFINITION = "How clearly the response answers in the given context."
ANCHORS = ["Unclear throughout.", "Mostly unclear.", "Partly clear.", "Mostly clear.", "Clear throughout."]


@pytest.fixture
def hold(tmp_path):
    """The hold file: while it exists, a worker's requests after the first HELD_AFTER wait."""
    path = tmp_path / "hold"
    path.write_text(str(HELD_AFTER))
    return path


@pytest.fixture
def scripted_app(chromium, tmp_path, hold):
    """`streamlit run app.py` with the scripted judge, held after HELD_AFTER items per worker."""
    with serve_app(tmp_path, tmp_path / "newcomer.db", **plugin_env(), **{HOLD_ENV: str(hold)}) as url:
        yield url


def type_into(page, role: str, name: str, text: str) -> None:
    """Fill a text box once the page is idle (mid-rerun, a box can briefly exist twice)."""
    settle(page)
    page.get_by_role(role, name=name, exact=True).first.fill(text)


def fill_anchors(page, expect) -> None:
    """Type the five anchors into the data editor (rating 5 first), each once the page shows the one before.

    The grid is a canvas: click the description cell of the row, open the cell editor, type, commit. A commit racing the previous rerun can be dropped: try again, a few times.
    """
    for point, text in zip(range(5, 0, -1), reversed(ANCHORS), strict=True):
        shown = page.get_by_text(f"- {point}: {text}", exact=False).first
        for attempt in range(4):
            settle(page)  # an edit made while the page reruns is redrawn away
            page.keyboard.press("Escape")
            # The grid's canvas: a 35 px header, then rows of 35 px from rating 5 down.
            box = page.get_by_test_id("stDataFrame").first.locator("canvas").first.bounding_box()
            # A double click opens the cell editor; keys typed before it is open are lost, so wait for it.
            page.mouse.dblclick(box["x"] + box["width"] * 0.6, box["y"] + 35 * (6 - point) + 17)
            editor = page.locator(
                "#portal textarea, [data-testid='stDataFrameGlideDataEditorOverlay'] textarea"
            )
            try:
                editor.first.wait_for(state="visible", timeout=3_000)
            except Exception:
                continue
            editor.first.fill(text)
            # Enter commits and moves down; on the last row there is no row below, so click outside instead.
            if point > 1:
                page.keyboard.press("Enter")
            else:
                page.get_by_text("Anchors: what every scale point means").click()
            try:
                expect(shown).to_be_visible(timeout=10_000)
                break
            except AssertionError:
                if attempt == 3:
                    raise


def design(page, expect) -> None:
    """A blank dimension on context and response, steps generated, frozen."""
    click_button(page, "New dimension")
    expect(page.get_by_text("A blank dimension", exact=False)).to_be_visible(timeout=60_000)
    type_into(page, "textbox", "Name", "Clarity")
    page.keyboard.press("Tab")
    expect(page.get_by_text("- Clarity:", exact=False).first).to_be_visible(timeout=30_000)
    type_into(page, "textbox", "Definition", DEFINITION)
    page.keyboard.press("Tab")
    expect(page.get_by_text(f"Clarity (1-5) - {DEFINITION}", exact=False).first).to_be_visible(timeout=30_000)
    type_into(page, "textbox", "Input fields (comma-separated)", "context, response")
    page.keyboard.press("Tab")
    expect(page.get_by_text("Response:", exact=False).first).to_be_visible(timeout=30_000)
    fill_anchors(page, expect)
    click_button(page, "Generate evaluation steps")
    expect(page.get_by_text("Generated 3 steps with scripted-1")).to_be_visible(timeout=60_000)
    click_button(page, "Freeze")  # a click that lands mid-rerun can be dropped by the page being redrawn
    expect(page.get_by_text("Frozen as clarity@1")).to_be_visible(timeout=60_000)


def upload(page, expect, tmp_path) -> None:
    """A CSV whose columns are renamed to the prompt's inputs, imported as a new dataset."""
    path = tmp_path / "answers.csv"
    rows = [f'a{n},"Question {n}, asked plainly.",Answer {n} in a sentence.' for n in range(ITEMS)]
    path.write_text("id,ctx,resp\n" + "\n".join(rows) + "\n", encoding="utf-8")
    go(page, "Datasets")
    expect(page.get_by_text("Upload a dataset", exact=False)).to_be_visible(timeout=60_000)
    page.locator("input[type=file]").set_input_files(str(path))
    expect(page.get_by_text("First rows of answers.csv")).to_be_visible(timeout=60_000)
    choose(page, "stMultiSelect", "Input columns", "ctx")
    choose(page, "stMultiSelect", "Input columns", "resp")
    type_into(page, "textbox", "name for column 'ctx'", "context")
    page.keyboard.press("Tab")
    type_into(page, "textbox", "name for column 'resp'", "response")
    page.keyboard.press("Tab")
    expect(page.get_by_text(f"Preview: {ITEMS} items", exact=False)).to_be_visible(timeout=30_000)
    click_button(page, "Import")
    expect(page.get_by_text(f"Imported answers.csv as answers@1 ({ITEMS} items).")).to_be_visible(
        timeout=60_000
    )


def score_stop_resume(page, expect, hold) -> None:
    """Start a run, stop it early, find it selected with its Resume button, resume to the end."""
    go(page, "Score")
    expect(page.get_by_text("Frozen prompt")).to_be_visible(timeout=60_000)
    choose(page, "stSelectbox", "Frozen prompt", "clarity@1")
    choose(page, "stSelectbox", "Dataset", "answers@1")
    type_into(page, "spinbutton", "Concurrent requests", "1")
    page.keyboard.press("Tab")
    click_button(page, "Start run")
    progress = page.get_by_text(re.compile(rf"^{HELD_AFTER} / {ITEMS} items · about \d+ s left$"))
    expect(progress).to_be_visible(timeout=60_000)
    click_button(page, "Stop run")
    expect(page.get_by_text("Run stopped.", exact=False)).to_be_visible(timeout=60_000)
    judged = int(metric_value(page, "Judged").split(" / ")[0])
    assert judged == HELD_AFTER  # the held call was dropped, never written
    hold.unlink()
    resume = page.get_by_role("button", name=f"Resume ({ITEMS - judged} items)")
    expect(resume).to_be_visible()
    resume.click()
    expect(page.get_by_test_id("stMetric").filter(has_text="Judged").first).to_contain_text(
        f"{ITEMS} / {ITEMS}", timeout=120_000
    )
    expect(page.get_by_text(f"Judged {ITEMS}/{ITEMS} · done")).to_be_visible()  # no stale "cancelled"


def test_new_dimension_upload_score_stop_resume(scripted_app, chromium, tmp_path, hold):
    expect = playwright_api.expect
    with browser_page(chromium, tmp_path, height=2200) as page:
        page.goto(scripted_app)
        go(page, "Design")  # the Start page opens first
        expect(page.get_by_text("Design a dimension")).to_be_visible(timeout=60_000)
        design(page, expect)
        upload(page, expect, tmp_path)
        score_stop_resume(page, expect, hold)


def wait_for(check, timeout: float = 120.0) -> None:
    """Wait for a state of the library (the deadline only bounds a hang)."""
    import time

    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the state never came"
        time.sleep(0.1)


def score_sample(page, expect, url: str, items: int | None = None, groups: tuple[str, ...] = ()) -> None:
    """Start a run of the sample set with the sidebar's judge (the scripted one, held), one call at a time:
    the first `items`, or the items of `groups`."""
    page.goto(url)
    go(page, "Score")
    expect(page.get_by_text("Frozen prompt")).to_be_visible(timeout=60_000)
    choose(page, "stSelectbox", "Dataset", "sample@1")
    page.get_by_text("The sidebar's judge: ", exact=False).first.click()
    settle(page)
    if items is not None:
        type_into(page, "spinbutton", "Items to score (the first N)", str(items))
        page.keyboard.press("Tab")
    for group in groups:
        choose(page, "stMultiSelect", "Only these groups (optional)", group)
    type_into(page, "spinbutton", "Concurrent requests", "1")
    page.keyboard.press("Tab")
    settle(page)
    click_button(page, "Start run")


def test_a_run_outlives_two_reloads_and_a_closed_tab(scripted_app, chromium, tmp_path, hold):
    """Start, reload twice (each reload attaches to the same run), close the tab, reopen: the run finished
    with every item judged once."""
    expect = playwright_api.expect
    items = 12
    with browser_page(chromium, tmp_path) as page:
        score_sample(page, expect, scripted_app, items=items)
        held = page.get_by_text(re.compile(rf"^{HELD_AFTER} / {items} items · about \d+ s left$"))
        expect(held).to_be_visible(timeout=60_000)
        for _ in range(2):
            page.reload()
            expect(held).to_be_visible(timeout=60_000)  # the same run, still going, drawn from the library
            expect(page.get_by_role("button", name="Stop run")).to_be_visible()
    lib = Library(tmp_path / "newcomer.db", seed_examples=False)
    (run,) = lib.list_runs()
    assert lib.job_state(run.id) == "running"  # the tab is closed, the worker is not
    hold.unlink()
    wait_for(lambda: lib.job_state(run.id) == "ended")
    with browser_page(chromium, tmp_path) as page:
        page.goto(scripted_app)
        go(page, "Score")
        expect(page.get_by_test_id("stMetric").filter(has_text="Judged").first).to_contain_text(
            f"{items} / {items}", timeout=60_000
        )
        expect(page.get_by_text(f"Last session of this run: {items} judged", exact=False)).to_be_visible()
    stored = lib.conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT item_id), MAX(attempt) FROM judgments WHERE run_id = ?", [run.id]
    ).fetchone()
    assert stored == (items, items, 0)  # every item once
    assert lib.get_run(run.id).status == "done"


def test_stop_a_run_on_chosen_groups_then_resume_it(scripted_app, chromium, tmp_path, hold):
    """Only the chosen documents are scored; Stop ends the run after the items answered (the held call is
    dropped, never written) and Resume judges the rest once."""
    expect = playwright_api.expect
    with browser_page(chromium, tmp_path) as page:
        score_sample(page, expect, scripted_app, groups=("d02", "d03", "d04"))
        held = page.get_by_text(re.compile(rf"^{HELD_AFTER} / \d+ items · about \d+ s left$"))
        expect(held).to_be_visible(timeout=60_000)
        total = int(held.inner_text().split(" / ")[1].split()[0])
        click_button(page, "Stop run")
        expect(page.get_by_text("Run stopped.", exact=False)).to_be_visible(timeout=60_000)
        assert int(metric_value(page, "Judged").split(" / ")[0]) == HELD_AFTER
        hold.unlink()
        page.get_by_role("button", name=f"Resume ({total - HELD_AFTER} items)").click()
        expect(page.get_by_test_id("stMetric").filter(has_text="Judged").first).to_contain_text(
            f"{total} / {total}", timeout=120_000
        )
    lib = Library(tmp_path / "newcomer.db", seed_examples=False)
    (run,) = lib.list_runs()
    groups = {i.id: i.group for i in lib.dataset_items(run.dataset_id)}
    stored = [r["item_id"] for r in lib.judgments(run.id)]
    assert len(stored) == len(set(stored)) == total  # every chosen item once
    assert {groups[i] for i in stored} == {"d02", "d03", "d04"}
