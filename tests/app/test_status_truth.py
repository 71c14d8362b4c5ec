"""One status truth: a resumed run says "running" while it runs; an item never sent (too long for the judge's
context) is an error, not "low valid mass", and is not offered for a resume that could not send it either."""

from __future__ import annotations

import pytest
from app_support import open_page, use_temp_library

from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge, default_script
from geval_core.run.plan import plan_of_run, plan_run, start_run
from geval_core.types import JudgeSettings
from prompt_library import Library
from workbench_ui.cached_reads import _low_mass

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    return use_temp_library(tmp_path, monkeypatch)


def test_a_resumed_run_reads_running_while_its_items_are_judged(lib_path):
    with Library(lib_path) as lib:
        prompt = lib.get_prompt("coherence")
        run_id = lib.create_run(
            prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in lib.dataset_items("sample")[:4]]
        )
        lib.finish_run(run_id, "cancelled")
        seen = []

        def script(request):
            with Library(lib_path) as other:  # the judge's thread reads the stored status as a page would
                seen.append(other.get_run(run_id).status)
            return default_script(request)

        start_run(lib, plan_of_run(lib, run_id), ScriptedJudge(script))
        assert seen and set(seen) == {"running"} and lib.get_run(run_id).status == "done"


def test_an_item_never_sent_is_an_error_and_not_offered_for_resume(lib_path):
    with Library(lib_path) as lib:
        prompt = lib.get_prompt("coherence")
        items = lib.dataset_items("sample")[:3]
        plan = plan_run(lib, prompt, "sample", scope=None)
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED, item_ids=[i.id for i in items])
        for item in items[:2]:
            lib.save_judgment(run_id, Judgment(item.id, score=3.0, valid_mass=0.99, mode="logprobs"))
        lib.save_judgment(
            run_id,
            Judgment(
                items[2].id,
                mode="logprobs",
                error="ContextLengthError: the item's "
                "prompt is about 9000 tokens; over the judge's context of 8192 tokens",
            ),
        )
        lib.finish_run(run_id, "done")
        assert plan.total == 67
    assert not _low_mass({"error": "ContextLengthError: ...", "mode": "logprobs", "valid_mass": None})
    at = open_page("score")
    at.selectbox(key="score_run").set_value(run_id).run()
    assert not [b for b in at.button if b.key == "score_resume"]
    assert any("1 item(s) are too long for the judge's context" in c.value for c in at.caption)
    low = next(m for m in at.metric if m.label == "Low valid mass")
    assert low.value == "0"
