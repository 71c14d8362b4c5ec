"""AppTest: the Library page (versions, side-by-side diff, export + snippet, hash-checked import)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import scipy.stats as st
from app_support import metric, open_page, page_text, use_temp_library, values
from runner_helpers import judged_run

from geval_core.export import export_prompt
from prompt_library import Library


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


def second_version(lib: Library) -> None:
    dim = lib.get_prompt("coherence").dimension
    lib.freeze(replace(dim, definition="How well the sentences of the summary connect."), name="coherence")


def test_lists_every_frozen_version(lib_path):
    second_version(Library(lib_path))
    at = open_page("library")
    table = at.dataframe[0].value
    assert list(table["prompt"]) == [
        "coherence@1",
        "coherence@2",
        "consistency@1",
        "fluency@1",
        "relevance@1",
    ]
    lib = Library(lib_path)
    assert list(table["hash"]) == [p["id"][:12] for p in lib.list_prompts()]


def test_a_single_version_is_shown_once_without_a_comparison(lib_path):
    at = open_page("library")
    assert at.selectbox(key="lib_name").value == "coherence"
    assert "Compare versions" not in [h.value for h in at.subheader]
    assert not [s for s in at.selectbox if s.key == "lib_a_coherence"]
    assert not [c for c in at.code if c.language == "diff"] and not any(
        "unchanged" in m.value for m in at.markdown
    )
    assert "is the only version of coherence" in page_text(at)
    definition = Library(lib_path).get_prompt("coherence").dimension.definition
    assert [c.value for c in at.code].count(definition) == 1  # its content once, not side by side
    second_version(Library(lib_path))
    at = open_page("library")
    assert "Compare versions" in [h.value for h in at.subheader]


def test_diff_of_two_versions_shows_what_changed(lib_path):
    lib = Library(lib_path)
    old = lib.get_prompt("coherence").dimension.definition
    second_version(lib)
    at = open_page("library")
    assert at.selectbox(key="lib_name").value == "coherence"
    assert at.selectbox(key="lib_a_coherence").value == "coherence@1"
    assert at.selectbox(key="lib_b_coherence").value == "coherence@2"
    headings = [m.value for m in at.markdown]
    assert "**Definition** — changed" in headings
    assert "**Anchors** — unchanged" in headings and "**Steps** — unchanged" in headings
    assert "**Settings** — changed" in headings  # the hash differs
    [diff] = [
        c.value
        for c in at.code
        if c.language == "diff" and "Definition" not in c.value and f"-{old}" in c.value
    ]
    assert "+How well the sentences of the summary connect." in diff
    assert "--- coherence@1" in diff and "+++ coherence@2" in diff


def test_export_offers_the_file_and_the_production_snippet(lib_path):
    at = open_page("library")
    assert at.get("download_button")
    snippets = [c.value for c in at.code if c.language == "python"]
    assert any("load_prompt('coherence@1.json')" in s and "score_item(prompt" in s for s in snippets)


def test_import_checks_the_hash(lib_path, tmp_path):
    other = Library(tmp_path / "other.db")
    dim = replace(other.get_prompt("fluency").dimension, name="Readability")
    data = export_prompt(other.freeze(dim).prompt)
    at = open_page("library")
    tampered = {**data, "definition": data["definition"] + " (edited)"}
    at.file_uploader(key="lib_upload").set_value(
        ("bad.json", json.dumps(tampered).encode(), "application/json")
    )
    at.run()
    at.button(key="lib_import").click().run()
    assert not at.exception
    assert any("does not match its hash" in e for e in values(at.error))
    at.file_uploader(key="lib_upload").set_value(("ok.json", json.dumps(data).encode(), "application/json"))
    at.run()
    at.button(key="lib_import").click().run()
    assert not at.exception and not at.error
    assert any("Imported as readability@1" in s for s in values(at.success))
    assert Library(lib_path).get_prompt("readability@1").id == data["content_hash"]
    assert data["content_hash"] in page_text(at)


def test_a_file_that_is_not_json_is_a_message(lib_path):
    at = open_page("library")
    at.file_uploader(key="lib_upload").set_value(("x.json", b"\xff\xfe not json", "application/json"))
    at.run()
    assert not at.exception
    assert any("is not a JSON file" in e for e in values(at.error))


def group_level(judge: dict[str, float], items, fn) -> float:
    """Per doc group, the correlation of judge and human; constant groups skipped; averaged."""
    by_group: dict[str, list] = {}
    for item in items:
        by_group.setdefault(item.group, []).append((judge[item.id], item.human["coherence"]))
    values_ = []
    for pairs in by_group.values():
        xs, ys = zip(*pairs, strict=True)
        if len(pairs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
            continue
        values_.append(fn(xs, ys).statistic)
    return sum(values_) / len(values_)


def test_export_attaches_the_agreement_of_a_finished_run(lib_path, downloads):
    lib = Library(lib_path)
    unfinished, _ = judged_run(lib, finish=False)
    prompt = lib.get_prompt("coherence")
    at = open_page("library")
    assert "No finished run of this version" in page_text(at)
    assert json.loads(downloads(at))["agreement"] is None
    run_id, judge = judged_run(lib)
    at = open_page("library")
    attach = at.checkbox(key=f"lib_attach_{prompt.id}")
    assert json.loads(downloads(at))["agreement"] is None  # optional: nothing attached until asked
    attach.check().run()
    assert not at.exception and not at.error
    choice = at.selectbox(key=f"lib_agree_run_{prompt.id}")
    assert choice.options == [choice.format_func(run_id)]  # the unfinished run is not offered
    assert unfinished not in choice.options[0]
    assert at.selectbox(key=f"lib_agree_human_{run_id}").value == "coherence"
    exported = json.loads(downloads(at))
    agreement = exported["agreement"]
    items = lib.dataset_items(lib.get_dataset("sample").id)
    assert agreement["run"] == run_id and agreement["human"] == "coherence"
    assert agreement["dataset"] == "sample@1" and agreement["reading"] == "group"
    assert agreement["items"] == len(items)
    assert agreement["spearman"] == pytest.approx(group_level(judge, items, st.spearmanr))
    assert agreement["kendall"] == pytest.approx(group_level(judge, items, st.kendalltau))
    assert exported["content_hash"] == prompt.id
    # The page shows the figures it attaches.
    assert metric(at, "Spearman") == f"{agreement['spearman']:.3f}"
    assert metric(at, "Kendall τ-b") == f"{agreement['kendall']:.3f}"
    assert metric(at, "Tie rate (judge)") == f"{agreement['tie_rate']:.3f}"
    assert metric(at, "Items") == str(len(items))
    text = page_text(at)
    assert "Reading: group" in text and "Dataset: sample@1" in text and run_id in text
    # The export still imports: the agreement is outside the hashed content.
    assert Library(lib_path).import_prompt(exported).prompt.id == prompt.id


def rated_judged_run(lib: Library) -> str:
    """A finished run of coherence@1 on the sample set saved with three raters per item (coherence.0-2)."""
    from geval_core.judgment import Judgment

    items = []
    for n, item in enumerate(lib.dataset_items("sample")):
        base = item.human["coherence"]
        raters = [base, max(1.0, base - (n % 2)), min(5.0, base + (n % 3 == 0))]
        human = {**{f"coherence.{k}": v for k, v in enumerate(raters)}, "coherence": sum(raters) / 3}
        items.append(replace(item, human=human))
    dataset = lib.import_items("rated", items)
    run_id = lib.create_run("coherence", dataset["id"], lib.get_prompt("coherence").dimension.judge)
    for n, item in enumerate(items):
        score = item.human["coherence"] + (0.4 if n % 3 == 0 else -0.2)
        lib.save_judgment(run_id, Judgment(item.id, score=score, mode="logprobs"))
    lib.finish_run(run_id, model_version="scripted-1")
    return run_id


def test_the_attached_agreement_shows_the_raters_own_beside_the_judges(lib_path, downloads):
    lib = Library(lib_path)
    open_page("library")  # seeds the examples
    run_id = rated_judged_run(lib)
    prompt = lib.get_prompt("coherence")
    at = open_page("library")
    at.checkbox(key=f"lib_attach_{prompt.id}").check().run()
    assert at.selectbox(key=f"lib_agree_human_{run_id}").value == "coherence"
    raters = json.loads(downloads(at))["agreement"]["raters"]
    assert metric(at, "Raters' own Spearman (mean)") == f"{raters['spearman']['mean']:.3f}"
    assert "the raters' own (each rater against the mean of the other raters): Spearman" in page_text(at)
    exported = downloads(at).encode()
    at.file_uploader(key="lib_upload").set_value(("coherence.json", exported, "application/json")).run()
    at.button(key="lib_import").click().run()
    [said] = [i for i in values(at.info) if i.startswith("Attached agreement: judge against people")]
    assert "the raters' own (each rater against the mean of the other raters)" in said


def test_an_agreement_without_raters_says_so(lib_path, downloads):
    lib = Library(lib_path)
    judged_run(lib)
    prompt = lib.get_prompt("coherence")
    at = open_page("library")
    at.checkbox(key=f"lib_attach_{prompt.id}").check().run()
    assert "raters" not in json.loads(downloads(at))["agreement"]
    assert "No raters' own agreement attached: the dataset has no per-rater ratings" in page_text(at)
