"""A user's GGUF file as the local judge: its name from its header, its content hash pinned in runs and frozen
prompts, a changed file refused before a run is recorded."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.errors import ConfigError
from geval_core.providers.gguf_file import gguf_name, pin_model_file, split_pin, verified_path
from geval_core.providers.registry import check_judge
from geval_core.types import JudgeSettings
from prompt_library import Library


@pytest.fixture(scope="module")
def own_file(gguf_path, tmp_path_factory):
    """A copy of the SmolLM2 file under a name of the user's."""
    path = tmp_path_factory.mktemp("models") / "my-judge.gguf"
    shutil.copyfile(gguf_path, path)
    return path


def test_the_name_read_from_the_header_is_llama_cpps(gguf_path):
    from llama_cpp import Llama

    llm = Llama(model_path=gguf_path, vocab_only=True, verbose=False)
    assert gguf_name(gguf_path) == llm.metadata["general.name"]
    llm.close()


def test_a_pin_is_the_absolute_path_and_the_files_sha256(own_file):
    model = pin_model_file(str(own_file))
    path, digest = split_pin(model)
    assert path == str(own_file.resolve())
    assert digest == hashlib.sha256(own_file.read_bytes()).hexdigest()
    assert verified_path(model) == (path, digest)


def test_a_changed_file_is_refused_before_a_run(own_file, tmp_path):
    changed = tmp_path / "changed.gguf"
    shutil.copyfile(own_file, changed)
    model = pin_model_file(str(changed))
    with changed.open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ConfigError, match="changed since it was pinned"):
        check_judge(JudgeSettings(provider="local", model=model))
    with pytest.raises(ConfigError, match="does not exist"):
        check_judge(JudgeSettings(provider="local", model=str(tmp_path / "gone.gguf")))


def test_geval_score_with_a_users_file_records_its_name_and_hash_and_refuses_it_changed(own_file, tmp_path):
    own_file = shutil.copyfile(own_file, tmp_path / "my-judge.gguf")  # this test changes it
    db = tmp_path / "lib.db"
    runner = CliRunner()
    done = runner.invoke(
        cli,
        [
            "score",
            "--db",
            str(db),
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--judge",
            f"local:{own_file}",
            "--json",
            "-q",
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output.strip().splitlines()[-1])
    digest = hashlib.sha256(own_file.read_bytes()).hexdigest()
    with Library(db) as lib:
        run = lib.get_run(summary["run_id"])
        assert run.judge.model == f"{own_file.resolve()}#sha256={digest}"
        assert run.model_version == (f"{gguf_name(str(own_file))} (GGUF my-judge.gguf, sha256 {digest[:12]})")
        # Frozen with that judge, the prompt's content hash covers the file's content.
        dimension = lib.get_prompt("coherence").dimension.to_dict()
    dimension["judge"] = {**dimension["judge"], "provider": "local", "model": run.judge.model}
    (tmp_path / "dim.json").write_text(json.dumps({**dimension, "name": "coherence_own"}))
    frozen = runner.invoke(cli, ["prompts", "freeze", str(tmp_path / "dim.json"), "--db", str(db), "--json"])
    assert frozen.exit_code == 0, frozen.output
    moved = tmp_path / "moved.gguf"
    shutil.copyfile(own_file, moved)
    with moved.open("ab") as handle:
        handle.write(b"\0")
    shutil.move(moved, own_file)  # the same path, other content
    with Library(db) as lib:
        before = len(lib.list_runs())
    refused = runner.invoke(
        cli, ["score", "--db", str(db), "--prompt", "coherence_own", "--data", "sample", "-q"]
    )
    assert refused.exit_code == 1 and "changed since it was pinned" in refused.output
    assert "Traceback" not in refused.output
    with Library(db) as lib:
        assert len(lib.list_runs()) == before  # nothing recorded


def test_a_local_model_that_is_not_a_gguf_file_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(
        cli,
        [
            "score",
            "--db",
            str(tmp_path / "l.db"),
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--judge",
            "local:smollm2",
        ],
    )
    assert result.exit_code == 2 and "not a GGUF model file" in result.output
