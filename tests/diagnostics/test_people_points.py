"""'People gave N' on the Align page uses the README's rounding: halves up (4.5 -> 5, -1.5 -> -1), like kappa."""

from __future__ import annotations

import numpy as np

from geval_core.diagnostics.align import disputed_items
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run.plan import plan_run, start_run
from geval_core.stats.kappa import nearest_point, to_points
from geval_core.types import Item, JudgeSettings, Scale
from prompt_library import Library
from tests.runner_helpers import dimension


def test_a_half_rounds_up_as_kappa_rounds():
    scale = Scale(-2, 2)
    values = [-1.5, -0.5, 0.5, 1.5, 2.5, -2.7, 0.49]
    assert [nearest_point(v, scale) for v in values] == [-1, 0, 1, 2, 2, -2, 0]
    assert [nearest_point(v, scale) for v in values] == list(to_points(np.array(values), scale) + scale.min)


def test_disputed_items_name_the_point_people_gave_halves_up(tmp_path):
    with Library(tmp_path / "lib.db", seed_examples=False) as lib:
        prompt = lib.freeze(dimension(JudgeSettings(provider="scripted")), name="c").prompt
        items = [
            Item(
                f"i{k}",
                {"document": f"Doc {k}.", "summary": f"Sum {k}."},
                {"coherence.0": 4.0, "coherence.1": 5.0, "coherence": 4.5},
            )
            for k in range(3)
        ]
        data = lib.import_items("halves", items)
        plan = plan_run(lib, prompt, data["id"])
        start_run(lib, plan, ScriptedJudge())
        rows = disputed_items(lib, lib.list_runs()[0].id, "coherence", None, 10)
    assert {r["human"] for r in rows} == {4.5} and {r["point"] for r in rows} == {
        5
    }  # Python's round() gave 4
