"""AppTest: the Align page end to end with the scripted judge (its quality is noise: the flow, the sealing and
the counts are what is tested): split here, the base scored on dev by a worker, disputed items, a candidate
frozen and compared on dev, both evaluated on the sealed test side (recorded), the corrected report."""

from __future__ import annotations

import pytest
from app_support import after_jobs, open_page, page_text, use_temp_library

from geval_core.run.splits import get_split, sealed_uses
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    return use_temp_library(tmp_path, monkeypatch)


def sidebar_judge(at):
    at.sidebar.selectbox(key="sb_judge").set_value("scripted").run()
    return at


def test_split_score_dispute_candidate_compare_and_test_once(lib_path):
    at = sidebar_judge(open_page("align"))
    assert "Aligning needs a dataset split" in page_text(at)
    at.selectbox(key="al_to_split").set_value("sample@1").run()
    at.button(key="al_split_make").click().run()
    lib = Library(lib_path)
    sample = lib.get_dataset("sample")
    split = get_split(lib, sample.id)
    assert f"Dev side of split {split['hash'][:12]}: {len(split['dev'])} items." in page_text(at)
    base = lib.get_prompt("coherence")
    at = after_jobs(at.button(key=f"al_dev_{base.id}").click().run(), lib_path)
    (run,) = lib.list_runs()
    assert set(run.item_ids) == set(split["dev"])  # the base was scored on dev only
    assert "Where the judge and people disagree (dev side)" in page_text(at)
    shown = {i for frame in at.dataframe if "item" in frame.value.columns for i in frame.value["item"]}
    assert shown and shown <= set(split["dev"])  # no test item is disputed on dev
    at.text_area(key="al_definition").set_value("How well the summary's sentences build one whole.").run()
    at.button(key="al_freeze").click().run()
    cand = lib.get_prompt("coherence@2")
    assert "Frozen as coherence@2" in page_text(at)
    at = after_jobs(at.button(key=f"al_dev_{cand.id}").click().run(), lib_path)
    table = next(f.value for f in at.dataframe if "95% interval" in f.value.columns)
    assert list(table["figure"]) == ["Spearman", "Kendall τ-b", "Pearson", "κ quadratic"]
    assert sealed_uses(lib, split) == []  # nothing so far looked at the test side
    at.selectbox(key="al_test_candidate").set_value("coherence@2").run()
    at = after_jobs(at.button(key=f"al_test_{base.id}").click().run(), lib_path)
    at = after_jobs(at.button(key=f"al_test_{cand.id}").click().run(), lib_path)
    uses = sealed_uses(lib, split)
    assert [u["prompt_id"] for u in uses] == [base.id, cand.id]
    report = next(f.value for f in at.dataframe if any(c.startswith("corrected") for c in f.value.columns))
    assert "corrected (95.00%)" in report.columns  # one candidate besides the base: no widening yet
    assert "1 candidate evaluated on this test side (2 looks)" in page_text(at)
    test_runs = [r for r in lib.list_runs() if set(r.item_ids or []) == set(split["test"])]
    assert len(test_runs) == 2 and all(r.status == "done" for r in test_runs)


def test_suggested_edits_shown_as_a_diff_accepted_into_the_candidate_or_rejected(lib_path):
    at = sidebar_judge(open_page("align"))
    at.selectbox(key="al_to_split").set_value("sample@1").run()
    at.button(key="al_split_make").click().run()
    lib = Library(lib_path)
    base = lib.get_prompt("coherence")
    at = after_jobs(at.button(key=f"al_dev_{base.id}").click().run(), lib_path)
    at = after_jobs(at.button(key="al_suggest").click().run(), lib_path)  # the designer call is a task
    diff = next(c.value for c in at.code if c.value.startswith("---"))
    assert "+Definition: Whether the summary's sentences follow one another as one account." in diff
    dev = set(get_split(lib, lib.get_dataset("sample").id)["dev"])
    reason = next(c.value for c in at.caption if c.value.startswith("People marked jumps"))
    named = reason.replace("\\", "").split("items: ")[1].split(", ")  # shown markdown-escaped
    assert named and set(named) <= dev  # the motivating items are disputed dev items
    at.button(key="al_reject").click().run()
    assert not any(c.value.startswith("---") for c in at.code)
    assert at.text_area(key="al_definition").value == base.dimension.definition
    at = after_jobs(at.button(key="al_suggest").click().run(), lib_path)
    at.button(key="al_accept").click().run()
    assert (
        at.text_area(key="al_definition").value
        == "Whether the summary's sentences follow one another as one account."
    )
    assert at.text_input(key="al_anchor_5").value == "Every sentence follows from the one before."
    assert len(lib.list_prompts()) == 4  # accepting fills the editor; only Freeze stores a version


def test_a_candidate_whose_examples_take_every_dev_item_cannot_be_frozen(lib_path):
    at = sidebar_judge(open_page("align"))
    at.selectbox(key="al_to_split").set_value("sample@1").run()
    at.button(key="al_split_make").click().run()
    lib = Library(lib_path)
    base = lib.get_prompt("coherence")
    at = after_jobs(at.button(key=f"al_dev_{base.id}").click().run(), lib_path)
    box = at.multiselect(key="al_examples")
    every = list(box.options)
    box.set_value([o.split(" (people")[0] for o in every]).run()
    assert any("The examples take every dev item" in e.value for e in at.error)
    assert at.button(key="al_freeze").disabled  # a browser user cannot freeze it
