"""AppTest: on a split dataset the Agreement page's figures (diagnostics included) use the dev side; the sealed
test side opens only on a click, which is recorded; a prompt's example items are left out and counted."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_support import metric, open_page, page_text, use_temp_library, values
from scipy import stats as sp

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.splits import get_split, make_split, sealed_uses
from geval_core.types import Example, JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


@pytest.fixture
def split_run(tmp_path, monkeypatch):
    """The sample dataset split by document, one run over all of it."""
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        data = lib.get_dataset("sample")
        split, _ = make_split(lib, data.id, dev=0.6, seed=3)
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    return path, split, run_id


def spearman_on(lib, run_id: str, ids: set[str]) -> float:
    items = {i.id: i for i in lib.dataset_items("sample")}
    rows = [r for r in lib.judgments(run_id) if r["item_id"] in ids and r["score"] is not None]
    return sp.spearmanr(
        [r["score"] for r in rows], [items[r["item_id"]].human["coherence"] for r in rows]
    ).statistic


def test_the_page_reads_the_dev_side_and_opens_the_test_side_only_on_a_recorded_click(split_run):
    path, split, run_id = split_run
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    at.toggle(key="ag_every_ci").set_value(False).run()
    lib = Library(path)
    assert any(
        c.startswith(f"Dev side of split {split['hash'][:12]} ({len(split['dev'])} items)")
        for c in values(at.caption)
    )
    dataset_row = next(
        d for d in at.dataframe if "reading" in d.value.columns or "Spearman" in str(d.value.columns)
    )
    assert dataset_row is not None
    assert int(metric(at, "Items")) <= len(split["dev"])
    pooled = agree_rows(at)
    assert pooled["Spearman"] == pytest.approx(spearman_on(lib, run_id, set(split["dev"])), abs=5e-4)
    at.radio(key="seal_side").set_value("test").run()
    assert any("The test side is sealed" in w for w in values(at.warning))
    assert sealed_uses(lib, get_split(lib, lib.get_dataset("sample").id)) == []  # not opened yet: dev still
    assert agree_rows(at)["Spearman"] == pytest.approx(pooled["Spearman"], abs=5e-4)
    at.button(key="seal_open").click().run()
    uses = sealed_uses(lib, get_split(lib, lib.get_dataset("sample").id))
    assert [u["prompt_id"] for u in uses] == [lib.get_prompt("coherence").id] and uses[0]["run_id"] == run_id
    assert agree_rows(at)["Spearman"] == pytest.approx(spearman_on(lib, run_id, set(split["test"])), abs=5e-4)
    at.run()  # a rerun on the open test side records nothing more
    assert len(sealed_uses(lib, get_split(lib, lib.get_dataset("sample").id))) == 1
    assert "recorded: 1 prompt evaluated on this test side" in page_text(at)


def agree_rows(at) -> dict:
    """The dataset-level weighted row of the readings table, as numbers."""
    table = next(d.value for d in at.dataframe if "reading" in d.value.columns)
    row = table[table["reading"].str.startswith("dataset-level, weighted")].iloc[0]
    return {"Spearman": float(str(row["Spearman"]).split()[0])}


def test_example_items_are_left_out_and_counted(tmp_path, monkeypatch):
    path = use_temp_library(tmp_path, monkeypatch)
    with Library(path) as lib:
        base = lib.get_prompt("coherence")
        chosen = lib.dataset_items("sample")[:3]
        examples = tuple(Example(int(i.human["coherence"]), i.id, dict(i.fields)) for i in chosen)
        prompt = lib.freeze(replace(base.dimension, examples=examples), name="coherence").prompt
        items = lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
    at = open_page("agreement")
    assert "3 example item(s) of the prompt left out." in values(at.caption)
    at.number_input(key="ag_boot").set_value(0).run()
    lib = Library(path)
    rest = {i.id for i in items} - {i.id for i in chosen}
    assert agree_rows(at)["Spearman"] == pytest.approx(spearman_on(lib, run_id, rest), abs=5e-4)
