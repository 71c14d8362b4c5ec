"""Script conventions: "-" is stdout for --out and -o, and --db may come before the sub-command."""

from __future__ import annotations

import json

from click.testing import CliRunner
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.types import JudgeSettings


def scripted_library(tmp_path, count: int):
    """(library path, prompt, dataset row): `count` items and a prompt judged by the scripted judge."""
    library, prompt, _, dataset = setup_library(
        tmp_path / "lib.db", count=count, judge=JudgeSettings(provider="scripted", model="scripted-1")
    )
    library.close()
    return str(tmp_path / "lib.db"), prompt, dataset


def test_dash_is_stdout_and_db_goes_before_the_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db, prompt, dataset = scripted_library(tmp_path, 2)
    done = CliRunner().invoke(
        cli, ["--db", db, "score", "--prompt", prompt.label, "--data", dataset["label"], "--out", "-"]
    )
    assert done.exit_code == 0, done.output
    assert len([json.loads(line) for line in done.stdout.splitlines()]) == 2 and not (tmp_path / "-").exists()
    exported = CliRunner().invoke(cli, ["--db", db, "prompts", "export", prompt.label, "-o", "-"])
    assert exported.exit_code == 0 and json.loads(exported.stdout)["content_hash"] == prompt.id
    assert not (tmp_path / "-").exists()


def test_score_json_prints_one_summary_object_for_scripts(tmp_path):
    library, prompt, _, dataset = setup_library(
        tmp_path / "lib.db", count=3, judge=JudgeSettings(provider="scripted", model="scripted-1")
    )
    library.close()
    out = tmp_path / "results.jsonl"
    done = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "lib.db"),
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--out",
            str(out),
            "--json",
            "--quiet",
        ],
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["run_id"] and summary["scored"] == 3 and summary["exit_code"] == 0
    assert summary["prompt_id"] == prompt.id and summary["out"] == str(out)
    assert len(out.read_text().splitlines()) == 3


def test_freeze_import_and_dataset_import_print_json_for_scripts(tmp_path):
    from runner_helpers import dimension

    db = str(tmp_path / "lib.db")
    dim_file = tmp_path / "dim.json"
    dim_file.write_text(json.dumps(dimension(definition="Scripted freeze.").to_dict()), encoding="utf-8")
    frozen = CliRunner().invoke(cli, ["--db", db, "prompts", "freeze", str(dim_file), "--json"])
    assert frozen.exit_code == 0, frozen.output
    data = json.loads(frozen.stdout)
    assert data["created"] is True and len(data["content_hash"]) == 64 and data["label"] == "coherence@2"
    export = tmp_path / "export.json"
    assert (
        CliRunner().invoke(cli, ["--db", db, "prompts", "export", data["label"], "-o", str(export)]).exit_code
        == 0
    )
    imported = CliRunner().invoke(cli, ["--db", db, "prompts", "import", str(export), "--json"])
    assert json.loads(imported.stdout)["content_hash"] == data["content_hash"]
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "a", "document": "D.", "summary": "S."}\n', encoding="utf-8")
    dataset = CliRunner().invoke(
        cli,
        [
            "--db",
            db,
            "datasets",
            "import",
            str(rows),
            "--name",
            "rows",
            "--input",
            "document=document",
            "--input",
            "summary=summary",
            "--json",
        ],
    )
    assert dataset.exit_code == 0 and json.loads(dataset.stdout)["item_count"] == 1


def test_data_from_stdin(tmp_path):
    library, prompt, _, _ = setup_library(
        tmp_path / "lib.db", count=1, judge=JudgeSettings(provider="scripted", model="scripted-1")
    )
    library.close()
    rows = "".join(
        json.dumps({"id": f"s{k}", "document": f"D{k}.", "summary": f"S{k}."}) + "\n" for k in range(2)
    )
    done = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "lib.db"), "score", "--prompt", prompt.label, "--data", "-"], input=rows
    )
    assert done.exit_code == 0, done.output
    assert sorted(json.loads(line)["id"] for line in done.stdout.splitlines()) == ["s0", "s1"]


def test_commands_that_write_a_file_report_it_as_json_and_take_dash_for_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db, prompt, dataset = scripted_library(tmp_path, 2)
    run = CliRunner().invoke
    scored = run(
        cli,
        [
            "--db",
            db,
            "score",
            "--prompt",
            prompt.label,
            "--data",
            dataset["label"],
            "--out",
            "r.jsonl",
            "--json",
            "--quiet",
        ],
    )
    run_id = json.loads(scored.stdout)["run_id"]
    exported = run(cli, ["--db", db, "prompts", "export", prompt.label, "-o", "p.json", "--json"])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout) == {
        "file": "p.json",
        "format": "json",
        "prompt": prompt.label,
        "hash": prompt.id,
    }
    tool = run(
        cli,
        ["--db", db, "prompts", "export", prompt.label, "--format", "promptfoo", "-o", "p.yaml", "--json"],
    )
    assert json.loads(tool.stdout)["format"] == "promptfoo" and (tmp_path / "p.yaml").exists()
    refused = run(cli, ["--db", db, "prompts", "export", prompt.label, "--json"])
    assert refused.exit_code == 2 and "name the file with -o FILE" in refused.output
    judgments = run(cli, ["--db", db, "runs", "export", run_id, "-o", "j.csv", "--json"])
    assert json.loads(judgments.stdout) == {
        "file": "j.csv",
        "run_id": run_id,
        "judgments": 2,
        "signature": None,
    }
    dashed = run(cli, ["--db", db, "runs", "export", run_id, "-o", "-"])
    assert dashed.exit_code == 0 and len(dashed.stdout.splitlines()) == 2 and not (tmp_path / "-").exists()


def test_dash_reads_stdin_for_every_file_a_command_reads(tmp_path):
    db = str(tmp_path / "lib.db")
    run = CliRunner().invoke
    exported = run(cli, ["--db", db, "prompts", "export", "coherence"]).stdout
    dimension = {k: json.loads(exported)[k] for k in ("definition", "scale", "anchors", "inputs", "steps")}
    dimension["name"] = "Coherence two"
    frozen = run(cli, ["--db", db, "prompts", "freeze", "-", "--json"], input=json.dumps(dimension))
    assert frozen.exit_code == 0, frozen.output
    assert json.loads(frozen.stdout)["label"] == "coherence-two@1"
    imported = run(
        cli, ["--db", str(tmp_path / "other.db"), "prompts", "import", "-", "--json"], input=exported
    )
    assert imported.exit_code == 0 and json.loads(imported.stdout)["label"] == "coherence@1"
    rows = "".join(
        json.dumps({"id": f"i{n}", "document": "D.", "summary": f"S{n}."}) + "\n" for n in range(3)
    )
    data = run(
        cli,
        [
            "--db",
            db,
            "datasets",
            "import",
            "-",
            "--name",
            "piped",
            "--input",
            "document=document",
            "--input",
            "summary=summary",
            "--json",
        ],
        input=rows,
    )
    assert data.exit_code == 0 and json.loads(data.stdout)["item_count"] == 3
    broken = run(cli, ["--db", db, "prompts", "import", "-"], input="{")
    assert broken.exit_code == 1 and broken.output.startswith("Error: stdin, line 1")


def test_csv_and_a_json_array_on_stdin_are_read_as_what_they_are(tmp_path):
    """A CSV piped in is read as CSV (a header line), a JSON array as an array, JSON lines as lines."""
    library, prompt, _, _ = setup_library(
        tmp_path / "lib.db", count=1, judge=JudgeSettings(provider="scripted", model="scripted-1")
    )
    library.close()
    rows = [{"id": f"s{k}", "document": f"Doc {k}, with a comma.", "summary": f"Sum {k}."} for k in range(3)]
    csv = "id,document,summary\n" + "".join(f'{r["id"]},"{r["document"]}",{r["summary"]}\n' for r in rows)
    for text in (csv, json.dumps(rows), "".join(json.dumps(r) + "\n" for r in rows)):
        done = CliRunner().invoke(
            cli,
            ["--db", str(tmp_path / "lib.db"), "score", "--prompt", prompt.label, "--data", "-", "-q"],
            input=text,
        )
        assert done.exit_code == 0, done.output
        assert sorted(json.loads(line)["id"] for line in done.stdout.splitlines()) == ["s0", "s1", "s2"]
