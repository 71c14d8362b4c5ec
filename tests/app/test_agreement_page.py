"""AppTest: the Agreement page; figures checked against scipy, comparison against hand-made diffs."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

import numpy as np
import pytest
from app_support import metric, open_page, use_temp_library, values
from scipy import stats as sp

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeSettings
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def scored_run(lib: Library, settings: JudgeSettings = SCRIPTED, judge=None) -> str:
    prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
    run_id = lib.create_run(prompt.id, "sample", settings)
    run_scoring(prompt, items, judge or ScriptedJudge(), lib, run_id, RunOptions(settings=settings))
    return run_id


def pairs(lib: Library, run_id: str, key: str = "score"):
    items = {i.id: i for i in lib.dataset_items("sample")}
    rows = [r for r in lib.judgments(run_id) if r[key] is not None]
    return (
        [r[key] for r in rows],
        [items[r["item_id"]].human["coherence"] for r in rows],
        [items[r["item_id"]].group for r in rows],
    )


def group_mean(judge, human, groups, fn) -> float:
    by = defaultdict(list)
    for j, h, g in zip(judge, human, groups, strict=True):
        by[g].append((j, h))
    values = [
        fn([j for j, _ in v], [h for _, h in v])[0]
        for v in by.values()
        if len(v) > 1 and len(set(j for j, _ in v)) > 1 and len(set(h for _, h in v)) > 1
    ]
    return float(np.mean(values))


def tie_rate(values) -> float:
    found = list(combinations(values, 2))
    return sum(round(a, 6) == round(b, 6) for a, b in found) / len(found)


def open_agreement(bootstrap: int = 0):
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(bootstrap).run()
    return at


def test_group_level_headline_matches_scipy(lib_path):
    lib = Library(lib_path)
    run_id = scored_run(lib)
    at = open_agreement()
    judge, human, groups = pairs(lib, run_id)
    assert at.selectbox(key="ag_field").value == "coherence"
    assert metric(at, "Spearman ρ") == f"{group_mean(judge, human, groups, sp.spearmanr):.3f}"
    assert metric(at, "Kendall τ-b") == f"{group_mean(judge, human, groups, sp.kendalltau):.3f}"
    assert metric(at, "Pearson r") == f"{group_mean(judge, human, groups, sp.pearsonr):.3f}"
    assert metric(at, "Items") == str(len(judge))


def test_dataset_level_and_top_token_rows_match_scipy(lib_path):
    lib = Library(lib_path)
    run_id = scored_run(lib)
    at = open_agreement()
    table = at.dataframe[0].value.set_index("reading")
    assert list(table.index) == [
        "group-level, weighted score",
        "dataset-level, weighted score",
        "group-level, top-token score",
        "dataset-level, top-token score",
    ]
    judge, human, _ = pairs(lib, run_id)
    row = table.loc["dataset-level, weighted score"]
    assert row["Spearman"] == f"{sp.spearmanr(judge, human)[0]:.3f}"
    assert row["Kendall τ-b"] == f"{sp.kendalltau(judge, human)[0]:.3f}"
    assert row["Pearson"] == f"{sp.pearsonr(judge, human)[0]:.3f}"
    assert row["tie rate (judge)"] == f"{tie_rate(judge):.3f}"
    top, human_top, _ = pairs(lib, run_id, "top_rating")
    top_row = table.loc["dataset-level, top-token score"]
    assert top_row["Spearman"] == f"{sp.spearmanr(top, human_top)[0]:.3f}"
    assert top_row["tie rate (judge)"] == f"{tie_rate(top):.3f}"
    assert float(top_row["tie rate (judge)"]) > float(row["tie rate (judge)"])  # weighting breaks ties


def test_bootstrap_intervals_bracket_the_figures(lib_path):
    scored_run(Library(lib_path))
    at = open_agreement(bootstrap=200)
    at.toggle(key="ag_every_ci").set_value(True).run()  # the headline's intervals only, unless asked
    cell = at.dataframe[0].value.set_index("reading").loc["dataset-level, weighted score", "Spearman"]
    value, interval = cell.split(" ", 1)
    lo, hi = (float(x) for x in interval.strip("[]").split(", "))
    assert lo <= float(value) <= hi and hi - lo > 0.01


def test_replies_curve_for_a_sampling_run(lib_path):
    lib = Library(lib_path)
    settings = JudgeSettings(provider="scripted", model="scripted-1", mode="sampling", n=4, temperature=1.0)
    run_id = scored_run(lib, settings)
    at = open_agreement()
    curve = [d.value for d in at.dataframe if "k" in d.value.columns][0]
    assert list(curve["k"]) == [1, 2, 4]
    judge, human, groups = pairs(lib, run_id)
    first = curve.set_index("k").loc[1]
    assert first["spearman"] == pytest.approx(group_mean(judge, human, groups, sp.spearmanr))


def test_compare_two_runs_warns_and_ranks_the_movers(lib_path):
    lib = Library(lib_path)
    run_a = scored_run(lib)
    shifted = JudgeSettings(provider="scripted", model="scripted-1", temperature=0.5)

    def script(request):  # a different judge: the design doc's example on one document, varied elsewhere
        text = request.messages[0]["content"]
        if "Marlow Bay" in text:
            return {"3": 0.6, "4": 0.3, "2": 0.05, "The": 0.05}
        p4 = (len(text) % 10) / 20
        return {"3": 0.9 - p4, "4": p4, "The": 0.1}

    run_b = scored_run(lib, shifted, ScriptedJudge(script))
    at = open_page("agreement")
    at.selectbox(key="ag_run").set_value(run_a).run()
    at.selectbox(key="ag_other").set_value(run_b).run()
    assert not at.exception
    assert any("Different judges" in w and "temperature: 0.0 vs 0.5" in w for w in values(at.warning))
    a = {r["item_id"]: r["score"] for r in lib.judgments(run_a)}
    b = {r["item_id"]: r["score"] for r in lib.judgments(run_b)}
    assert b["d01-a"] == pytest.approx((3 * 0.6 + 4 * 0.3 + 2 * 0.05) / 0.95)  # the design doc's 3.26 example
    diffs = {i: a[i] - b[i] for i in a}  # run A (above) minus run B, as the paired change reads
    mover = max(diffs, key=lambda i: abs(diffs[i]))
    movers = [d.value for d in at.dataframe if "A − B" in d.value.columns and "item" in d.value.columns][0]
    assert movers["item"][0] == mover
    assert movers["A − B"][0] == pytest.approx(diffs[mover])
    assert metric(at, "Items in both") == str(len(a))
    each = [d.value for d in at.dataframe if "reading" in d.value.columns][
        -1
    ]  # the two runs, after the headline's
    assert each["reading"][0].startswith("A: ") and each["reading"][1].startswith("B: ")
    judge_b, human_b, _ = pairs(lib, run_b)
    assert each["Spearman"][1].split(" ")[0] == f"{sp.spearmanr(judge_b, human_b)[0]:.3f}"
    # Did A improve on B? The paired change in agreement with people, A minus B, with its interval.
    change = next(d.value for d in at.dataframe if "A − B" in d.value.columns and "figure" in d.value.columns)
    judge_a, human_a, _ = pairs(lib, run_a)
    spearman = change[change["figure"] == "Spearman"].iloc[0]
    expected = sp.spearmanr(judge_a, human_a)[0] - sp.spearmanr(judge_b, human_b)[0]
    assert spearman["A − B"] == pytest.approx(expected, abs=5e-4)
    low, high = (float(x) for x in spearman["95% interval"].split(" to "))
    assert low <= spearman["A − B"] <= high


def test_the_page_says_what_was_resampled(lib_path):
    scored_run(Library(lib_path))
    at = open_agreement(bootstrap=200)
    captions = " ".join(c.value for c in [*at.caption, *at.warning]).replace("\\", "")  # markdown escapes off
    assert "200 resamples of the 24 groups, each drawn whole, with replacement" in captions
    notes = [c.value for c in at.caption if "studentized" in c.value or "t(units-1)" in c.value]
    assert notes and not [
        w for w in at.warning if "studentized" in w.value
    ]  # the method's words: its expander
    frame = at.dataframe[0].value.set_index("reading")
    assert frame.loc["group-level, weighted score", "resampled"] == "24 groups"


def few_groups_page(lib_path, n_groups: int):
    """The Agreement page on a run over n_groups documents of 5 items each."""
    from geval_core.types import Item

    lib = Library(lib_path)
    rng = np.random.default_rng(2)
    items = [
        Item(
            f"f{k}",
            {"document": f"doc {k // 5}", "summary": f"summary {k}"},
            {"coherence": float(rng.integers(1, 6))},
            f"d{k // 5}",
        )
        for k in range(5 * n_groups)
    ]
    lib.import_items("few", items)
    prompt = lib.get_prompt("coherence")
    run_id = lib.create_run(prompt.id, "few", SCRIPTED)
    run_scoring(prompt, lib.dataset_items("few"), ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_agreement(bootstrap=100)
    at.selectbox(key="ag_run").set_value(run_id).run()
    assert not at.exception, [e.value for e in at.exception]
    return at, " ".join(w.value for w in at.warning).replace("\\", "")  # markdown escapes off


def test_few_groups_withhold_the_intervals_with_the_reason(lib_path):
    at, warnings = few_groups_page(lib_path, 6)
    assert "Intervals withheld: 6 groups resampled, fewer than 10" in warnings
    cell = at.dataframe[0].value.set_index("reading").loc["group-level, weighted score", "Spearman"]
    assert "[" not in cell and "no CI: 6 groups" in cell


def test_10_to_19_groups_show_intervals_with_a_caution(lib_path):
    at, warnings = few_groups_page(lib_path, 12)
    assert "Caution: few groups: 12 resampled" in warnings
    cell = at.dataframe[0].value.set_index("reading").loc["group-level, weighted score", "Spearman"]
    assert "[" in cell
