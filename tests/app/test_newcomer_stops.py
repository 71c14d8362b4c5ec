"""AppTest: the newcomer's stops on the Score and Agreement pages (issue 14): Stop shows Resume on the stopped
run, labels refresh, the item's prompt is viewable, runs archive; groups beside the headline, two runs' item
distributions side by side, either reading attached to an export."""

from __future__ import annotations

import json

import pytest
from app_support import after_jobs, metric, open_page, page_text, use_temp_library, values
from runner_helpers import judged_run

from geval_core import prompts
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeSettings
from prompt_library import Library
from workbench_ui.live import progress_text

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def stopped_and_finished(lib: Library) -> tuple[str, str, list]:
    """A finished run, then a run stopped after 3 of 6 items (newer runs list first)."""
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")[:6]
    done = lib.create_run(prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in items])
    run_scoring(prompt, items, ScriptedJudge(), lib, done, RunOptions(settings=SCRIPTED))
    stopped = lib.create_run(prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in items])
    run_scoring(prompt, items[:3], ScriptedJudge(), lib, stopped, RunOptions(settings=SCRIPTED))
    lib.finish_run(stopped, status="cancelled")
    return done, stopped, items


def test_a_stopped_run_is_shown_with_resume_and_its_label_refreshes(lib_path):
    lib = Library(lib_path)
    done, stopped, _ = stopped_and_finished(lib)
    at = open_page("score")
    at.selectbox(key="score_run").set_value(stopped).run()
    assert "3 item(s) of this run are not judged yet (run status: cancelled)" in page_text(at)
    assert metric(at, "Judged") == "3 / 6"
    after_jobs(at.button(key="score_resume").click().run(), lib_path)
    assert not at.exception and not at.error
    assert metric(at, "Judged") == "6 / 6"
    assert "Judged 6/6 · done" in values(at.caption)  # drawn fresh, never a stale "cancelled"


def test_progress_says_the_judge_is_loading_then_an_eta():
    assert progress_text(0, 12, 0.0) == "0 / 12 items"
    assert progress_text(3, 12, 6.0) == "3 / 12 items · about 18 s left"
    assert progress_text(1, 200, 60.0) == "1 / 200 items · about 199 min left"
    assert progress_text(12, 12, 30.0) == "12 / 12 items"


def test_the_item_view_shows_the_prompt_sent_and_short_download_labels(lib_path):
    lib = Library(lib_path)
    done, _, items = stopped_and_finished(lib)
    at = open_page("score")
    at.selectbox(key="score_run").set_value(done).run()
    item = next(i for i in items if i.id == at.selectbox(key="score_item").value)
    assert prompts.render(lib.get_prompt("coherence"), item) in [c.value for c in at.code]
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Download CSV", "Download JSONL"]


def test_a_run_is_archived_out_of_the_pickers_and_restored(lib_path):
    lib = Library(lib_path)
    done, stopped, _ = stopped_and_finished(lib)
    at = open_page("score")
    at.multiselect(key="archive_run_pick").set_value([stopped]).run()
    at.button(key="archive_run_go").click().run()
    assert at.selectbox(key="score_run").options == [at.selectbox(key="score_run").format_func(done)]
    assert lib.judged_item_ids(stopped)  # kept whole
    agreement = open_page("agreement", clean=False)
    assert stopped not in " ".join(agreement.selectbox(key="ag_run").options)
    at.multiselect(key="archive_run_restore").set_value([stopped]).run()
    at.button(key="archive_run_back").click().run()
    assert len(at.selectbox(key="score_run").options) == 2


def test_groups_used_and_their_median_size_beside_the_headline_and_a_tiny_group_warning(lib_path):
    lib = Library(lib_path)
    items = lib.dataset_items("sample")
    two_each = {}
    for item in items:  # two items of every group: a tiny-group reading
        if len(two_each.setdefault(item.group, [])) < 2:
            two_each[item.group].append(item)
    chosen = [i for group in two_each.values() for i in group]
    run_id = lib.create_run("coherence", "sample", SCRIPTED, item_ids=[i.id for i in chosen])
    for n, item in enumerate(chosen):
        lib.save_judgment(
            run_id, Judgment(item.id, score=item.human["coherence"] + n % 3 * 0.3, mode="logprobs")
        )
    lib.finish_run(run_id)
    at = open_page("agreement")
    note = next(c for c in values(at.caption) if c.startswith("Group-level reading:"))
    used = int(note.split("Group-level reading: ")[1].split(" of ")[0])
    assert (
        f"{used} of {len(two_each)} groups used ({len(two_each) - used} skipped" in note
    )  # used + skipped: all
    assert "median group size 2 items." in note
    assert any("The groups are tiny (median 2 items)" in w for w in values(at.warning))


def test_compare_shows_one_items_distributions_of_both_runs_side_by_side(lib_path):
    lib = Library(lib_path)
    done, stopped, _ = stopped_and_finished(lib)
    at = open_page("agreement")
    at.selectbox(key="ag_run").set_value(done).run()
    at.selectbox(key="ag_other").set_value(stopped).run()
    item = at.selectbox(key="ag_compare_item").value
    both = {r: next(j for j in lib.judgments(r) if j["item_id"] == item) for r in (done, stopped)}
    assert metric(at, "Weighted score (A)") == f"{both[done]['score']:.3f}"
    assert metric(at, "Weighted score (B)") == f"{both[stopped]['score']:.3f}"


def test_the_export_attaches_either_reading(lib_path, downloads):
    lib = Library(lib_path)
    run_id, _ = judged_run(lib)
    prompt = lib.get_prompt("coherence")
    at = open_page("library")
    at.checkbox(key=f"lib_attach_{prompt.id}").check().run()
    assert json.loads(downloads(at, "Download export"))["agreement"]["reading"] == "group"
    at.radio(key=f"lib_agree_reading_{prompt.id}").set_value("dataset").run()
    assert not at.exception and not at.error
    agreement = json.loads(downloads(at, "Download export"))["agreement"]
    assert agreement["reading"] == "dataset" and agreement["run"] == run_id


def test_the_eta_reads_the_rate_of_recent_items():
    from workbench_ui.live import recent_progress_text

    # 10 items in the first 100 s (a model load, a busy spell), then 1 item a second: the ETA follows the recent rate.
    samples = [(0.0, 0), (100.0, 10), (110.0, 20), (120.0, 30)]
    assert (
        recent_progress_text(30, 60, samples) == "30 / 60 items · about 30 s left"
    )  # 20 items in the last 20 s
    assert (
        progress_text(30, 60, 120.0) == "30 / 60 items · about 2 min left"
    )  # the whole run's rate would say
    assert (
        recent_progress_text(10, 60, [(0.0, 10), (5.0, 10)]) is None
    )  # no progress in the window: no rate yet
