"""Generated code is safe: hostile prompt names are refused on freeze, and the production snippet writes every
value as a Python literal. Each snippet is EXECUTED in a subprocess in a temp folder with the scripted judge
standing in for a real one; no snippet may create a file."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.export import export_filename, export_prompt, production_snippet, write_export
from geval_core.prompts import content_hash
from geval_core.prompts.names import NAME_RULE
from geval_core.types import FrozenPrompt, JudgeSettings
from prompt_library import Library

PWN = "__import__('os').system('touch PWNED')"
HOSTILE = [
    'x" + str(__import__("os").system("touch PWNED")) + "',  # the name
    "x' + str(" + PWN + ") + '",
    "a\nimport os; os.system('touch PWNED')\n#",
    "back\\slash\\' + " + PWN + " #",
    PWN,
    '"""; ' + PWN + '; """',
    "{path}{fields}" + PWN,  # format fields inside a value are not re-read
    "../../tmp/PWNED",
    "kohärenz\u202e" + PWN,  # right-to-left override
    "名前\u200b; " + PWN,  # zero-width space
    "ＰＷＮＥＤ＂; " + PWN,  # fullwidth quote
    "nul\x00" + PWN,
    " leading space",
    "x" * 101,
]
FINE = ["coherence", "Answer Relevance 2", "kohärenz", "名前 v2", "Ответ-1.0_b"]
SCRIPTED = JudgeSettings(
    provider="scripted", model="scripted-1"
)  # get_judge's stand-in: no model, no network


def hostile_prompt(name: str) -> FrozenPrompt:
    """A frozen prompt object carrying a hostile name, as a hand-built object or an altered library row could."""
    dim = dimension(SCRIPTED)
    return FrozenPrompt(content_hash(dim), name, 1, dim, "2026-01-01T00:00:00+00:00")


def run_snippet(code: str, folder: Path) -> subprocess.CompletedProcess:
    """The snippet as a user runs it: a fresh interpreter in `folder`."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120
    )


def only_literals(code: str) -> None:
    """The snippet calls load_prompt, score_item and print only, and every other value is a literal."""
    tree = ast.parse(code)
    calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert calls == {"load_prompt", "score_item", "print"}
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert names <= {"load_prompt", "score_item", "print", "prompt", "fields", "result"}, names


@pytest.mark.parametrize("name", HOSTILE)
def test_freeze_refuses_a_hostile_name_and_says_the_rule(tmp_path, name):
    with Library(tmp_path / "lib.db", seed_examples=False) as library:
        with pytest.raises(InputError) as info:
            library.freeze(dimension(), name=name)
        assert NAME_RULE in str(info.value) and library.list_prompts() == []


@pytest.mark.parametrize("name", FINE)
def test_plain_and_unicode_names_freeze(tmp_path, name):
    with Library(tmp_path / "lib.db", seed_examples=False) as library:
        assert library.freeze(dimension(), name=name).prompt.label == f"{name}@1"


def test_a_hostile_dimension_name_is_slugged_or_refused(tmp_path):
    with Library(tmp_path / "lib.db", seed_examples=False) as library:
        label = library.freeze(dimension(name=HOSTILE[0])).prompt.name  # the default name is its slug
        assert (
            label == "x-str-__import__-os-.system-touch-pwned"
            and label.replace("-", "").replace(".", "").replace("_", "").isalnum()
        )
        with pytest.raises(InputError, match="control or invisible"):
            library.freeze(dimension(name="Coherence\n- Fluency"))


@pytest.mark.parametrize("name", HOSTILE)
def test_snippet_and_export_of_a_hostile_name_run_no_code(tmp_path, name):
    prompt = hostile_prompt(name)
    default = production_snippet(prompt)
    only_literals(default)
    write_export(prompt, tmp_path / export_filename(prompt))  # where the default snippet looks
    embedded = json.loads(write_export(prompt, tmp_path / "export.json").read_text(encoding="utf-8"))["usage"]
    only_literals(embedded)
    hostile_path = production_snippet(prompt, f"{name}.json")  # a path given on the command line
    only_literals(hostile_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for code in (default, embedded):
        done = run_snippet(code, tmp_path)
        assert done.returncode == 0, done.stderr  # it scores: the scripted judge answered
        score, _ = done.stdout.split(" ", 1)
        assert 1.0 <= float(score) <= 5.0
    run_snippet(hostile_path, tmp_path)  # the file may not exist: an error is fine, code is not
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # code run from a snippet: 0
    assert not (tmp_path / "PWNED").exists() and not Path("/tmp/PWNED").exists()


def test_export_of_a_hostile_name_loads_under_its_slug(tmp_path):
    data = export_prompt(hostile_prompt(HOSTILE[2]))
    with Library(tmp_path / "lib.db", seed_examples=False) as library:
        result = library.import_prompt(data)
    assert result.prompt.label == "coherence@1" and any(
        "not a usable prompt name" in w for w in result.warnings
    )


def test_cli_snippet_with_a_hostile_output_path_runs_no_code(tmp_path, monkeypatch):
    db = str(tmp_path / "lib.db")
    (tmp_path / "dim.json").write_text(json.dumps(dimension(SCRIPTED).to_dict()), encoding="utf-8")
    runner = CliRunner()
    frozen = runner.invoke(cli, ["prompts", "freeze", str(tmp_path / "dim.json"), "--db", db])
    assert frozen.exit_code == 0, frozen.output
    out = "x'); " + PWN + "; ('.json"
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    done = runner.invoke(cli, ["prompts", "export", "coherence", "--db", db, "-o", out, "--snippet"])
    assert done.exit_code == 0, done.output
    only_literals(done.stdout)
    ran = run_snippet(done.stdout, here)
    assert ran.returncode == 0, ran.stderr  # the file the snippet names is the one just written
    assert sorted(p.name for p in here.iterdir()) == [out] and not (here / "PWNED").exists()
