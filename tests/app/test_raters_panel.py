"""AppTest: the Agreement page's raters panel (alpha, human ceiling beside the judge) and the Score table's
confidence columns."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from app_support import assert_clean, metric, open_page, use_temp_library

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.raters import krippendorff_alpha, rater_matrix
from geval_core.types import JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def rated_run(path) -> tuple[str, list]:
    """The sample set with three raters per item (the rating, one lower, one higher; within 1-5), judged."""
    with Library(path) as lib:
        items = []
        for n, item in enumerate(lib.dataset_items("sample")):
            base = item.human["coherence"]
            raters = [base, max(1.0, base - (n % 2)), min(5.0, base + (n % 3 == 0))]
            human = {
                **item.human,
                **{f"coherence.{k}": v for k, v in enumerate(raters)},
                "coherence": float(np.mean(raters)),
            }
            items.append(replace(item, human=human))
        dataset = lib.import_items("rated", items)
        prompt = lib.get_prompt("coherence")
        run_id = lib.create_run(prompt.id, dataset["id"], SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    return run_id, items


def test_raters_panel_shows_alpha_and_the_ceiling_beside_the_judge(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    _, items = rated_run(path)
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    at.number_input(key="ag_raters_boot").set_value(0).run()
    assert_clean(at)
    assert any(h.value == "Raters and the human ceiling" for h in at.header)
    matrix = rater_matrix(items, "coherence")
    assert metric(at, "α interval") == f"{krippendorff_alpha(matrix.values, 'interval'):.3f}"
    assert metric(at, "Raters") == "3"
    ceiling = next(d.value for d in at.dataframe if "who" in d.value.columns)
    assert ceiling["who"].tolist() == ["rater coherence.0", "rater coherence.1", "rater coherence.2", "judge"]


def test_score_table_has_confidence_columns(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    rated_run(path)
    at = open_page("score")
    table = next(d.value for d in at.dataframe if "item" in d.value.columns and "score" in d.value.columns)
    assert {"entropy", "sd", "margin"} <= set(table.columns)
    assert (table["margin"].dropna().between(0, 1)).all()


def test_ratings_saved_on_the_rate_page_sit_beside_a_run_of_the_earlier_version(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        sample = lib.get_dataset("sample")
        items = lib.dataset_items(sample.id)
        for k, rater in enumerate(("al", "bo", "cy")):
            for n, item in enumerate(items[:12]):
                lib.add_rating(sample.id, item.id, "coherence", rater, float(1 + (n + k * (n % 2)) % 5))
        saved = lib.save_ratings_version(sample.id, "coherence")
        prompt = lib.get_prompt("coherence")
        run_id = lib.create_run(prompt.id, sample.id, SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    assert at.selectbox(key="ag_raters_version").value == saved["id"]
    ceiling = next(d.value for d in at.dataframe if "who" in d.value.columns)
    assert ceiling["who"].tolist()[-1] == "judge" and int(ceiling["items"].tolist()[-1]) == 12
    # The people who rated are kept with the version and named beside their rating keys.
    assert ceiling["who"].tolist()[:3] == [
        "rater coherence.0 (al)",
        "rater coherence.1 (bo)",
        "rater coherence.2 (cy)",
    ]
    with Library(path) as lib:
        assert lib.rater_names(saved["id"], "coherence") == ["al", "bo", "cy"]
        assert [h for h in lib.get_dataset(saved["id"]).human if h.startswith("coherence")] == [
            "coherence",
            "coherence.0",
            "coherence.1",
            "coherence.2",
        ]
