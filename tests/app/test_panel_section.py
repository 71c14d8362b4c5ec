"""AppTest: the Score page's panel section: freeze a panel of two prompts, score the sample with it (a worker per
member), then the panel's table beside the members' scores, the members' alpha against the krippendorff
package, and the review queue of the items they disagree on most."""

from __future__ import annotations

from dataclasses import replace

import krippendorff
import numpy as np
import pytest
from app_support import after_jobs, metric, open_page, use_temp_library

from geval_core.types import JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence").dimension
        lib.freeze(replace(base, judge=replace(base.judge, provider="scripted", model="scripted-1")), name="jurora")
        lib.freeze(replace(base, definition="Sentences that build one whole.",
                           judge=replace(base.judge, provider="scripted", model="scripted-1")), name="jurorb")
    return path


def test_freeze_score_and_read_a_panel(lib_path):
    at = open_page("score")
    at.multiselect(key="pn_members").set_value(["jurora@1", "jurorb@1"]).run()
    at.text_input(key="pn_name").set_value("jury").run()
    at.button(key="pn_freeze").click().run()
    lib = Library(lib_path)
    assert lib.list_runs() == []  # looking at a panel records nothing
    at.selectbox(key="pn_dataset").set_value("sample@1").run()
    at = after_jobs(at.button(key="pn_score").click().run(), lib_path)
    runs = lib.list_runs()
    assert len(runs) == 2 and all(r["status"] == "done" for r in runs)
    table = next(f.value for f in at.dataframe if "panel" in f.value.columns and "spread" in f.value.columns)
    assert len(table) == 67 and {"jurora@1", "jurorb@1"} <= set(table.columns)
    matrix = table[["jurora@1", "jurorb@1"]].to_numpy(dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    assert metric(at, "Members' alpha (interval)") == f"{expected:.3f}"
    assert np.allclose(table["spread"], np.abs(matrix[:, 0] - matrix[:, 1]))
    queue = [f.value for f in at.dataframe if "spread" in f.value.columns][-1]
    assert list(queue["spread"]) == sorted(queue["spread"], reverse=True) and len(queue) == 20
