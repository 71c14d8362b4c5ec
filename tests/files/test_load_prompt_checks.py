"""load_prompt is as strict as import: the checks a freeze makes, no server from the file wherever it is
placed, no unknown fields; names are NFKC-normalised and a look-alike of a known name is found."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from runner_helpers import dimension

from geval_core.errors import InputError
from geval_core.export import ExportWarning, export_prompt, load_prompt
from geval_core.prompts import content_hash
from geval_core.prompts.names import check_name, look_alike
from geval_core.types import FrozenPrompt


def frozen(dim=None) -> FrozenPrompt:
    dim = dim or dimension()
    return FrozenPrompt(content_hash(dim), "coherence", 1, dim, "2026-01-01")


def written(tmp_path, data: dict):
    path = tmp_path / "prompt.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_server_under_decoding_is_dropped_with_a_warning(tmp_path):
    data = export_prompt(frozen())
    data["decoding"]["base_url"] = "http://attacker.example:8080/v1"
    with pytest.warns(
        ExportWarning, match=r"names a server \(http://attacker.example:8080/v1\) under decoding; ignored"
    ):
        prompt = load_prompt(written(tmp_path, data))
    assert prompt.dimension.judge.base_url is None and prompt.id == frozen().id


@pytest.mark.parametrize(("section", "field"), [("decoding", "api_key"), ("judge", "headers")])
def test_unknown_fields_are_refused_with_their_place(tmp_path, section, field):
    data = export_prompt(frozen())
    data[section][field] = "x"
    with pytest.raises(InputError, match=f"field '{section}.{field}'"):
        load_prompt(written(tmp_path, data))


@pytest.mark.parametrize(
    "change",
    [
        {"definition": " "},
        {"name": "Coherence\u200b"},
        {"definition": "Count the errors: lower scores are better."},
    ],
)
def test_a_prompt_a_freeze_would_refuse_does_not_load(tmp_path, change):
    bad = replace(dimension(), **change)
    with pytest.raises(InputError) as caught:
        load_prompt(written(tmp_path, export_prompt(frozen(bad))))  # its hash matches: the content is refused
    assert "Traceback" not in str(caught.value)


def test_names_are_nfkc_and_look_alikes_are_found():
    assert check_name("ｃｏｈｅｒｅｎｃｅ") == "coherence"  # full-width letters
    assert look_alike("c\u043eherence", ["coherence", "fluency"]) == "coherence"  # a Cyrillic о
    assert look_alike("Coherence", ["coherence"]) == "coherence"
    assert look_alike("relevance", ["coherence"]) is None and look_alike("coherence", ["coherence"]) is None
