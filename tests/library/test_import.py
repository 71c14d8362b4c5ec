"""Dataset import from CSV/JSONL: mappings, dotted paths, re-import reuse, and every malformed case."""

from __future__ import annotations

import json

import pytest

from geval_core.errors import InputError
from prompt_library import DatasetMapping, Library

MAPPING = DatasetMapping(
    id="id",
    inputs={"document": "source", "summary": "output"},
    human={"coherence": "scores.coherence"},
    group="doc_id",
)


def jsonl(tmp_path, rows, name="data.jsonl"):
    path = tmp_path / name
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def row(i, **changes):
    base = {
        "id": f"i{i}",
        "doc_id": f"doc{i // 2}",
        "source": f"Source {i}.",
        "output": f"Output {i}.",
        "scores": {"coherence": i % 5 + 1},
    }
    base.update(changes)
    return base


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.db", seed_examples=False)
    yield library
    library.close()


def test_jsonl_import_with_dotted_paths_and_groups(lib, tmp_path):
    path = jsonl(tmp_path, [row(0), row(1), row(2)])
    result = lib.import_dataset(path, "golden", MAPPING)
    assert result["created"] and result["label"] == "golden@1" and result["item_count"] == 3
    assert result["mapping"]["human"] == {"coherence": "scores.coherence"}
    items = lib.dataset_items("golden")
    assert [(i.id, i.group, i.human["coherence"]) for i in items] == [
        ("i0", "doc0", 1.0),
        ("i1", "doc0", 2.0),
        ("i2", "doc1", 3.0),
    ]
    assert items[1].fields == {"document": "Source 1.", "summary": "Output 1."}
    # The same content again (even from another file) reuses the version.
    again = lib.import_dataset(jsonl(tmp_path, [row(0), row(1), row(2)], "copy.jsonl"), "golden", MAPPING)
    assert not again["created"] and again["id"] == result["id"]


def test_csv_import_and_python_repr_scores(lib, tmp_path):
    path = tmp_path / "data.csv"
    # Topical-Chat style: a dict stored as a Python repr string; a quoted cell spanning two lines.
    path.write_text(
        "id,doc_id,source,output,scores\n"
        'a,d1,"line one\nline two",Out a,"{\'coherence\': 2.5}"\n'
        'b,d1,Src b,Out b,"{""coherence"": 4}"\n',
        encoding="utf-8",
    )
    result = lib.import_dataset(path, "csvset", MAPPING)
    items = lib.dataset_items(result["id"])
    assert [i.human["coherence"] for i in items] == [2.5, 4.0]
    assert items[0].fields["document"] == "line one\nline two"


def assert_refused(lib, path, line, *words):
    with pytest.raises(InputError) as info:
        lib.import_dataset(path, "bad", MAPPING)
    error = info.value
    assert error.file == str(path) and error.line == line
    for word in words:
        assert word in str(error)
    assert lib.list_datasets() == []
    assert lib._one("SELECT COUNT(*) AS n FROM items")["n"] == 0


def test_missing_id_is_refused(lib, tmp_path):
    bad = row(1)
    del bad["id"]
    assert_refused(lib, jsonl(tmp_path, [row(0), bad]), 2, "missing item id", "'id'")


def test_empty_id_is_refused(lib, tmp_path):
    assert_refused(lib, jsonl(tmp_path, [row(0), row(1, id="  ")]), 2, "missing item id")


def test_duplicate_id_is_refused(lib, tmp_path):
    assert_refused(lib, jsonl(tmp_path, [row(0), row(1), row(2, id="i0")]), 3, "duplicate id 'i0'", "line 1")


def test_missing_mapped_field_is_refused(lib, tmp_path):
    bad = row(1)
    del bad["output"]
    assert_refused(lib, jsonl(tmp_path, [row(0), bad]), 2, "input field 'summary'", "'output'")


def test_missing_nested_rating_is_refused(lib, tmp_path):
    assert_refused(
        lib, jsonl(tmp_path, [row(0), row(1, scores={"fluency": 2})]), 2, "human rating 'coherence'"
    )


def test_non_numeric_rating_is_refused(lib, tmp_path):
    path = jsonl(tmp_path, [row(0), row(1), row(2, scores={"coherence": "good"})])
    assert_refused(lib, path, 3, "not a number", "'good'")


def test_non_numeric_rating_in_csv_is_refused(lib, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(
        "id,doc_id,source,output,scores.coherence\na,d,s,o,3\nb,d,s,o,4 stars\n", encoding="utf-8"
    )
    assert_refused(lib, path, 3, "not a number", "'4 stars'")  # "n/a" is a missing rating, not an error


def test_broken_json_is_refused(lib, tmp_path):
    path = jsonl(tmp_path, [row(0), '{"id": "i1", "source": "unterminated', row(2)])
    assert_refused(lib, path, 2, "broken JSON")


def test_wrong_encoding_is_refused(lib, tmp_path):
    path = tmp_path / "latin1.jsonl"
    text = json.dumps(row(0)) + "\n" + json.dumps(row(1, output="Caf\u00e9"), ensure_ascii=False) + "\n"
    path.write_bytes(text.encode("latin-1"))
    assert_refused(lib, path, 2, "UTF-8")


def test_unsupported_file_and_empty_mapping(lib, tmp_path):
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"x")
    with pytest.raises(InputError, match="unsupported file type"):
        lib.import_dataset(path, "bad", MAPPING)
    with pytest.raises(InputError, match="at least one input"):
        lib.import_dataset(jsonl(tmp_path, [row(0)]), "bad", DatasetMapping())
    assert lib.list_datasets() == []


def test_csv_row_missing_a_mapped_column_is_refused(lib, tmp_path):
    path = tmp_path / "short.csv"
    # Line 3 stops after the source: a ragged row is refused as it is read, before any field is mapped.
    path.write_text("id,doc_id,source,output,scores.coherence\na,d,s,o,3\nb,d,s\n", encoding="utf-8")
    assert_refused(lib, path, 3, "broken CSV", "3 cells where the header has 5")


def test_csv_in_the_wrong_encoding_is_refused(lib, tmp_path):
    path = tmp_path / "cp1252.csv"
    path.write_bytes(
        "id,doc_id,source,output,scores.coherence\na,d,s,o,3\nb,d,Caf\u00e9,o,4\n".encode("cp1252")
    )
    assert_refused(lib, path, 3, "not UTF-8", "save the file as UTF-8")


def test_empty_rating_cell_is_missing_and_counted_not_read_as_zero(lib, tmp_path):
    path = tmp_path / "blank.csv"
    path.write_text("id,doc_id,source,output,scores.coherence\na,d,s,o,3\nb,d,s,o,\n", encoding="utf-8")
    result = lib.import_dataset(path, "blank", MAPPING)  # issue 12: a null rating imports as missing
    assert result["human_missing"] == {"coherence": 1}
    assert [i.human for i in lib.dataset_items("blank")] == [{"coherence": 3.0}, {}]


@pytest.mark.parametrize("mark", ["N/A", "na", "NaN", "null", "None", "-", " n/a "])
def test_a_rating_cell_that_says_no_rating_is_missing_and_counted(lib, tmp_path, mark):
    path = tmp_path / "marks.csv"
    path.write_text(
        f"id,doc_id,source,output,scores.coherence\na,d,s,o,3\nb,d,s,o,{mark}\n", encoding="utf-8"
    )
    result = lib.import_dataset(path, "marks", MAPPING)
    assert result["human_missing"] == {"coherence": 1}
    assert [i.human for i in lib.dataset_items(result["id"])] == [{"coherence": 3.0}, {}]
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("id,doc_id,source,output,scores.coherence\na,d,s,o,three\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a number: 'three'"):
        lib.import_dataset(wrong, "wrong", MAPPING)


def test_a_file_is_read_twice_row_by_row_and_a_change_between_the_reads_stores_nothing(
    lib, tmp_path, monkeypatch
):
    """The import never holds the file whole: a first read checks and hashes it, a second one stores it. A file
    written to between the two reads is refused; the version and its items are not half-stored."""
    import prompt_library.dataset_import as streamed

    path = jsonl(tmp_path, [row(i) for i in range(6)])
    reads = []
    real_read_rows = streamed.read_rows

    def read_rows_then_change(p):
        reads.append(p)
        yield from real_read_rows(p)
        if len(reads) == 1:  # after the checking read, before the storing one
            jsonl(tmp_path, [row(i) for i in range(5)] + [row(5, output="Changed.")])

    monkeypatch.setattr(streamed, "read_rows", read_rows_then_change)
    with pytest.raises(InputError, match="changed while they were imported") as refused:
        lib.import_dataset(path, "golden", MAPPING)
    assert str(path) in str(refused.value) and len(reads) == 2
    assert lib.list_datasets() == [] and lib._one("SELECT COUNT(*) AS n FROM items", [])["n"] == 0
    monkeypatch.setattr(streamed, "read_rows", real_read_rows)
    stored = lib.import_dataset(path, "golden", MAPPING)  # the file as it is now, read twice alike
    assert stored["created"] and stored["item_count"] == 6
    assert [i.fields["summary"] for i in lib.dataset_items(stored["id"])][-1] == "Changed."
    again = lib.import_items("golden", lib.dataset_items(stored["id"]))
    assert (
        again["id"] == stored["id"] and not again["created"]
    )  # a list and a file of one content: one version


def test_a_conversation_in_the_chat_apis_shape_is_imported_as_its_turns(lib, tmp_path):
    """A field holding chat messages ({"role", "content"}) reads as "role: content" lines, as score_items reads it;
    any other list stays JSON text."""
    from geval_core.prompts.inputs import cell_text

    chat = [
        {"role": "user", "content": "My order #123 hasn't arrived."},
        {"role": "assistant", "content": "Sorry! It ships today."},
    ]
    path = jsonl(tmp_path, [row(0, source=chat), row(1, source=["a", "b"])])
    stored = lib.import_dataset(path, "chat", MAPPING)
    first, second = lib.dataset_items(stored["id"])
    assert (
        first.fields["document"] == "user: My order #123 hasn't arrived.\nassistant: Sorry! It ships today."
    )
    assert second.fields["document"] == '["a","b"]'
    assert (
        cell_text(chat, 0, "conversation", True) == first.fields["document"]
    )  # one rule for files and frames
    with pytest.raises(InputError, match="holds a list, not text"):
        cell_text(["a", "b"], 3, "conversation", True)


def test_the_datasets_pages_path_gives_per_rater_columns_their_mean_and_counts_a_raters_missing_cells(
    lib, tmp_path
):
    """What the Datasets page does (read_items, then import_items with the mapping): as the CLI's import."""
    from prompt_library.datasets import read_items

    path = tmp_path / "raters.csv"
    path.write_text("id,source,r1,r2\na,s,4,N/A\nb,s,2,3\n", encoding="utf-8")
    mapping = DatasetMapping(inputs={"document": "source"}, human={"tone.0": "r1", "tone.1": "r2"})
    items = read_items(path, mapping)
    assert [i.human for i in items] == [
        {"tone.0": 4.0, "tone": 4.0},
        {"tone.0": 2.0, "tone.1": 3.0, "tone": 2.5},
    ]
    result = lib.import_items("raters", items, source="raters.csv", mapping=mapping)
    assert result["human_missing"] == {"tone": 0, "tone.0": 0, "tone.1": 1}
