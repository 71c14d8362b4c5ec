"""AppTest: the Agreement page's rating budget shows the plans geval_core makes for the run it shows (60 of 150
items rated so far, a judge with signal), and says when the PPI target cannot be reached on the judged items."""

from __future__ import annotations

import numpy as np
import pytest
from app_support import assert_clean, metric, open_page, use_temp_library, values

from geval_core.diagnostics.budget import run_budget
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def script(request):
    text = "".join(m["content"] for m in request.messages)
    human, off = (int(v) for v in text.split("[h=")[1].split("]")[0].split(","))
    point = int(np.clip(human + off, 1, 5))
    return {str(point): 0.7, str(human): 0.3} if point != human else {str(point): 1.0}


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    rng = np.random.default_rng(6)
    with Library(path) as lib:
        items = []
        for k in range(150):
            human, off = int(rng.integers(1, 6)), int(rng.integers(-1, 2))
            items.append(
                Item(
                    f"i{k:03d}",
                    {"document": f"Doc {k}.", "summary": f"S{k} [h={human},{off}]"},
                    {"coherence": float(human)} if k < 60 else {},
                )
            )
        lib.import_items("pilot", items)
        prompt = lib.get_prompt("coherence")
        run_id = lib.create_run(prompt.id, "pilot@1", SCRIPTED)
        run_scoring(
            prompt,
            lib.dataset_items("pilot@1"),
            ScriptedJudge(script),
            lib,
            run_id,
            RunOptions(settings=SCRIPTED),
        )
    return path


def test_the_budget_shows_geval_cores_plans(lib_path):
    with Library(lib_path) as lib:
        (run,) = lib.list_runs()
        expected = run_budget(lib, run.id, "coherence", 0.15, 0.3, "spearman", 0.8, bootstrap=500)
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    at.session_state["bd_open"] = True
    at.run()
    at.number_input(key="bd_width").set_value(0.15).run()
    at.number_input(key="bd_ppi_width").set_value(0.3).run()
    at.button(key="bd_plan").click().run()
    assert_clean(at)
    a, p = expected["agreement"], expected["ppi"]
    assert a["further_units"] > 0
    assert metric(at, "More items to rate") == str(a["further_units"])
    assert metric(at, "For an even chance (items)") == str(a["median_units"])
    if p["planned_rated"] is None:
        assert metric(at, "More items to rate (PPI)") == "not reachable"
        assert any("judge more items" in w for w in values(at.warning))
    else:
        assert metric(at, "More items to rate (PPI)") == str(p["further_rated"])
    assert "60 of 150 judged items rated so far." in [c.value for c in at.caption]


def test_a_plan_that_cannot_be_made_is_said(lib_path):
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    at.session_state["bd_open"] = True
    at.run()
    at.number_input(key="bd_ppi_width").set_value(0.01).run()
    at.button(key="bd_plan").click().run()
    assert_clean(at)
    assert metric(at, "More items to rate (PPI)") == "not reachable"
    assert any("judge more items" in w for w in values(at.warning))
