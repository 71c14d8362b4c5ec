"""AppTest: the Design page (form, anchors editor, live preview, steps, drift, checks, freeze)."""

from __future__ import annotations

import re

import pytest
from app_support import after_jobs, open_design, open_page, page_text, use_temp_library, values
from scripted_app_judge import SCRIPTED_STEPS, WRITING_HOLD_ENV

from geval_core import prompts
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


STEPS = [line.split(". ", 1)[1] for line in SCRIPTED_STEPS.splitlines()]


def preview(at) -> str:
    [code] = [c.value for c in at.code if "Evaluation Form (scores ONLY):" in c.value]
    return code


def test_a_newcomer_opens_on_a_blank_labelled_form_with_the_examples_offered(lib_path):
    at = open_page("design")
    assert at.text_input(key="design_name").value == "" and at.text_area(key="design_definition").value == ""
    assert any(s.startswith("A blank form: name one quality dimension") for s in values(at.info))
    assert "The checks run once the form has a name" in page_text(at)  # no red errors for an empty form
    assert at.button(key="design_freeze").disabled
    offered = [b.label for b in at.button if b.key and b.key.startswith("design_example_")]
    assert offered == ["Example: coherence", "Example: consistency", "Example: fluency", "Example: relevance"]
    at.button(key="design_example_fluency@1").click().run()
    assert at.text_input(key="design_name").value == Library(lib_path).get_prompt("fluency").dimension.name
    assert not any(s.startswith("A blank form") for s in values(at.info))


def test_a_person_with_their_own_work_opens_on_the_newest_of_it(lib_path):
    from runner_helpers import dimension

    open_page("design")  # the app seeds the examples
    lib = Library(lib_path)
    lib.freeze(dimension(name="Clarity", definition="How clear it is."), name="clarity")
    at = open_page("design")
    assert at.text_input(key="design_name").value == "Clarity"
    assert "Opened your newest work, prompt clarity@1." in " ".join(values(at.info))
    lib.save_draft(dimension(name="Brevity", definition="How short it is."))
    at = open_page("design")
    assert at.text_input(key="design_name").value == "Brevity"  # the draft saved after the prompt
    assert at.session_state["design_draft_id"] is not None  # saving goes on updating that draft


def test_an_example_previews_on_a_sample_item(lib_path):
    at = open_design()
    lib = Library(lib_path)
    example = lib.get_prompt("coherence").dimension
    assert at.text_input(key="design_name").value == example.name
    assert at.text_area(key="design_definition").value == example.definition
    assert at.text_area(key="design_steps").value.splitlines()[0] == f"1. {example.steps[0]}"
    item = lib.dataset_items("sample")[0]
    assert preview(at) == prompts.render(example, item)  # the whole rendered prompt, verbatim
    assert preview(at).rstrip().endswith(f"- {example.name}:")


def test_editing_definition_and_anchors_updates_the_preview(lib_path):
    at = open_design()
    at.text_area(key="design_definition").set_value("How well the summary hangs together.")
    at.session_state["design_anchors_1_5"] = {
        "edited_rows": {0: {"description": "Flawless <b>flow</b> **bold**"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    text = preview(at)
    assert "Coherence (1-5) - How well the summary hangs together." in text
    assert "- 5: Flawless <b>flow</b> **bold**" in text  # shown as typed: no HTML, no markdown


def test_generate_steps_then_freeze_shows_the_model_and_the_hash(lib_path):
    at = open_design()
    at.text_input(key="design_name").set_value("Coherence")
    at.button(key="design_generate").click().run()  # the example's steps were written by hand: it asks first
    at = after_jobs(at.button(key="design_generate_confirm").click().run(), lib_path)  # a task of the library
    assert not at.exception
    assert at.text_area(key="design_steps").value == SCRIPTED_STEPS
    assert "Steps written by scripted-1" in page_text(at)
    assert "Generated 3 steps with scripted-1." in values(at.success)
    at.button(key="design_freeze").click().run()
    assert not at.exception and not at.error
    lib = Library(lib_path)
    frozen = lib.get_prompt("coherence@2")  # the seeded example is @1
    assert list(frozen.dimension.steps) == STEPS
    assert frozen.dimension.steps_model == "scripted-1"
    assert frozen.dimension.judge.provider == "scripted"
    assert any("Frozen as coherence@2" in s for s in values(at.success))
    assert frozen.id in [c.value for c in at.code]
    # Freezing the same content again reuses the version instead of a duplicate.
    at.button(key="design_freeze").click().run()
    assert any("Identical content already frozen as coherence@2" in s for s in values(at.success))
    assert len(lib.prompt_versions("coherence")) == 2


def test_freeze_warnings_are_shown_with_the_version(lib_path):
    at = open_design()
    at.sidebar.selectbox(key="sb_judge").set_value("openai").run()
    at.sidebar.text_input(key="sb_model_openai").set_value("gpt-4o").run()
    at.button(key="design_freeze").click().run()
    assert any("Frozen as coherence@2" in s for s in values(at.success))
    assert any("'gpt-4o' is an alias without a date" in w for w in values(at.warning))
    assert Library(lib_path).get_prompt("coherence@2").dimension.judge.model == "gpt-4o"


def test_edited_steps_are_marked_as_edited(lib_path):
    at = open_design()
    at.button(key="design_generate").click().run()
    at = after_jobs(at.button(key="design_generate_confirm").click().run(), lib_path)
    at.text_area(key="design_steps").set_value(SCRIPTED_STEPS + "\n4. Check the names.").run()
    assert "Steps written by scripted-1, edited by hand" in page_text(at)


def test_failed_checks_block_freezing_with_readable_messages(lib_path):
    at = open_design()
    at.text_area(key="design_definition").set_value("")
    at.text_input(key="design_inputs").set_value("document, summary, reference")
    at.run()
    errors = " ".join(values(at.error))
    assert "write a definition of the dimension" in errors
    assert "Reference:\n\n[the item's reference goes here]" in preview(
        at
    )  # the default template follows inputs
    assert at.button(key="design_freeze").disabled
    assert not at.exception


def test_two_token_ratings_are_flagged(lib_path):
    at = open_design()
    at.sidebar.selectbox(key="sb_judge").set_value("local").run()
    at.number_input(key="design_smax").set_value(10).run()
    assert any("do not fit in one token" in w for w in values(at.warning))
    assert not any("one token" in e for e in values(at.error))  # a warning: freezing stays possible


def test_drift_check_reports_similarity(lib_path):
    at = open_design()
    at.number_input(key="design_drift_k").set_value(3)
    at = after_jobs(at.button(key="design_drift").click().run(), lib_path)  # a task of the library
    assert not at.exception and not at.error
    [similarity] = [m.value for m in at.metric if m.label.startswith("Mean similarity")]
    assert similarity == "1.000"  # the scripted judge writes the same steps every time
    frames = [d.value for d in at.dataframe if "similarity" in d.value.columns]
    assert len(frames[0]) == 3  # pairs of 3 generations


def test_step_variation_shows_its_model_and_time_can_be_cancelled_and_is_found_after_a_reload(
    lib_path, tmp_path, monkeypatch
):
    hold = tmp_path / "hold"
    hold.write_text("", encoding="utf-8")
    monkeypatch.setenv(WRITING_HOLD_ENV, str(hold))  # the worker's generations wait while the file exists
    at = open_design()
    at.text_input(key="design_name").set_value("Flow").run()  # an edit: the form is autosaved
    at.button(key="design_drift").click().run()
    progress = [i for i in values(at.info) if i.startswith("Generating the steps k times to compare with")]
    assert progress and re.search(r"scripted:scripted-1 · \d+ s so far · 0 of 3 done", progress[0]), progress
    at.button(key="design_drift_stop").click().run()  # Cancel
    at = after_jobs(at, lib_path)  # ended while its generation still waits: cancelled, not finished
    hold.unlink()
    assert "Step variation cancelled." in values(at.warning)
    assert not [m for m in at.metric if m.label.startswith("Mean similarity")]
    at = after_jobs(at.button(key="design_drift").click().run(), lib_path)
    reloaded = open_page("design")  # a new session: the autosaved form and its report, found in the library
    assert reloaded.text_input(key="design_name").value == "Flow"
    [similarity] = [m.value for m in reloaded.metric if m.label.startswith("Mean similarity")]
    assert similarity == "1.000"


def test_a_generation_of_step_variation_can_be_used_as_the_steps_once_confirmed(lib_path):
    at = open_design()  # the example's steps are hand-written
    loaded = at.text_area(key="design_steps").value
    at = after_jobs(at.button(key="design_drift").click().run(), lib_path)
    at.button(key="design_drift_use_2").click().run()
    assert at.text_area(key="design_steps").value == loaded  # nothing replaced without the confirmation
    assert any("using this generation replaces them" in w for w in values(at.warning))
    at.button(key="design_drift_use_confirm").click().run()
    assert at.text_area(key="design_steps").value == SCRIPTED_STEPS
    assert "Steps written by scripted-1." in page_text(at)
    at.button(key="design_generate_undo").click().run()  # the same undo as Generate's
    assert at.text_area(key="design_steps").value == loaded


def test_save_and_load_a_draft(lib_path):
    at = open_design()
    at.text_input(key="design_name").set_value("Clarity")
    at.button(key="design_save").click().run()
    lib = Library(lib_path)
    [draft] = lib.list_drafts()
    assert draft["name"] == "Clarity"
    at.text_input(key="design_name").set_value("Something else").run()
    at.selectbox(key="design_pick").set_value(f"draft:{draft['id']}").run()
    at.button(key="design_load").click().run()
    assert at.text_input(key="design_name").value == "Clarity"


def test_new_dimension_is_blank_with_the_default_template(lib_path):
    at = open_design()
    at.button(key="design_new").click().run()
    assert not at.exception
    for key in ("design_name", "design_inputs"):
        assert at.text_input(key=key).value == ""
    assert at.text_area(key="design_definition").value == "" and at.text_area(key="design_steps").value == ""
    assert at.text_area(key="design_template").value == ""  # the default template, following the inputs
    at.text_input(key="design_inputs").set_value("context, response").run()
    text = preview(at)
    assert "Context:" in text and "Response:" in text and "Summary" not in text
    assert at.button(key="design_freeze").disabled  # no name, definition or anchors yet


def test_duplicate_as_new_keeps_the_content_under_a_new_name_and_no_draft(lib_path):
    at = open_design()
    at.button(key="design_save").click().run()
    at.button(key="design_duplicate").click().run()
    assert at.text_input(key="design_name").value == "Coherence copy"
    assert at.session_state["design_draft_id"] is None
    at.button(key="design_save").click().run()
    assert len(Library(lib_path).list_drafts()) == 2  # a new draft, the first one untouched


def test_a_custom_template_that_misses_the_inputs_is_flagged_inline_with_a_reset(lib_path):
    at = open_design()
    at.text_area(key="design_template").set_value("Rate {{document}} and {{summary}}.\n\n- {{name}}:").run()
    at.text_input(key="design_inputs").set_value("context, response").run()
    [warning] = [w for w in values(at.warning) if w.startswith("The custom template")]
    assert "never shows context, response" in warning and "document, summary" in warning
    at.button(key="design_reset_template").click().run()
    assert at.text_area(key="design_template").value == ""
    assert not any(w.startswith("The custom template") for w in values(at.warning))
    assert "Context:" in preview(at)


def test_checks_name_steps_for_other_inputs_a_single_step_and_identical_anchors(lib_path):
    at = open_design()
    at.text_input(key="design_inputs").set_value("context, response")
    at.text_area(key="design_steps").set_value("1. Read the summary and the document.")
    at.session_state["design_anchors_1_5"] = {
        "edited_rows": {0: {"description": "Same text."}, 1: {"description": "same  text."}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    warnings = " ".join(values(at.warning))
    assert "only one evaluation step" in warnings
    assert "step 1 names 'document', 'summary': not an input of this prompt (context, response)" in warnings
    assert "the anchors of 4 and 5 are identical" in " ".join(values(at.error))
    assert not any("All checks pass" in s for s in values(at.success))


def test_the_frozen_message_goes_away_when_the_form_changes(lib_path):
    at = open_design()
    at.button(key="design_freeze").click().run()
    assert any("Frozen as coherence@2" in s for s in values(at.success))
    at.text_area(key="design_definition").set_value("Something else entirely.").run()
    assert not any("frozen as" in s for s in values(at.success))


def test_a_reload_restores_the_form_as_left(lib_path):
    at = open_design()
    at.text_input(key="design_name").set_value("Clarity")
    at.text_area(key="design_definition").set_value("How clear the response is.").run()
    reloaded = open_page("design")  # a new session, as a browser reload of the Design page starts
    assert reloaded.text_input(key="design_name").value == "Clarity"
    assert reloaded.text_area(key="design_definition").value == "How clear the response is."
    assert any("Restored the form as you left it" in s for s in values(reloaded.info))
    assert Library(lib_path).list_drafts() == []  # the autosave is no draft in the pickers


def test_a_draft_is_archived_out_of_the_picker_and_kept(lib_path):
    at = open_design()
    at.text_input(key="design_name").set_value("Clarity")
    at.button(key="design_save").click().run()
    lib = Library(lib_path)
    [draft] = lib.list_drafts()
    at.multiselect(key="archive_draft_pick").set_value([str(draft["id"])]).run()
    at.button(key="archive_draft_go").click().run()
    assert f"draft:{draft['id']}" not in at.selectbox(key="design_pick").options
    assert lib.get_draft(draft["id"]).name == "Clarity"  # kept, restorable


def test_generate_asks_before_replacing_edited_steps_and_can_be_undone(lib_path):
    at = open_design()
    mine = "1. Read both texts.\n2. Compare them sentence by sentence."
    at.text_area(key="design_steps").set_value(mine).run()
    at.button(key="design_generate").click().run()
    assert at.text_area(key="design_steps").value == mine  # nothing replaced yet
    assert any("written or edited by hand: generating replaces them" in w for w in values(at.warning))
    at.button(key="design_generate_cancel").click().run()
    assert at.text_area(key="design_steps").value == mine
    assert not [b for b in at.button if b.key in ("design_generate_undo", "design_generate_confirm")]
    at.button(key="design_generate").click().run()
    at = after_jobs(at.button(key="design_generate_confirm").click().run(), lib_path)
    assert at.text_area(key="design_steps").value == SCRIPTED_STEPS
    assert "Steps written by scripted-1" in page_text(at)
    at.button(key="design_generate_undo").click().run()
    assert at.text_area(key="design_steps").value == mine
    assert "Restored the steps from before the last generation." in values(at.info)
    assert not [b for b in at.button if b.key == "design_generate_undo"]  # one undo, then gone


def test_generate_asks_before_replacing_the_hand_written_steps_of_a_loaded_prompt(lib_path):
    at = open_design()
    at.selectbox(key="design_pick").set_value(
        "prompt:coherence@1"
    ).run()  # the example's steps are hand-written
    at.button(key="design_load").click().run()
    loaded = at.text_area(key="design_steps").value
    assert loaded and "Steps written by hand." in page_text(at)
    at.button(key="design_generate").click().run()
    assert at.text_area(key="design_steps").value == loaded  # nothing replaced without the confirmation
    assert any("written or edited by hand: generating replaces them" in w for w in values(at.warning))
