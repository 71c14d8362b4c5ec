"""A stored run's rating budget (diagnostics.budget) on grouped items: the group-level reading plans documents,
the pooled one plans documents too (its bootstrap resamples them), and PPI carries the pilot's cluster-robust
error; each is the statistics' plan on the same values."""

from __future__ import annotations

import numpy as np
import pytest
from runner_helpers import dimension

from geval_core.diagnostics.budget import run_budget
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.budget import agreement_plan
from geval_core.stats.budget_ppi import ppi_plan
from geval_core.types import Item, JudgeSettings

JUDGE = JudgeSettings(provider="scripted", model="scripted-1")


def script(request):
    text = "".join(m["content"] for m in request.messages)
    human, off = (int(v) for v in text.split("[h=")[1].split("]")[0].split(","))
    point = int(np.clip(human + off, 1, 5))
    return {str(point): 0.7, str(human): 0.3} if point != human else {str(point): 1.0}


@pytest.fixture
def run(tmp_path):
    from prompt_library import Library

    rng = np.random.default_rng(2)
    items = []
    for k in range(240):
        human, off = int(rng.integers(1, 6)), int(rng.integers(-1, 2))
        rated = k < 120  # the first 15 documents rated so far
        items.append(
            Item(
                f"i{k:03d}",
                {"document": f"Doc {k // 8}.", "summary": f"S{k} [h={human},{off}]"},
                {"coherence": float(human)} if rated else {},
                f"d{k // 8:02d}",
            )
        )
    library = Library(tmp_path / "lib.db", seed_examples=False)
    library.import_items("data", items)
    prompt = library.freeze(dimension(JUDGE), name="judge").prompt
    run_id = library.create_run(prompt.id, "data", JUDGE)
    run_scoring(
        prompt,
        library.dataset_items("data"),
        ScriptedJudge(script),
        library,
        run_id,
        RunOptions(settings=JUDGE),
    )
    yield library, run_id, items
    library.close()


def values(library, run_id: str, items: list[Item]) -> tuple[list[float], list[float | None], list[str]]:
    scores = {r["item_id"]: r["score"] for r in library.judgments(run_id)}
    return (
        [scores[i.id] for i in items],
        [i.human.get("coherence") for i in items],
        [i.group for i in items],
    )


def test_grouped_plans_are_the_statistics_plans(run):
    library, run_id, items = run
    judge, human, groups = values(library, run_id, items)
    out = run_budget(library, run_id, "coherence", 0.2, 0.3, bootstrap=200)
    a = out["agreement"]
    assert (a["reading"], a["unit"], a["pilot_units"], a["items_per_unit"]) == ("group", "groups", 15, 8.0)
    expected = agreement_plan(
        judge[:120],
        human[:120],
        0.2,
        groups=groups[:120],
        scale=library.get_prompt("judge").dimension.scale,
        bootstrap=200,
    )
    assert a["planned_units"] == expected["planned_units"] and a["further_items"] == 8 * a["further_units"]
    assert out["ppi"] == ppi_plan(judge, human, 0.3, "ppi++", 0.8, groups) and out["ppi"]["groups"] == 30
    only = run_budget(library, run_id, "coherence", 0.2, pooled=True, bootstrap=200)
    pooled = only["agreement"]
    assert (pooled["reading"], pooled["unit"], pooled["pilot_units"]) == ("dataset", "groups", 15)
    assert "ppi" not in only
