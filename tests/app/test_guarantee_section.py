"""AppTest: the Score page's cascade section, with a guarantee. A cheap judge certain on about 60% of 200 rated items
(right on all but a few) and torn on the rest: the threshold the page chooses is the Python API's, its figures and
what the guarantee does and does not cover are shown, a hopeless target says so, the cascade is frozen with its
guarantee, and scoring with it (the cheap run reused, the unsure items sent to the strong judge as a job) reports
the share kept beside the calibration's."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from app_support import after_jobs, assert_clean, metric, open_page, page_text, use_temp_library, values

from geval_core.diagnostics.cascade import get_cascade
from geval_core.diagnostics.escalate import calibrate_guarantee
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

MARK = re.compile(r"\[h=(\d)\]\[sure=(\d)\]\[wrong=(\d)\]")


def cheap_script(request):
    human, sure, wrong = (
        int(v) for v in MARK.search("".join(m["content"] for m in request.messages)).groups()
    )
    if sure:
        return {str((human + 1) % 5 + 1 if wrong else human): 0.95, "The": 0.05}
    return {"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.2, "5": 0.1, "The": 0.1}


def items(count: int, rng) -> list[Item]:
    out = []
    for k in range(count):
        human, sure, wrong = int(rng.integers(1, 6)), int(rng.random() < 0.6), int(rng.random() < 0.04)
        out.append(
            Item(
                f"c{k:03d}",
                {"document": f"Document {k}.", "summary": f"S [h={human}][sure={sure}][wrong={wrong}]"},
                {"coherence": float(human)},
            )
        )
    return out


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """200 rated items scored by the cheap prompt; a strong prompt on the same scale, not yet run."""
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence").dimension
        cheap_judge = JudgeSettings(provider="scripted", model="scripted-1")
        lib.import_items("calibration", items(200, np.random.default_rng(3)))
        cheap = lib.freeze(replace(base, judge=cheap_judge), name="cheap").prompt
        lib.freeze(replace(base, judge=cheap_judge, definition="Read closely."), name="strong")
        run_id = lib.create_run(cheap.id, "calibration@1", cheap_judge)
        run_scoring(
            cheap,
            lib.dataset_items("calibration@1"),
            ScriptedJudge(cheap_script),
            lib,
            run_id,
            RunOptions(settings=cheap_judge),
        )
    return path


def chosen(at, run_id: str, target: float, delta: float):
    at.selectbox(key="cg_run").set_value(run_id).run()
    at.selectbox(key="cg_human").set_value("coherence").run()
    at.number_input(key="cg_target").set_value(target).run()
    at.number_input(key="cg_delta").set_value(delta).run()
    return at.button(key="cg_choose").click().run()


def test_choose_freeze_and_score_with_a_guarantee(lib_path):
    lib = Library(lib_path)
    (run,) = lib.list_runs()
    expected = calibrate_guarantee(lib, run.id, "coherence", "entropy", 0.85, 0.1, 0.5)
    assert expected["threshold"] is not None
    at = chosen(open_page("score"), run.id, 0.85, 0.1)
    assert_clean(at)
    assert metric(at, "Kept") == f"{expected['kept']} / 200"
    assert metric(at, "Agreement on kept") == f"{expected['agreement']:.1%}"
    assert metric(at, "At least (prob. 90%)") == f"{expected['lower_bound']:.1%}"
    text = page_text(at)
    assert "at least 85% of the items it keeps" in text and "distribution shift" in text

    at.selectbox(key="cg_strong").set_value("strong@1").run()
    at.text_input(key="cg_name").set_value("sure").run()
    at.button(key="cg_freeze").click().run()
    assert any("Frozen as sure@1" in v for v in values(at.success))
    cascade = get_cascade(lib, "sure")
    assert cascade["threshold"] == expected["threshold"] and cascade["guarantee"]["target"] == 0.85

    at.selectbox(key="cs_use_dataset").set_value("calibration@1").run()
    at = after_jobs(at.button(key="cs_start_strong").click().run(), lib_path)  # the cheap run is reused
    assert_clean(at)
    assert len(lib.list_runs()) == 2
    assert metric(at, "Kept by the cheap judge") == f"{expected['kept']} / 200"
    assert metric(at, "Kept on the calibration") == f"{expected['kept_share']:.1%}"
    assert metric(at, "People agree on kept (where rated)") == f"{expected['agreement']:.1%}"


def test_a_hopeless_target_is_said(lib_path):
    lib = Library(lib_path)
    (run,) = lib.list_runs()
    at = chosen(open_page("score"), run.id, 0.99, 0.01)
    assert_clean(at)
    assert any("No threshold reaches 99%" in w for w in values(at.warning))
    assert not any(b.key == "cg_freeze" for b in at.button)
