"""AppTest: the Agreement page's judge diagnostics show the figures geval_core computes."""

from __future__ import annotations

import pytest
from app_support import metric, open_page, use_temp_library

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.of_runs import run_calibration, run_estimate
from geval_core.types import JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    return use_temp_library(tmp_path, monkeypatch)


def test_diagnostics_panels(lib_path):
    with Library(lib_path) as lib:
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
        cal = run_calibration(lib, run_id, "coherence")
        est = run_estimate(lib, run_id, "coherence", "ppi++")
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    assert metric(at, "ECE") == f"{cal['ece']:.3f}"
    assert metric(at, "PPI estimate") == f"{est['estimate']:.3f}"
    at.button(key="dg_probe").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(m.label.startswith("Sensitivity") for m in at.metric)
