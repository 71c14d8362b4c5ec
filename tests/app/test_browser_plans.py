"""Which judge scored what, in headless Chromium: the Align page never shows a difference between two judges as a
prompt's difference unflagged, and the cascade section draws its curve from two runs started on the Score page.

The app runs with the scripted judge (a provider plugin); runs are jobs of the library scored by worker processes.
"""

from __future__ import annotations

import pytest
from browser_support import browser_page, click_button, playwright_api, serve_app, settle
from runner_helpers import dimension
from scripted_app_judge import plugin_env
from test_browser import choose, go

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run.plan import JudgeChoice, RunScope, plan_run, start_run
from geval_core.run.splits import make_split
from geval_core.types import JudgeSettings
from prompt_library import Library

pytestmark = [pytest.mark.browser, pytest.mark.slow]
JOB_MS = (
    120_000  # a worker process starts, imports the workbench and scores the sample with the scripted judge
)


def pinned(model: str) -> JudgeSettings:
    return JudgeSettings(provider="scripted", model=model)


@pytest.fixture
def aligned_library(tmp_path):
    """The sample set split by document; crisp@1 pinned to judge-a and crisp@2 pinned to judge-b, each scored on
    the dev side by its own pinned judge (two judges: their difference is not the prompts')."""
    path = tmp_path / "align.db"
    with Library(path) as lib:
        sample = lib.get_dataset("sample")
        split, _ = make_split(lib, sample.id, 0.6, "group", 3)
        base = lib.freeze(dimension(pinned("judge-a")), name="crisp").prompt
        cand = lib.freeze(
            dimension(pinned("judge-b"), definition="How well the summary reads as one account."),
            name="crisp",
        ).prompt
        for prompt in (base, cand):
            plan = plan_run(
                lib, prompt, sample.id, JudgeChoice(), RunScope(side="dev", item_ids=tuple(split["dev"]))
            )
            assert start_run(lib, plan, ScriptedJudge()).status == "done"
    return path


def test_the_align_page_flags_a_comparison_across_judges_and_runs_one_judge_for_all(
    chromium, tmp_path, aligned_library
):
    expect = playwright_api.expect
    with (
        serve_app(tmp_path, aligned_library, **plugin_env()) as url,
        browser_page(chromium, tmp_path) as page,
    ):
        page.goto(url)
        go(page, "Align")
        choose(page, "stSelectbox", "Base prompt", "crisp@1")
        settle(page)
        page.get_by_text("Each prompt's pinned judge", exact=False).first.click()
        settle(page)
        expect(page.get_by_text("crisp@1 → crisp@2")).to_be_visible(timeout=60_000)
        # The runs found are each prompt's own judge's: the comparison says it is across judges.
        expect(page.get_by_text("Different judges (model)", exact=False).first).to_be_visible()
        expect(
            page.get_by_text("scripted:judge-a in process → scripted:judge-b in process", exact=False)
        ).to_be_visible()
        # One judge for every run: none of the stored runs is that judge's, so nothing is compared until both
        # prompts are scored by it.
        choose(page, "stSelectbox", "Judge", "Scripted test judge")
        page.get_by_text("The sidebar's judge, for every prompt", exact=False).first.click()
        settle(page)
        expect(page.get_by_text("Different judges", exact=False)).to_have_count(0)
        click_button(
            page, "Score the base crisp@1 on the dev side (" + dev_count(aligned_library) + " items)"
        )
        expect(page.get_by_text("Where the judge and people disagree (dev side)")).to_be_visible(
            timeout=JOB_MS
        )
        click_button(
            page, "Score candidate crisp@2 on the dev side (" + dev_count(aligned_library) + " items)"
        )
        expect(page.get_by_text("crisp@1 → crisp@2")).to_be_visible(timeout=JOB_MS)
        expect(
            page.get_by_text("scripted:scripted-1 in process → scripted:scripted-1 in process", exact=False)
        ).to_be_visible()
        expect(page.get_by_text("Different judges", exact=False)).to_have_count(0)  # one judge: not flagged
    with Library(aligned_library) as lib:
        models = sorted(run.judge.model for run in lib.list_runs())
    assert models == ["judge-a", "judge-b", "scripted-1", "scripted-1"]


def dev_count(path) -> str:
    from geval_core.run.splits import get_split

    with Library(path) as lib:
        return str(len(get_split(lib, lib.get_dataset("sample").id)["dev"]))


@pytest.fixture
def cascade_library(tmp_path):
    """Two prompts of one dimension, each pinned to its judge: the cheap and the strong one."""
    path = tmp_path / "cascade.db"
    with Library(path) as lib:
        lib.freeze(dimension(pinned("cheap-model")), name="cheap")
        lib.freeze(
            dimension(pinned("strong-model"), definition="How well the summary reads as one account."),
            name="strong",
        )
    return path


def done_runs(path) -> int:
    with Library(path) as lib:
        return sum(run.status == "done" for run in lib.list_runs())


def wait_until(condition, page, bound_ms: int = JOB_MS) -> None:
    """Wait for a state of the library (a worker's run finished), looking every half second, within a bound."""
    for _ in range(bound_ms // 500):
        if condition():
            return
        page.wait_for_timeout(500)
    raise AssertionError("the library never reached the state waited for")


def test_the_cascade_section_draws_a_curve_from_two_score_page_runs(chromium, tmp_path, cascade_library):
    expect = playwright_api.expect
    with (
        serve_app(tmp_path, cascade_library, **plugin_env()) as url,
        browser_page(chromium, tmp_path) as page,
    ):
        page.goto(url)
        go(page, "Score")
        for count, name in enumerate(("cheap@1", "strong@1"), start=1):
            settle(page)
            box = (
                page.get_by_test_id("stSelectbox")
                .filter(has=page.get_by_text("Frozen prompt", exact=True))
                .first
            )
            if not box.is_visible():  # the New run box folds once a run exists
                page.get_by_text("New run", exact=True).click()
                expect(box).to_be_visible(timeout=30_000)
            choose(page, "stSelectbox", "Frozen prompt", name)
            choose(page, "stSelectbox", "Dataset", "sample@1")
            expect(
                page.get_by_text(f"Will score with scripted:{name.split('@')[0]}-model in process")
            ).to_be_visible(timeout=30_000)
            click_button(page, "Start run")
            wait_until(lambda n=count: done_runs(cascade_library) == n, page)
            expect(page.get_by_text("Tie rate, top-token").first).to_be_visible(timeout=JOB_MS)
        with Library(cascade_library) as lib:
            runs = lib.list_runs()
            assert sorted(r.status for r in runs) == ["done", "done"]
            assert all(run.item_ids is not None for run in runs)  # Score-page runs: chosen items stored
        page.get_by_text("Score with a cascade: a cheap judge, the strong one where it is unsure").click()
        settle(page)
        expect(page.get_by_text("Calibration dataset")).to_be_visible(timeout=30_000)
        click_button(page, "Draw the curve")
        expect(
            page.get_by_text("items with both judges' scores and a human rating", exact=False).first
        ).to_be_visible(timeout=JOB_MS)
        expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
        expect(
            page.get_by_role("button", name="Freeze the cascade")
        ).to_be_visible()  # a threshold off this curve
