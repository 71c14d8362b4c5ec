"""AppTest: the Datasets page (versions, items, upload with a field mapping, preview, bad files)."""

from __future__ import annotations

import json

import pytest
from app_support import open_page, use_temp_library, values

from prompt_library import Library
from workbench_ui.upload import tag


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    """A temporary library for the app and the scripted judge (see app_support)."""
    return use_temp_library(tmp_path, monkeypatch)


CSV = (
    b"uid,article,system,coh,doc\n"
    b'a1,"First article, with a comma.",Summary one,4,d1\n'
    b"a2,Second article.,Summary **two** <script>x()</script>,2.5,d1\n"
    b"a3,Third article.,Summary three,1,d2\n"
)


LAST: list[str] = []  # the key prefix of the last upload's mapping widgets


def upload(at, name: str, data: bytes):
    at.file_uploader(key="ds_file").set_value((name, data, "text/plain"))
    LAST[:] = [f"ds_{tag(name, data)}_"]
    return at.run()


def k(part: str) -> str:
    """The key of one mapping widget of the last upload."""
    return LAST[0] + part


def map_csv(at, name: str = "mine"):
    at.selectbox(key=k("id")).set_value("uid")
    at.multiselect(key=k("inputs")).set_value(["article", "system"]).run()
    at.text_input(key=k("inputs_article")).set_value("document")
    at.text_input(key=k("inputs_system")).set_value("summary")
    at.multiselect(key=k("human")).set_value(["coh"]).run()
    at.text_input(key=k("human_coh")).set_value("coherence")
    at.text_input(key=k("name")).set_value(name)
    return at.run()


def test_lists_the_sample_set_and_its_items_as_data(lib_path):
    at = open_page("datasets")
    table = at.dataframe[0].value
    assert list(table["dataset"]) == ["sample@1"]
    lib = Library(lib_path)
    items = lib.dataset_items("sample")
    assert int(table["items"][0]) == len(items)
    assert table["human ratings"][0] == "coherence, consistency, fluency, relevance"
    shown = at.dataframe[1].value
    assert list(shown["id"]) == [i.id for i in items]
    [tricky] = [i for i in items if i.id == "d05-a"]
    assert shown.set_index("id").loc["d05-a", "summary"] == tricky.fields["summary"]  # verbatim


def test_upload_map_preview_and_import_a_csv(lib_path):
    at = map_csv(upload(open_page("datasets"), "mine.csv", CSV))
    assert not at.exception and not at.error
    assert at.selectbox(key=k("group")).value == "doc"  # guessed from the column name
    preview = at.dataframe[-1].value
    assert list(preview["id"]) == ["a1", "a2", "a3"]
    assert list(preview["coherence"]) == [4.0, 2.5, 1.0]
    assert preview["summary"][1] == "Summary **two** <script>x()</script>"
    at.button(key="ds_import").click().run()
    assert any("Imported mine.csv as mine@1 (3 items)" in s for s in values(at.success))
    items = Library(lib_path).dataset_items("mine")
    assert [i.fields for i in items][0] == {
        "document": "First article, with a comma.",
        "summary": "Summary one",
    }
    assert [i.human for i in items] == [{"coherence": 4.0}, {"coherence": 2.5}, {"coherence": 1.0}]
    assert [i.group for i in items] == ["d1", "d1", "d2"]
    at.button(key="ds_import").click().run()
    assert any("Identical content already stored: mine.csv as mine@1" in s for s in values(at.success))


def test_nested_jsonl_fields_are_offered_as_dotted_paths(lib_path):
    rows = [
        {"id": f"r{n}", "text": {"src": f"doc {n}", "out": f"sum {n}"}, "scores": {"coherence": n}}
        for n in (1, 2)
    ]
    at = upload(open_page("datasets"), "nested.jsonl", "\n".join(map(json.dumps, rows)).encode())
    assert {"text.src", "text.out", "scores.coherence"} <= set(at.multiselect(key=k("inputs")).options)
    at.multiselect(key=k("inputs")).set_value(["text.src"]).run()
    assert at.text_input(key=k("inputs_text.src")).value == "src"  # default name: the last segment
    assert list(at.dataframe[-1].value["src"]) == ["doc 1", "doc 2"]


def test_a_bad_row_stops_the_import_with_file_line_and_reason(lib_path):
    bad = CSV.replace(b"2.5", b"good")
    at = map_csv(upload(open_page("datasets"), "bad.csv", bad))
    assert not at.exception
    [message] = values(at.error)
    assert "line 3" in message and "not a number" in message and "'good'" in message
    assert "ds_import" not in [b.key for b in at.button]  # nothing to import from a bad file
    assert [d.name for d in Library(lib_path).list_datasets()] == ["sample"]


def test_broken_json_is_a_message(lib_path):
    at = upload(open_page("datasets"), "broken.jsonl", b'{"id": "a", "x": 1}\n{"id": "b", \n')
    assert not at.exception
    assert any("line 2" in e and "broken JSON" in e for e in values(at.error))


def test_column_names_from_the_file_show_literally_in_labels(lib_path):
    data = b"id,**bold** <b>col</b>\nx1,some text\n"
    at = upload(open_page("datasets"), "odd.csv", data)
    at.multiselect(key=k("inputs")).set_value(["**bold** <b>col</b>"]).run()
    assert not at.exception
    [box] = [t for t in at.text_input if t.key == k("inputs_**bold** <b>col</b>")]
    # The visible label is a caption with every Markdown character escaped; the box keeps the plain name as
    # its hidden label, which is what a screen reader reads (no backslashes).
    assert (
        box.label == "name for column '**bold** <b>col</b>'" and box.proto.label_visibility.value == 2
    )  # COLLAPSED
    assert r"name for column '\*\*bold\*\* \<b\>col\</b\>'" in [c.value for c in at.caption]


def test_a_second_upload_starts_from_its_own_name_and_a_fresh_mapping(lib_path):
    at = map_csv(upload(open_page("datasets"), "mine.csv", CSV), name="first")
    other = CSV.replace(b"a1,", b"b1,").replace(b"a2,", b"b2,")
    at = upload(at, "second.csv", other)
    assert not at.exception and not at.error
    assert at.text_input(key=k("name")).value == "second"  # not "first" from the earlier file
    assert at.multiselect(key=k("inputs")).value == [] and at.multiselect(key=k("human")).value == []


def test_an_unterminated_quote_is_refused_with_the_line_and_the_uploaded_name(lib_path):
    broken = b'uid,article,system\na1,fine,one\na2,"never closed,two\na3,third,three\n'
    at = upload(open_page("datasets"), "golden.csv", broken)
    [message] = values(at.error)
    assert message.startswith("golden.csv, line 3") and "never closed" in message
    assert "geval-uploads" not in message  # never the temporary copy's path
    assert "ds_import" not in [b.key for b in at.button]


def test_a_json_array_is_accepted_and_the_table_refreshes_after_import(lib_path):
    rows = [{"id": f"r{n}", "doc": f"doc {n}", "out": f"sum {n}"} for n in (1, 2)]
    at = upload(open_page("datasets"), "arr.json", json.dumps(rows, indent=2).encode())
    at.multiselect(key=k("inputs")).set_value(["doc", "out"]).run()
    at.button(key="ds_import").click().run()
    assert not at.exception and not at.error
    assert any("Imported arr.json as arr@1 (2 items)" in s for s in values(at.success))
    assert list(at.dataframe[0].value["dataset"]) == ["arr@1", "sample@1"]  # drawn again after the import


def test_a_dataset_is_archived_hidden_and_restored(lib_path):
    lib = Library(lib_path)
    sample = lib.get_dataset("sample")
    at = open_page("datasets")
    at.multiselect(key="archive_dataset_pick").set_value([sample.id]).run()
    at.button(key="archive_dataset_go").click().run()
    assert not at.exception and lib.archived_ids("dataset") == {sample.id}
    assert "No dataset yet" in " ".join(values(at.info))
    assert lib.dataset_items("sample")  # kept whole in the library
    score = open_page("score")
    assert "add a dataset first" in " ".join(values(score.info))  # hidden from the Score page's picker too
    at.multiselect(key="archive_dataset_restore").set_value([sample.id]).run()
    at.button(key="archive_dataset_back").click().run()
    assert lib.archived_ids("dataset") == set()
    assert list(at.dataframe[0].value["dataset"]) == ["sample@1"]


def test_a_rating_column_is_named_for_the_dimension_it_rates():
    from workbench_ui.upload import rating_name

    dims = ["coherence", "helpfulness"]
    assert rating_name("human_helpfulness", dims) == "helpfulness"
    assert rating_name("scores.coherence", dims) == "coherence"
    assert rating_name("Helpfulness rating", dims) == "helpfulness"
    assert rating_name("expert_fluency_mean", dims) == "fluency"  # no such dimension yet: the affixes dropped
    assert rating_name("human", dims) == "human"  # nothing but an affix: the name as it was


def test_a_dataset_is_split_on_its_page_and_the_score_page_offers_dev_then_records_test(lib_path):
    from app_support import after_jobs

    from geval_core.run.splits import get_split, sealed_uses

    at = open_page("datasets")
    at.selectbox(key="ds_browse").set_value("sample@1").run()
    at.button(key="seal_split_make").click().run()
    lib = Library(lib_path)
    split = get_split(lib, lib.get_dataset("sample").id)
    assert any(
        c.startswith(f"Split {split['hash'][:12]} (by group, seed 0): {len(split['dev'])} dev items")
        for c in values(at.caption)
    )
    at.switch_page("app_pages/score.py").run()
    at.radio(key="score_judge_source").set_value("sidebar").run()
    assert at.radio(key="score_side").value == "dev"
    assert int(next(m.value for m in at.metric if m.label == "Items")) == len(split["dev"])
    at = after_jobs(at.button(key="score_start").click().run(), lib_path)
    (run,) = lib.list_runs()
    assert set(run.item_ids) == set(split["dev"]) and sealed_uses(lib, split) == []
    at.radio(key="score_side").set_value("test").run()
    at = after_jobs(at.button(key="score_start").click().run(), lib_path)
    [test_run] = [r for r in lib.list_runs() if r.id != run.id]
    assert set(test_run.item_ids) == set(split["test"])
    assert [(u["prompt_id"], u["run_id"]) for u in sealed_uses(lib, split)] == [
        (test_run.prompt_id, test_run.id)
    ]


def test_the_upload_form_guesses_the_inputs_of_frozen_prompts_and_a_topic_like_group():
    from workbench_ui.upload import guess_group, guess_inputs

    cols = ["id", "topic", "Document", "summary", "stars"]
    assert guess_inputs(cols, ["document", "summary", "context"]) == ["Document", "summary"]
    assert guess_group(cols) == "topic"
    assert guess_group(["id", "conv_id", "reply"]) == "conv_id"  # another *_id column names what items share
    assert guess_group(["item_id", "reply"]) is None  # the item id itself is no group
