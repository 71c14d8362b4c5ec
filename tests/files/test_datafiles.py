"""JSONL/CSV rows with line numbers and dotted-path lookups."""

from __future__ import annotations

import pytest

from geval_core.errors import InputError
from geval_core.files.datafiles import field_paths, lookup, read_rows, require


def write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def test_jsonl_rows_carry_their_line_numbers_and_skip_blank_lines(tmp_path):
    path = write(tmp_path, "a.jsonl", '{"id": 1}\n\n  \n{"id": "b", "s": "x\u2028y"}\n')
    assert list(read_rows(path)) == [(1, {"id": 1}), (4, {"id": "b", "s": "x\u2028y"})]


def test_csv_rows_start_at_line_two_and_keep_multiline_cells(tmp_path):
    path = write(tmp_path, "a.csv", '\ufeffid,score,scores.coherence\n1,3,4\n2,"two\nlines",5\n\n3,4,\n')
    assert list(read_rows(path)) == [
        (2, {"id": "1", "score": "3", "scores.coherence": "4"}),
        (3, {"id": "2", "score": "two\nlines", "scores.coherence": "5"}),
        (6, {"id": "3", "score": "4", "scores.coherence": ""}),
    ]


def test_a_json_array_is_read_with_the_line_each_object_starts_on(tmp_path):
    path = write(tmp_path, "a.json", '[\n  {"id": 1, "t": "a, [b]"},\n  {"id": 2,\n   "t": "}"}\n]\n')
    assert list(read_rows(path)) == [(2, {"id": 1, "t": "a, [b]"}), (3, {"id": 2, "t": "}"})]
    assert list(read_rows(write(tmp_path, "b.json", '{"id": 1}\n{"id": 2}\n'))) == [
        (1, {"id": 1}),
        (2, {"id": 2}),
    ]


@pytest.mark.parametrize(
    ("name", "content", "line", "message"),
    [
        ("bad.jsonl", '{"id": 1}\n{"id": 2,}\n', 2, "broken JSON"),
        ("list.jsonl", '{"id": 1}\n[1, 2]\n', 2, "expected a JSON object"),
        ("enc.jsonl", b'{"id": 1}\n{"id": "\xff"}\n', 2, "not UTF-8"),
        ("enc.csv", b"id,score\n1,2\n3,\xe9\n", 3, "not UTF-8"),
        ("quote.csv", 'id,text\n1,fine\n2,"never closed\n3,more\n', 3, "a quote opened here is never closed"),
        ("short.csv", "id,text,score\n1,a,3\n2,b\n", 3, "2 cells where the header has 3"),
        ("long.csv", "id,text\n1,a,extra\n", 2, "3 cells where the header has 2"),
        ("array.json", '[{"id": 1},\n 7]', 2, "expected a JSON object"),
    ],
)
def test_broken_files_name_the_file_and_the_line(tmp_path, name, content, line, message):
    path = write(tmp_path, name, content)
    with pytest.raises(InputError, match=message) as info:
        list(read_rows(path))
    assert info.value.file == str(path) and info.value.line == line
    assert f"{path}, line {line}" in str(info.value)


def test_missing_and_unsupported_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(read_rows(tmp_path / "absent.jsonl"))
    with pytest.raises(InputError, match="unsupported file type '.xlsx'"):
        list(read_rows(write(tmp_path, "a.xlsx", "x")))


def test_lookup_dotted_paths():
    row = {"scores": {"coherence": 4, "list": [1, 2]}, "a.b": 7, "raw": '{"x": {"y": 3}}', "n": None}
    assert lookup(row, "scores.coherence") == 4
    assert lookup(row, "scores.list.1") == 2
    assert lookup(row, "a.b") == 7  # a key containing dots matches whole first
    assert lookup(row, "raw.x.y") == 3  # a dict stored as a JSON string is read through
    assert lookup(row, "n") is None  # present but null is not missing
    assert lookup(row, "scores.fluency", default="-") == "-"
    with pytest.raises(KeyError):
        lookup(row, "scores.fluency")
    with pytest.raises(KeyError):
        lookup(row, "scores.list.5")


def test_require_names_file_line_field_and_the_fields_there_are():
    with pytest.raises(InputError) as info:
        require({"id": 1, "scores": {"coherence": 4}}, "scores.coh", file="d.jsonl", line=9)
    assert str(info.value) == (
        "d.jsonl, line 9, field 'scores.coh': no such field (fields here: id, scores.coherence)"
    )


def test_field_paths_walks_nested_dicts_in_order():
    assert field_paths({"a": 1, "b": {"c": 1, "d": {"e": 2}}, "f": [1], "g": {}}) == [
        "a",
        "b.c",
        "b.d.e",
        "f",
        "g",
    ]
