"""A signature covers the bytes of the file it signs, and `--check-signature` checks that file (issue 38).

Before, `geval verify --check-signature results.jsonl.sig.json` checked the run in the library only: an edited
results.jsonl beside it got "signature ok".
"""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from click.testing import CliRunner
from runner_helpers import setup_library, worked_judge

from geval_core.cli import cli
from geval_core.run import RunOptions, run_scoring

KEY = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def exported(tmp_path, monkeypatch):
    """(library path, run id, results.jsonl, its signature) from `runs export --sign`."""
    monkeypatch.setenv("GEVAL_SIGNING_KEY", KEY)
    path = tmp_path / "lib.db"
    library, prompt, items, _ = setup_library(path, count=4)
    run = library.create_run(prompt.id, "tiny", prompt.dimension.judge)
    run_scoring(prompt, items, worked_judge(), library, run, RunOptions(concurrency=1))
    library.close()
    out = tmp_path / "results.jsonl"
    done = invoke("runs", "export", run, "-o", str(out), "--sign", "--db", str(path))
    assert done.exit_code == 0, done.output
    return path, run, out, tmp_path / "results.jsonl.sig.json"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def check(path, signature, *extra: str):
    return invoke("verify", "--db", str(path), "--check-signature", str(signature), *extra)


def test_the_signature_names_the_file_and_the_sha256_of_its_bytes(exported):
    _, run, out, signature = exported
    signed = json.loads(signature.read_text())
    assert signed["run_id"] == run and signed["file"] == "results.jsonl"
    assert signed["file_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert signed["file_bytes"] == len(out.read_bytes()) > 0


def test_an_edited_export_fails_and_the_untouched_one_passes(exported):
    path, run, out, signature = exported
    ok = check(path, signature)
    assert ok.exit_code == 0 and f"signature ok: made with this key, over run {run}" in ok.output, ok.output
    assert f"and over {out} as it is now" in ok.output
    original = out.read_bytes()
    lines = original.decode().splitlines(keepends=True)
    first = json.loads(lines[0])
    assert first["score"] != 5.0
    lines[0] = json.dumps({**first, "score": 5.0}) + "\n"  # one score changed, the library untouched
    out.write_text("".join(lines))
    edited = check(path, signature)
    assert edited.exit_code == 1 and "signature ok" not in edited.output, edited.output
    assert (
        f"{out} differs from the file that was signed" in edited.output
        and "changed after signing" in edited.output
    )
    assert "Traceback" not in edited.output
    out.write_bytes(original + b"\n")  # one byte more is an edit too
    assert check(path, signature).exit_code == 1
    out.write_bytes(original)
    assert check(path, signature).exit_code == 0


def test_a_signature_rewritten_to_the_edited_bytes_is_not_the_key_s(exported):
    path, _, out, signature = exported
    before = out.read_text()
    out.write_text(before.replace('"score": ', '"score": 1', 1))
    assert out.read_text() != before  # the file was edited: only the rewritten signature could cover it
    signed = json.loads(signature.read_text())
    signed["file_sha256"] = hashlib.sha256(out.read_bytes()).hexdigest()
    signed["file_bytes"] = len(out.read_bytes())
    signature.write_text(json.dumps(signed))
    forged = check(path, signature)
    assert forged.exit_code == 1 and "not made with this key" in forged.output, forged.output


def test_the_file_travels_with_its_signature_or_is_named(exported, tmp_path):
    path, _, out, signature = exported
    elsewhere = tmp_path / "shared"
    elsewhere.mkdir()
    shutil.copy(out, elsewhere / out.name)
    shutil.copy(signature, elsewhere / signature.name)
    assert check(path, elsewhere / signature.name).exit_code == 0  # resolved beside the signature
    (elsewhere / out.name).unlink()
    gone = check(path, elsewhere / signature.name)
    assert gone.exit_code == 1 and "the file this signature covers, is not there" in gone.output, gone.output
    assert check(path, elsewhere / signature.name, "--file", str(out)).exit_code == 0  # named explicitly
    other = tmp_path / "other.jsonl"
    other.write_text(out.read_text().replace("i000", "i999"))
    named = check(path, signature, "--file", str(other))
    assert named.exit_code == 1 and f"{other} differs from the file that was signed" in named.output


def test_a_signature_of_the_run_alone_does_not_vouch_for_a_file_beside_it(exported, tmp_path):
    path, run, out, signature = exported
    alone = invoke("verify", "--db", str(path), "--sign", run)
    assert alone.exit_code == 0
    text = alone.output[alone.output.index("{") : alone.output.rindex("}") + 1]
    assert "file_sha256" not in json.loads(text)
    run_only = tmp_path / "run.sig.json"
    run_only.write_text(text)
    ok = check(path, run_only)
    assert ok.exit_code == 0 and "(it covers no file)" in ok.output, ok.output
    signature.write_text(
        text
    )  # as results.jsonl.sig.json: it names results.jsonl but covers none of its bytes
    beside = check(path, signature)
    assert (
        beside.exit_code == 1 and f"the signature covers run {run} in the library, not {out}" in beside.output
    )


def test_verify_sign_covers_a_named_file(exported, tmp_path):
    path, run, out, _ = exported
    signed = invoke("verify", "--db", str(path), "--sign", run, "--file", str(out))
    assert signed.exit_code == 0, signed.output
    signature = tmp_path / "by-verify.sig.json"
    signature.write_text(signed.output[signed.output.index("{") : signed.output.rindex("}") + 1])
    assert json.loads(signature.read_text())["file"] == "results.jsonl"
    assert check(path, signature).exit_code == 0  # the file it names, beside it
    out.write_text(out.read_text() + "{}\n")
    assert check(path, signature).exit_code == 1
    lonely = invoke("verify", "--db", str(path), "--file", str(out))
    assert lonely.exit_code == 2 and "--file names the file a signature covers" in lonely.output
