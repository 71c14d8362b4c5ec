"""AppTest: the Score page's cascade section. Two judges scored the sample (it has human ratings); the curve's
routed shares and Spearman figures are checked against scipy on the stored distributions; a threshold picked off
the curve is frozen; scoring with the cascade reuses the cheap judge's finished run and sends only the unsure
items to the strong judge, as a job; on a new dataset one click runs the cheap job, then the strong one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from app_support import (
    after_jobs,
    assert_clean,
    metric,
    open_page,
    page_text,
    plain,
    use_temp_library,
    wait_for_jobs,
    wait_until,
)
from scipy import stats

from geval_core.diagnostics.cascade import get_cascade
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from prompt_library import Library

PICK = 6  # the threshold row picked off the curve: about 40% of the items go to the strong judge


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """The sample scored by two scripted judges (a cheap and a strong prompt), both runs finished."""
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence").dimension
        scripted = replace(base.judge, provider="scripted", model="scripted-1")
        for name, definition in (("cheap", base.definition), ("strong", "Sentences that build one whole.")):
            prompt = lib.freeze(replace(base, definition=definition, judge=scripted), name=name).prompt
            run_id = lib.create_run(prompt.id, "sample@1", scripted)
            run_scoring(
                prompt,
                lib.dataset_items("sample@1"),
                ScriptedJudge(),
                lib,
                run_id,
                RunOptions(settings=scripted),
            )
    return path


def run_of(lib, prompt: str) -> dict:
    (run,) = [r for r in lib.list_runs() if r.prompt_label == prompt]
    return run


def calibrated(at, lib):
    """The curve drawn for cheap@1 backed by strong@1 on coherence, by entropy."""
    at.selectbox(key="cs_cheap").set_value(run_of(lib, "cheap@1").id).run()
    at.selectbox(key="cs_strong").set_value(run_of(lib, "strong@1").id).run()
    at.selectbox(key="cs_human").set_value("coherence").run()
    at.selectbox(key="cs_signal").set_value("entropy").run()
    return at.button(key="cs_curve").click().run()


def entropies(lib, run_id: str) -> dict[str, float]:
    """Each item's entropy (bits) of the stored rating distribution, by scipy."""
    return {
        r["item_id"]: float(stats.entropy(list(r["distribution"].values()), base=2))
        for r in lib.judgments(run_id)
    }


def above(entropy: float, threshold: float) -> bool:
    """Sent on: the thresholds are quantiles, so one can be an item's own entropy, which stays with the cheap judge
    (scipy's sum can differ from the app's in the last bit)."""
    return entropy > threshold + 1e-12


def test_the_curve_matches_scipy_and_the_frozen_cascade_sends_only_the_unsure_items(lib_path):
    lib = Library(lib_path)
    at = calibrated(open_page("score"), lib)
    assert_clean(at)
    assert at.get("plotly_chart")  # the curve's chart beside its table
    table = next(f.value for f in at.dataframe if "Spearman with people" in f.value.columns)
    cheap, strong = run_of(lib, "cheap@1").id, run_of(lib, "strong@1").id
    unsure = entropies(lib, cheap)
    scores = {run: {r["item_id"]: r["score"] for r in lib.judgments(run)} for run in (cheap, strong)}
    people = lib.human_means(lib.get_dataset("sample@1").id, "coherence")
    ids = sorted(people)
    cuts = [-1.0, *sorted(set(np.quantile([unsure[i] for i in ids], np.linspace(0, 1, 11))))]
    assert (
        len(table) == len(cuts) == 12
    )  # every item to the strong judge, then the 11 quantiles of the entropy
    assert list(table["entropy above"]) == ["every item", *(f"{cut:.4f}" for cut in cuts[1:])]
    for (_, row), cut in zip(table.iterrows(), cuts, strict=True):
        routed = [i for i in ids if above(unsure[i], cut)]
        assert row["strong judge on"] == f"{len(routed)} ({len(routed) / len(ids):.0%})"
        mixed = [scores[strong if i in routed else cheap][i] for i in ids]
        assert row["Spearman with people"] == pytest.approx(
            stats.spearmanr(mixed, [people[i] for i in ids]).statistic, abs=1e-9
        )
    assert table.iloc[0, 1].startswith(f"{len(ids)} ") and table.iloc[-1, 1].startswith("0 ")
    at.selectbox(key="cs_threshold").set_value(PICK).run()
    at.text_input(key="cs_name").set_value("tiered").run()
    at.button(key="cs_freeze").click().run()
    assert "Frozen as tiered@1" in page_text(at)
    cascade = get_cascade(lib, "tiered")
    assert (
        f"{cascade['threshold']:.4f}" == table.iloc[PICK]["entropy above"] and cascade["signal"] == "entropy"
    )
    at.selectbox(key="cs_use_dataset").set_value("sample@1").run()
    routed = [i.id for i in lib.dataset_items("sample@1") if above(unsure[i.id], cascade["threshold"])]
    assert 0 < len(routed) < len(ids)
    at = after_jobs(at.button(key="cs_start_strong").click().run(), lib_path)  # the cheap run is reused
    runs = lib.list_runs()
    assert len(runs) == 3 and sum(r.prompt_label == "cheap@1" for r in runs) == 1
    strong_side = next(r for r in runs if r.item_ids is not None)
    assert strong_side.item_ids == tuple(routed) and strong_side.status == "done"
    assert len(lib.judged_item_ids(strong_side.id)) == len(routed)
    assert metric(at, "Strong judge on") == f"{len(routed)} / {len(ids)}"
    assert metric(at, "Strong calls saved") == str(len(ids) - len(routed))
    rows = next(f.value for f in at.dataframe if "by" in f.value.columns)
    assert sorted(rows.loc[rows["by"] == "strong", "id"]) == sorted(routed)
    by_id = rows.set_index("id")
    assert all(by_id.loc[i, "score"] == scores[strong][i] for i in routed)
    assert_clean(at)


def test_one_click_scores_a_new_dataset_cheap_first_then_strong(lib_path):
    lib = Library(lib_path)
    lib.import_items("fresh", lib.dataset_items("sample@1")[:24])
    cheap, strong = run_of(lib, "cheap@1"), run_of(lib, "strong@1")
    from geval_core.diagnostics.cascade import freeze_cascade

    middle = sorted(entropies(lib, cheap.id).values())[33:35]
    threshold = float(np.mean(middle))  # between two items' entropies: no item sits on it
    freeze_cascade(lib, "tiered", "cheap@1", "strong@1", "entropy", threshold)
    at = open_page("score")
    at.selectbox(key="cs_use_dataset").set_value("fresh@1").run()
    assert not any(b.key == "cs_start_strong" for b in at.button)  # the strong side waits for the cheap one
    at = after_jobs(
        at.button(key="cs_start_cheap").click().run(), lib_path
    )  # the strong job starts by itself
    at = after_jobs(at, lib_path)
    assert not at.exception, [e.value for e in at.exception]
    fresh = lib.get_dataset("fresh@1").id
    new = [r for r in lib.list_runs() if r.dataset_id == fresh]
    assert len(new) == 2 and all(r.status == "done" for r in new)
    unsure = entropies(lib, next(r.id for r in new if r.item_ids is None))
    routed = [i.id for i in lib.dataset_items(fresh) if unsure[i.id] > threshold]
    assert next(r for r in new if r.item_ids is not None).item_ids == tuple(routed)
    assert metric(at, "Strong judge on") == f"{len(routed)} / 24"
    assert {cheap.id, strong.id}.isdisjoint(r.id for r in new)


def test_a_calibration_run_by_another_model_than_its_prompts_is_said(lib_path):
    lib = Library(lib_path)
    prompt = lib.get_prompt("strong")
    other = replace(prompt.dimension.judge, model="scripted-2")  # as the sidebar's model would score it
    run_scoring(
        prompt,
        lib.dataset_items("sample@1"),
        ScriptedJudge(),
        lib,
        lib.create_run(prompt.id, "sample@1", other),
        RunOptions(settings=other),
    )
    at = open_page("score", clean=False)
    (odd,) = [r for r in lib.list_runs() if r.judge.model == "scripted-2"]
    at.selectbox(key="cs_cheap").set_value(run_of(lib, "cheap@1").id).run()
    at.selectbox(key="cs_strong").set_value(
        next(r.id for r in lib.list_runs() if r.prompt_label == "strong@1" and r.id != odd.id)
    ).run()
    assert not any("not by its prompt's own" in w.value for w in at.warning)
    at.selectbox(key="cs_strong").set_value(odd.id).run()
    said = [plain(w.value) for w in at.warning if "not by its prompt's own" in w.value]
    assert said == [
        "The strong run was scored by scripted:scripted-2, not by its prompt's own judge "
        "scripted:scripted-1. A cascade scores with the prompts' own judges, so this curve may not "
        "predict it."
    ]


def test_a_refused_curve_is_said_in_its_section_and_the_runs_still_show(lib_path):
    lib = Library(lib_path)
    lib.import_items("pair", lib.dataset_items("sample@1")[:2])
    for name in ("cheap", "strong"):
        prompt = lib.get_prompt(name)
        run_scoring(
            prompt,
            lib.dataset_items("pair@1"),
            ScriptedJudge(),
            lib,
            lib.create_run(prompt.id, "pair@1", prompt.dimension.judge),
            RunOptions(settings=prompt.dimension.judge),
        )
    at = open_page("score")
    pair = lib.get_dataset("pair@1").id
    at.selectbox(key="cs_dataset").set_value(pair).run()
    at.button(key="cs_curve").click().run()
    assert not at.exception
    assert [plain(e.value) for e in at.error] == [
        "field 'run': only 2 items have the strong judge's score and a human rating"
    ]
    assert at.selectbox(key="score_run").value  # the page went on below the section


def held_on_fresh(lib, strong: str, monkeypatch, tmp_path):
    """(the Score page on dataset fresh@1, the hold file): cascade tiered of cheap@1 and `strong` sending every
    scored item on, each judge's worker answering three requests, then waiting while the hold file exists."""
    from geval_core.diagnostics.cascade import freeze_cascade

    freeze_cascade(lib, "tiered", "cheap@1", strong, "entropy", 0.0)
    hold = tmp_path / "hold"
    hold.write_text("3")
    monkeypatch.setenv("GEVAL_TEST_JUDGE_HOLD", str(hold))
    at = open_page("score")
    at.selectbox(key="cs_use_dataset").set_value("fresh@1").run()
    return at, hold


def test_a_stopped_cheap_job_resumed_elsewhere_does_not_start_the_strong_one(lib_path, monkeypatch, tmp_path):
    """The strong job follows the cheap one by itself only after the click that started them; once the cheap
    job was stopped, finishing it from the run list leaves the strong side waiting for its own click."""
    lib = Library(lib_path)
    new_texts = [
        replace(i, fields={**i.fields, "summary": i.fields["summary"] + " Again."})
        for i in lib.dataset_items("sample@1")[:24]
    ]  # not in the judgment cache: the judge is asked
    lib.import_items("fresh", new_texts)
    at, hold = held_on_fresh(lib, "strong@1", monkeypatch, tmp_path)
    at.button(key="cs_start_cheap").click().run()
    fresh = lib.get_dataset("fresh@1").id
    (cheap,) = [r for r in lib.list_runs() if r.dataset_id == fresh]
    wait_until(lambda: len(lib.judged_item_ids(cheap.id)) >= 3)
    at.run()
    at.button(key="cs_cheap_stop").click().run()
    wait_for_jobs(lib_path)
    assert lib.get_run(cheap.id).status == "cancelled"
    hold.unlink()
    at.run()
    assert any(b.key == "cs_start_cheap" for b in at.button)
    at.selectbox(key="score_run").set_value(cheap.id).run()
    at = after_jobs(at.button(key="score_resume").click().run(), lib_path)
    assert lib.get_run(cheap.id).status == "done"
    assert [r.id for r in lib.list_runs() if r.dataset_id == fresh] == [cheap.id]  # no strong run
    assert any(b.key == "cs_start_strong" for b in at.button)


def test_a_stopped_strong_job_stays_stopped(lib_path, monkeypatch, tmp_path):
    """The strong job that followed the cheap one by itself is not started again once it was stopped."""
    lib = Library(lib_path)
    base = lib.get_prompt("strong").dimension
    lib.freeze(replace(base, definition="Every sentence follows."), name="stronger")  # never asked: no cache
    lib.import_items("fresh", lib.dataset_items("sample@1")[:24])  # the cheap judge's answers are cached
    at, hold = held_on_fresh(lib, "stronger@1", monkeypatch, tmp_path)
    at = after_jobs(
        at.button(key="cs_start_cheap").click().run(), lib_path
    )  # the strong job starts by itself
    fresh = lib.get_dataset("fresh@1").id
    (strong,) = [r for r in lib.list_runs() if r.dataset_id == fresh and r.item_ids is not None]
    wait_until(lambda: len(lib.judged_item_ids(strong.id)) >= 3)
    at.run()
    at.button(key="cs_strong_stop").click().run()
    wait_for_jobs(lib_path)
    hold.unlink()
    at.run()
    assert lib.get_run(strong.id).status == "cancelled"
    assert lib.job_state(strong.id) not in ("starting", "running", "stopping")
    assert any(b.key == "cs_start_strong" for b in at.button)
