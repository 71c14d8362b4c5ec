"""AppTest: the Score page with the scripted judge; every number checked by hand from the script."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from itertools import combinations

import pytest
from app_support import after_jobs, metric, open_page, page_text, use_temp_library, values, wait_until

from geval_core import prompts
from geval_core.errors import JudgeError
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeSettings
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def expected(prompt, item) -> tuple[float, int]:
    """The scripted judge's renormalised weighted score and top rating, recomputed by hand."""
    text = "".join(m["content"] for m in prompts.messages(prompt, item))
    digest = hashlib.sha256(text.encode()).digest()
    points = prompt.dimension.scale.points
    weights = [1 + digest[i % len(digest)] for i in range(len(points))]
    top = points[weights.index(max(weights))]
    return sum(p * w for p, w in zip(points, weights, strict=True)) / sum(weights), top


def tie_rate_by_hand(values) -> float:
    pairs = list(combinations(values, 2))
    return sum(round(a, 6) == round(b, 6) for a, b in pairs) / len(pairs)


def start_run(at, n: int):
    at.radio(key="score_judge_source").set_value("sidebar")
    at.run()
    [count] = [w for w in at.number_input if w.label.startswith("Items to score")]
    count.set_value(n)
    at.run()
    return at


def test_cost_first_then_a_live_run_with_hand_checked_scores(lib_path):
    at = start_run(open_page("score"), 6)
    lib = Library(lib_path)
    assert lib.list_runs() == []  # the estimate is shown before anything runs
    assert metric(at, "Items") == "6"
    assert int(metric(at, "Input tokens (est.)").replace(",", "")) > 0
    assert (
        metric(at, "of which cached (est.)") == "not predicted"
    )  # no documented cache rule: no 0 to mislead
    after_jobs(at.button(key="score_start").click().run(), lib_path)
    assert not at.exception and not at.error
    prompt = lib.get_prompt("coherence")
    items = lib.dataset_items("sample")[:6]
    want = {i.id: expected(prompt, i) for i in items}
    assert metric(at, "Judged") == "6 / 6"
    table = at.dataframe[-1].value
    assert list(table["item"]) == [i.id for i in items]
    for _, row in table.iterrows():
        score, top = want[row["item"]]
        assert row["score"] == pytest.approx(score, abs=1e-9)
        assert row["top-token"] == top
        assert row["valid mass"] == pytest.approx(0.9, abs=1e-9)  # the script leaves 10% on "The"
    assert metric(at, "Tie rate, weighted") == f"{tie_rate_by_hand([s for s, _ in want.values()]):.3f}"
    assert metric(at, "Tie rate, top-token") == f"{tie_rate_by_hand([t for _, t in want.values()]):.3f}"
    assert metric(at, "Unparsed replies") == "0" and metric(at, "Low valid mass") == "0"
    assert "Model version the judge reported: scripted-1" in page_text(at)
    # The first item is open: its numbers and its text, shown verbatim.
    assert metric(at, "Weighted score") == f"{want[items[0].id][0]:.3f}"
    assert metric(at, "Valid mass") == "0.900"
    assert items[0].fields["summary"] in [c.value for c in at.code]


def test_selecting_a_row_opens_that_item(lib_path):
    at = start_run(open_page("score"), 6)
    after_jobs(at.button(key="score_start").click().run(), lib_path)
    at.session_state["score_table"] = {"selection": {"rows": [3], "columns": [], "cells": []}}
    at.run()
    lib = Library(lib_path)
    item = lib.dataset_items("sample")[3]
    assert at.selectbox(key="score_item").value == item.id
    score, top = expected(lib.get_prompt("coherence"), item)
    assert metric(at, "Weighted score") == f"{score:.3f}"
    assert metric(at, "Top-token score") == str(top)
    assert metric(at, "Human") == f"{item.human['coherence']:.3g}"


def test_the_run_downloads_as_csv_and_jsonl(lib_path, downloads):
    at = start_run(open_page("score"), 6)
    after_jobs(at.button(key="score_start").click().run(), lib_path)
    buttons = [b for b in at.get("download_button") if b.proto.label in ("Download CSV", "Download JSONL")]
    # The files are written on the click, not on every rerun: the buttons carry no file.
    assert len(buttons) == 2 and all(b.proto.deferred_file_id and not b.proto.url for b in buttons)
    lib = Library(lib_path)
    stored = {r["item_id"]: r for r in lib.judgments(lib.list_runs()[0].id)}
    lines = [json.loads(line) for line in downloads(at, "Download JSONL").splitlines()]
    assert [r["id"] for r in lines] == [i.id for i in lib.dataset_items("sample")[:6]]  # "id", as the CLI's
    for row in lines:
        assert row["score"] == pytest.approx(stored[row["id"]]["score"])
        assert sum(row["distribution"].values()) == pytest.approx(1.0)
    table = list(csv.DictReader(io.StringIO(downloads(at, "Download CSV"))))
    assert [r["id"] for r in table] == [r["id"] for r in lines]
    assert [float(r["score"]) for r in table] == pytest.approx([r["score"] for r in lines])


def test_markup_in_an_item_is_shown_literally(lib_path):
    lib = Library(lib_path)
    items = [i for i in lib.dataset_items("sample") if "<script>" in i.fields["summary"]]
    assert items, "the sample set has an item with <script> and markdown"
    run_id = lib.create_run("coherence", "sample", SCRIPTED, item_ids=[items[0].id])
    run_scoring(
        lib.get_prompt("coherence"), items[:1], ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED)
    )
    at = open_page("score")
    assert items[0].fields["summary"] in [c.value for c in at.code]  # st.code: no HTML, no markdown
    assert not any("<script>" in m.value for m in at.markdown)


def test_an_interrupted_run_resumes_without_duplicates(lib_path):
    lib = Library(lib_path)
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")[:6]
    run_id = lib.create_run(prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in items])
    run_scoring(prompt, items[:3], ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_page("score")
    assert metric(at, "Judged") == "3 / 6"
    assert "3 item(s) of this run are not judged yet" in page_text(at)
    after_jobs(at.button(key="score_resume").click().run(), lib_path)
    assert not at.exception and not at.error
    assert metric(at, "Judged") == "6 / 6"
    assert sorted(r["item_id"] for r in lib.judgments(run_id)) == sorted(i.id for i in items)


def held_run(at, lib_path, monkeypatch, tmp_path, items: int, after: int):
    """A run of `items` started on the page whose worker judges `after` of them, one at a time, then waits."""
    hold = tmp_path / "hold"
    hold.write_text(str(after))
    monkeypatch.setenv("GEVAL_TEST_JUDGE_HOLD", str(hold))
    at = start_run(at, items)
    at.number_input(key="score_concurrency_scripted").set_value(1).run()
    at.button(key="score_start").click().run()
    lib = Library(lib_path)
    (run,) = lib.list_runs()
    wait_until(lambda: len(lib.judged_item_ids(run.id)) >= after)
    return lib, run.id, hold


def test_stop_in_any_tab_stops_the_worker_and_a_reload_does_not(lib_path, monkeypatch, tmp_path):
    lib, run_id, hold = held_run(open_page("score"), lib_path, monkeypatch, tmp_path, 30, 4)
    reloaded = open_page("score")  # a reload is a new session: it attaches to the same run
    assert reloaded.button(key="score_stop") and lib.job_state(run_id) == "running"
    assert "reloading or closing this tab does not stop it" in page_text(reloaded)
    assert "4 / 30 items" in reloaded.get("progress")[0].proto.text
    reloaded.button(key="score_stop").click().run()
    after_jobs(reloaded, lib_path)
    assert lib.get_run(run_id).status == "cancelled"
    assert len(lib.judged_item_ids(run_id)) == 4  # the held call was dropped, never written
    assert "Run stopped. Items judged so far are saved; resume below." in page_text(reloaded)
    hold.unlink()
    after_jobs(reloaded.button(key="score_resume").click().run(), lib_path)
    rows = lib.judgments(run_id)
    assert sorted(r["item_id"] for r in rows) == sorted(i.id for i in lib.dataset_items("sample")[:30])
    assert metric(reloaded, "Judged") == "30 / 30"


def test_a_worker_killed_mid_run_is_said_and_the_run_resumes(lib_path, monkeypatch, tmp_path):
    import os
    import signal

    lib, run_id, hold = held_run(open_page("score"), lib_path, monkeypatch, tmp_path, 20, 2)
    os.kill(lib.job(run_id)["pid"], signal.SIGKILL)
    wait_until(lambda: lib.job_state(run_id) == "lost")
    at = open_page("score", clean=False)
    assert "The worker scoring this run ended without finishing it" in page_text(at)
    hold.unlink()
    after_jobs(at.button(key="score_resume").click().run(), lib_path)  # the dead worker's lease is taken over
    assert sorted(r["item_id"] for r in lib.judgments(run_id)) == sorted(
        i.id for i in lib.dataset_items("sample")[:20]
    )
    assert lib.get_run(run_id).status == "done"


def test_low_valid_mass_is_flagged_and_warned(lib_path):
    def shy(request):  # 70% of the probability on a word: the tiny local model's habit
        return {"The": 0.7, "3": 0.2, "4": 0.1}

    lib = Library(lib_path)
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")[:4]
    run_id = lib.create_run(prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in items])
    run_scoring(prompt, items, ScriptedJudge(shy), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_page("score")
    assert metric(at, "Low valid mass") == "4"
    assert any("little probability on the scale" in w for w in values(at.warning))
    # Below the prompt's valid-mass floor (0.5): no score, the distribution kept, the reason shown.
    assert metric(at, "Weighted score") == "—"
    assert metric(at, "Valid mass") == "0.300"
    assert math.isclose(at.dataframe[-1].value["valid mass"][0], 0.3)
    assert any(
        w.startswith("No score: the judge put 30.0% of the probability on the ratings (the floor is 50%)")
        for w in values(at.warning)
    )


def test_a_failing_item_shows_its_error_as_a_message(lib_path):
    def broken(request):
        raise JudgeError("the judge refused the request (400): context too long")

    class BrokenJudge(ScriptedJudge):
        def judge(self, request):
            broken(request)

    lib = Library(lib_path)
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")[:2]
    run_id = lib.create_run(prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in items])
    run_scoring(prompt, items, BrokenJudge(), lib, run_id, RunOptions(settings=SCRIPTED, max_attempts=1))
    at = open_page("score", clean=False)
    assert not at.exception
    assert metric(at, "Errors") == "2"
    assert any("context too long" in e for e in values(at.error))


def test_missing_key_is_said_at_the_judge_choice_and_the_run_still_refused(lib_path, monkeypatch):
    at = open_page("score")
    at.sidebar.selectbox(key="sb_judge").set_value("openai").run()
    # At once, beside the judge choice, naming the variable to set; before anyone presses "Start run".
    [said] = values(at.sidebar.warning)
    assert said.startswith("This judge needs an API key: set OPENAI_API_KEY in the environment")
    start_run(at, 2)
    at.button(key="score_start").click().run()
    assert not at.exception
    assert any("OPENAI_API_KEY" in e for e in values(at.error))
    assert Library(lib_path).list_runs() == []  # refused before a run was recorded
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    assert values(at.run().sidebar.warning) == []  # set: nothing to say
    at.sidebar.selectbox(key="sb_judge").set_value("gemini").run()
    assert "set GEMINI_API_KEY or GOOGLE_API_KEY" in " ".join(values(at.sidebar.warning))
    at.sidebar.selectbox(key="sb_judge").set_value("compatible").run()
    assert values(at.sidebar.warning) == []  # a local server may need no key: the caption says so


def test_prices_edited_in_the_app_drive_the_estimate(lib_path):
    from geval_core.run.cost import estimate_cost

    at = start_run(open_page("score"), 4)
    assert metric(at, "Cost (est.)") == "unknown"  # the scripted judge is in no price table
    lib = Library(lib_path)
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")[:4]
    # Row 0 of the editor is the chosen judge, unpriced; the user types its prices and saves.
    at.session_state["score_prices_0"] = {
        "edited_rows": {0: {"input": 3.0, "output": 15.0}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="score_prices_save").click().run()
    assert not at.exception
    assert lib.get_setting("prices") == {"scripted:scripted-1": {"input": 3.0, "output": 15.0}}
    est = estimate_cost(
        prompt, items, SCRIPTED, prices={"scripted:scripted-1": {"input": 3.0, "output": 15.0}}
    )
    by_hand = (est["input_tokens"] * 3.0 + est["output_tokens"] * 15.0) / 1e6
    assert metric(at, "Cost (est.)") == f"${by_hand:.4f}"
    assert "Prices saved to the library." in values(at.success)


def test_an_unreachable_judge_is_a_readable_message(lib_path, monkeypatch):
    from conftest import free_port

    monkeypatch.setattr("geval_core.run.calls.backoff_delay", lambda *args: 0.0)  # retries at once
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens here
    at = open_page("score")
    at.sidebar.selectbox(key="sb_judge").set_value("compatible").run()
    at.sidebar.text_input(key="sb_base_url").set_value(url).run()
    start_run(at, 20)
    after_jobs(at.button(key="score_start").click().run(), lib_path)
    assert not at.exception
    [message] = [e for e in values(at.error) if e.startswith("The run stopped")]
    assert f"could not connect to {url}" in message and "server is running" in message
    (run,) = Library(lib_path).list_runs()
    assert run.status == "failed" and 3 <= run.errors < 20  # stopped early, resumable


def test_price_rows_are_checked_and_only_changes_are_stored():
    import pandas as pd

    from geval_core.errors import ConfigError
    from geval_core.run.cost import DEFAULT_PRICES
    from workbench_ui.prices import overrides, price_frame, table_from_frame

    frame = price_frame(DEFAULT_PRICES, JudgeSettings(provider="openai", model="gpt-5-test"))
    assert frame.iloc[0].tolist()[0] == "openai:gpt-5-test" and pd.isna(frame.iloc[0]["input"])
    frame.loc[0, ["input", "output"]] = [1.5, 6.0]
    table = table_from_frame(frame)
    assert overrides(table) == {"openai:gpt-5-test": {"input": 1.5, "output": 6.0}}
    assert len(table) == len(DEFAULT_PRICES) + 1
    with pytest.raises(ConfigError, match="provider:model"):
        table_from_frame(pd.DataFrame([{"judge": "gpt-4o", "input": 1.0, "output": 2.0}]))
    with pytest.raises(ConfigError, match="output must be a number"):
        table_from_frame(pd.DataFrame([{"judge": "openai:x", "input": 1.0, "output": -2.0}]))


def test_the_item_panel_shows_the_human_rating_the_agreement_page_chooses_and_the_one_picked(lib_path):
    from runner_helpers import dimension

    from geval_core.judgment import Judgment
    from geval_core.types import Item
    from workbench_ui.cached_reads import chosen_human

    open_page("score")  # the app seeds the library
    with Library(lib_path) as lib:
        prompt = lib.freeze(
            dimension(
                name="Support helpfulness", inputs=("ticket", "reply"), definition="Helps.", template=""
            ),
            name="support-helpfulness",
        ).prompt
        human = {"helpfulness": 4.0, "helpfulness.0": 4.0, "helpfulness.1": 4.0, "tone": 2.0}
        lib.import_items("tickets", [Item("t1", {"ticket": "It broke.", "reply": "Restart it."}, human)])
        run_id = lib.create_run(prompt.id, "tickets", SCRIPTED)
        lib.save_judgment(run_id, Judgment("t1", score=3.5, mode="logprobs"))
        lib.finish_run(run_id, model_version="scripted-1")
    assert chosen_human(["helpfulness.0", "helpfulness.1", "helpfulness", "tone"], prompt) == "helpfulness"
    assert chosen_human(["a.0", "b"], prompt) == "b" and chosen_human([], prompt) is None
    at = open_page("score")
    assert at.selectbox(key="score_human").value == "helpfulness"
    assert metric(at, "Human") == "4"
    at.selectbox(key="score_human").set_value("tone").run()
    assert metric(at, "Human") == "2"
    again = open_page("score")  # a new session opens on the rating chosen
    assert again.selectbox(key="score_human").value == "tone" and metric(again, "Human") == "2"
    agreement = open_page("agreement")
    assert agreement.selectbox(key="ag_field").value == "helpfulness"
