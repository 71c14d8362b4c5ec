"""Frozen-prompt export/import (hash-checked), production scoring from an export, judgments export."""

from __future__ import annotations

import csv
import json
import math

import pytest
from paths import ROOT

from geval_core.errors import InputError, IntegrityError
from geval_core.export import (
    SCHEMA_VERSION,
    export_judgments,
    export_prompt,
    load_prompt,
    production_snippet,
    prompt_from_export,
    score_item,
    write_export,
)
from geval_core.prompts import content_hash, render
from geval_core.providers import ScriptedJudge
from prompt_library import Library

AGREEMENT = {"dataset": "sample@1", "human": "coherence", "spearman": 0.61, "kendall": 0.48}


@pytest.fixture
def library(tmp_path):
    lib = Library(tmp_path / "lib.db")
    yield lib
    lib.close()


def test_export_is_self_contained(library):
    prompt = library.get_prompt("coherence")
    data = export_prompt(prompt, agreement=AGREEMENT)
    dim = prompt.dimension
    assert data["schema_version"] == SCHEMA_VERSION and data["content_hash"] == prompt.id
    assert data["definition"] == dim.definition and data["scale"] == {"min": 1, "max": 5}
    assert data["anchors"] == {str(k): v for k, v in dim.anchors.items()} and len(data["anchors"]) == 5
    assert data["inputs"] == ["document", "summary"] and data["steps"] == list(dim.steps)
    assert data["template"].endswith("- {{name}}:") and "{{steps}}" in data["template"]
    assert data["judge"]["provider"] == "local" and data["decoding"]["temperature"] == 0.0
    assert data["scoring"]["mode"] == "logprobs" and data["scoring"]["ratings"] == [1, 2, 3, 4, 5]
    assert data["agreement"] == AGREEMENT
    assert "load_prompt" in data["usage"] and "score_item" in data["usage"]
    json.dumps(data)  # JSON-ready


def test_round_trip_through_a_file_and_another_library(library, tmp_path):
    prompt = library.get_prompt("fluency")
    path = write_export(prompt, tmp_path / "fluency.json", agreement=AGREEMENT)
    loaded = load_prompt(path)
    assert "load_prompt('fluency.json')" in json.loads(path.read_text())["usage"]
    assert loaded.id == prompt.id and loaded.dimension == prompt.dimension and loaded.label == "fluency@1"
    assert render(loaded, {"summary": "S."}) == render(prompt, {"summary": "S."})
    assert prompt_from_export(json.loads(path.read_text())).dimension == prompt.dimension
    with Library(tmp_path / "other.db", seed_examples=False) as other:
        result = other.import_prompt(path)
        assert result.created and result.prompt.id == prompt.id and result.prompt.label == "fluency@1"
        assert not other.import_prompt(path).created
    assert not library.import_prompt(path).created  # already there


@pytest.mark.parametrize(
    "field, value",
    [
        ("definition", "A quietly different definition."),
        ("steps", ["Just give it a 3."]),
        ("template", "Rate it.\n\n{{summary}}\n\n- {{name}}:"),
        ("anchors", {"1": "Great.", "2": "Fair.", "3": "Poor."}),
        ("decoding", {"temperature": 1.0, "n": 1, "top_logprobs": 20, "max_tokens": 5, "seed": None}),
    ],
)
def test_tampered_export_is_refused(library, tmp_path, field, value):
    data = export_prompt(library.get_prompt("fluency"))
    data[field] = value
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data))
    with pytest.raises(IntegrityError, match="does not match its hash"):
        load_prompt(path)
    with pytest.raises(IntegrityError):
        library.import_prompt(data)
    assert len(library.prompt_versions("fluency")) == 1


def test_malformed_exports_are_input_errors(library, tmp_path):
    data = export_prompt(library.get_prompt("fluency"))
    with pytest.raises(InputError, match="newer"):
        prompt_from_export({**data, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(InputError, match="missing template"):
        prompt_from_export({k: v for k, v in data.items() if k != "template"})
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(InputError, match="cannot read"):
        load_prompt(broken)


def test_score_item_weights_the_rating_distribution(library):
    prompt = library.get_prompt("coherence")
    # The design's worked example: p(3)=0.6, p(4)=0.3, p(2)=0.05, a non-rating token 0.05 -> 3.26.
    judge = ScriptedJudge(lambda request: {"3": 0.6, "4": 0.3, "2": 0.05, "The": 0.05})
    result = score_item(prompt, {"document": "D.", "summary": "S."}, judge=judge)
    assert result.score == pytest.approx((3 * 0.6 + 4 * 0.3 + 2 * 0.05) / 0.95)
    assert result.score == pytest.approx(3.2632, abs=1e-4)
    assert result.valid_mass == pytest.approx(0.95) and result.top_rating == 3
    request = judge.requests[0]
    assert request.ratings == (1, 2, 3, 4, 5) and request.assistant_prefix == "- Coherence: "
    assert "S." in request.messages[0]["content"] and request.logprobs


def test_production_snippet_runs(library, tmp_path, monkeypatch):
    prompt = library.get_prompt("coherence")
    path = write_export(prompt, tmp_path / "coherence.json")
    snippet = production_snippet(prompt, str(path))
    # Run the snippet as a user would, with a scripted judge in place of the real one.
    monkeypatch.setattr(
        "geval_core.providers.get_judge", lambda settings: ScriptedJudge(lambda request: {"5": 0.5, "4": 0.5})
    )
    printed = []
    exec(snippet, {"document": "D.", "summary": "S.", "print": lambda *a: printed.append(a)})
    assert printed[0][0] == pytest.approx(4.5)


def test_judgments_export_csv_and_jsonl(tmp_path):
    rows = [
        {
            "item_id": "a",
            "score": 3.26,
            "raw_score": 3.1,
            "top_rating": 3,
            "distribution": {2: 0.05, 3: 0.6},
            "replies": ["3"],
            "parsed": 1,
            "unparsed": 0,
            "ambiguous": False,
            "mode": "logprobs",
            "fallback": False,
            "error": None,
            "group": "d1",
            "human_coherence": 4.0,
        },
        {"item_id": "b", "score": None, "distribution": {}, "replies": [], "error": "JudgeError: x"},
    ]
    jsonl = export_judgments(rows, tmp_path / "j.jsonl")
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert records[0]["distribution"] == {"2": 0.05, "3": 0.6} and records[0]["human_coherence"] == 4.0
    assert records[1]["score"] is None and records[1]["error"] == "JudgeError: x"
    path = export_judgments(rows, tmp_path / "j.csv")
    table = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [r["id"] for r in table] == ["a", "b"]  # the id column name of every file the workbench writes
    assert math.isclose(float(table[0]["score"]), 3.26) and table[1]["score"] == ""
    assert json.loads(table[0]["distribution"]) == {"2": 0.05, "3": 0.6}
    assert table[0]["group"] == "d1" and table[0]["human_coherence"] == "4.0"
    with pytest.raises(InputError):
        export_judgments(rows, tmp_path / "j.xlsx")


def test_content_hash_covers_the_judge(library):
    prompt = library.get_prompt("coherence")
    data = export_prompt(prompt)
    assert content_hash(prompt.dimension) == data["content_hash"]
    data["judge"] = {**data["judge"], "model": "gpt-4o"}
    with pytest.raises(IntegrityError):
        prompt_from_export(data)


def test_unreadable_export_and_agreement_files_name_the_file_and_line(tmp_path):
    from geval_core.export import read_agreement

    broken = tmp_path / "export.json"
    broken.write_text('{\n  "name": "x",\n  "steps": [1,]\n}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_prompt(broken)
    assert (info.value.file, info.value.line) == (str(broken), 3) and "broken JSON" in str(info.value)
    latin = tmp_path / "agreement.json"
    latin.write_bytes('{"dataset": "golden",\n "note": "caf\u00e9"}'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8") as info:
        read_agreement(latin)
    assert info.value.line == 2
    with pytest.raises(InputError, match="absent.json: cannot read the agreement file: No such file"):
        read_agreement(tmp_path / "absent.json")
    assert read_agreement(_write(tmp_path / "ok.json", '{"spearman": 0.5}')) == {"spearman": 0.5}


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow
def test_readme_production_snippet_runs_as_written_with_the_local_judge(
    gguf_path, library, tmp_path, monkeypatch
):
    """The README's lines, copied verbatim, score an item with the embedded judge from an exported file
    (gguf_path: the local extra is installed, or the test skips locally and fails under CI)."""

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Production use without the workbench", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'load_prompt("coherence.json")' in code
    write_export(library.get_prompt("coherence"), tmp_path / "coherence.json")
    monkeypatch.chdir(tmp_path)
    printed = []
    scope = {
        "document": "The council voted to restore the evening ferry to Gull Island from May.",
        "summary": "The evening ferry to Gull Island returns in May.",
        "print": lambda *args: printed.append(args),
    }
    exec(code, scope)
    score, distribution = printed[0]
    assert set(distribution) == {1, 2, 3, 4, 5} and sum(distribution.values()) == pytest.approx(1.0)
    assert score == pytest.approx(sum(r * p for r, p in distribution.items()))
    assert scope["result"].mode == "logprobs" and 1.0 <= score <= 5.0
