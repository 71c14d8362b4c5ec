"""`geval score` as a newcomer meets it (issue 14): --id/--input map a data file as `datasets import` does,
the local judge defaults to one call at a time, and nothing but the summary reaches stderr off a terminal."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.providers.registry import default_concurrency
from geval_core.types import JudgeSettings
from prompt_library import Library

CLI = [sys.executable, "-c", "from geval_core.cli import cli; cli()"]


def data_file(tmp_path):
    """A CSV whose columns are named unlike the coherence prompt's inputs (document, summary)."""
    path = tmp_path / "mine.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["key", "source", "output"])
        writer.writerows([[f"k{n}", f"Source text {n}.", f"Summary {n}."] for n in range(3)])
    return path


def test_id_and_input_map_a_data_file_for_score(tmp_path):
    db, out = str(tmp_path / "lib.db"), tmp_path / "out.jsonl"
    args = [
        "score",
        "--prompt",
        "coherence",
        "--data",
        str(data_file(tmp_path)),
        "--judge",
        "scripted",
        "--db",
        db,
        "--out",
        str(out),
    ]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 1 and "name another with --id" in refused.output
    done = CliRunner().invoke(
        cli, [*args, "--id", "key", "--input", "document=source", "--input", "summary=output"]
    )
    assert done.exit_code == 0, done.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["k0", "k1", "k2"]
    [item] = Library(db).dataset_items("mine")[:1]
    assert item.fields == {"document": "Source text 0.", "summary": "Summary 0."}
    bad = CliRunner().invoke(cli, [*args, "--input", "document"])
    assert bad.exit_code == 2 and "expected NAME=PATH" in bad.output
    library = CliRunner().invoke(
        cli,
        [
            "score",
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--judge",
            "scripted",
            "--db",
            db,
            "--input",
            "document=source",
        ],
    )
    assert library.exit_code == 2 and "a library dataset is mapped already" in library.output


def test_the_local_judge_defaults_to_one_call_at_a_time():
    assert default_concurrency(JudgeSettings(provider="local")) == 1
    assert default_concurrency(JudgeSettings(provider="openai", model="gpt-4o-2024-08-06")) == 8
    help_text = CliRunner().invoke(cli, ["score", "--help"]).output
    assert "1 for the local judge" in " ".join(help_text.split())  # click wraps the help


def test_no_stray_label_line_off_a_terminal(tmp_path):
    db = str(tmp_path / "lib.db")
    proc = subprocess.run(
        [
            *CLI,
            "score",
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--judge",
            "scripted",
            "--db",
            db,
            "--out",
            str(tmp_path / "o.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert not any(line.strip() == "coherence@1" for line in lines)
    assert all(line.startswith(("warning:", "run ", "judge: ")) for line in lines), lines
    assert any(
        line.startswith("judge: scripted:scripted-1 in process; prompt coherence@1; data sample@1, 67 items")
        for line in lines
    )


def test_archived_datasets_and_runs_are_hidden_from_the_lists_until_asked_for(tmp_path):
    db = str(tmp_path / "lib.db")
    with Library(db) as lib:
        run = lib.create_run("coherence", "sample", JudgeSettings())
        sample = lib.get_dataset("sample").id
        lib.archive("run", run)
        lib.archive("dataset", sample)

    def listed(*args):
        out = CliRunner().invoke(cli, [*args, "--db", db, "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)

    assert [r["id"] for r in listed("runs", "list")] == [] and sample not in [
        d["id"] for d in listed("datasets", "list")
    ]
    shown = listed("runs", "list", "--archived")
    assert [(r["id"], r["archived"]) for r in shown] == [(run, True)]
    assert {d["id"]: d["archived"] for d in listed("datasets", "list", "--archived")}[sample] is True


def test_scoring_the_file_a_dataset_was_imported_from_scores_that_version_with_its_ratings(tmp_path):
    db = str(tmp_path / "lib.db")
    path = tmp_path / "support.csv"
    rows = [[f"t{n}", f"Source {n}.", f"Summary {n}.", str(1 + n % 5), f"g{n // 2}"] for n in range(6)]
    path.write_text("ticket,source,output,coherence,doc\n" + "".join(",".join(r) + "\n" for r in rows))
    mapping = ["--id", "ticket", "--input", "document=source", "--input", "summary=output"]
    run = CliRunner().invoke
    imported = run(
        cli,
        [
            "datasets",
            "import",
            str(path),
            "--name",
            "support",
            *mapping,
            "--human",
            "coherence=coherence",
            "--group",
            "doc",
            "--db",
            db,
        ],
    )
    assert imported.exit_code == 0, imported.output
    scored = run(
        cli,
        [
            "score",
            "--prompt",
            "coherence",
            "--data",
            str(path),
            "--judge",
            "scripted",
            "--db",
            db,
            "--out",
            str(tmp_path / "out.jsonl"),
            "--json",
            *mapping,
        ],
    )
    assert scored.exit_code == 0, scored.output
    assert "scored as that version" in scored.output
    with Library(db) as library:
        assert [d.version for d in library.list_datasets() if d.name == "support"] == [1]
        run_id = library.list_runs()[0].id
        assert library.get_run(run_id).dataset_id == library.get_dataset("support").id
    agreed = run(cli, ["agree", run_id, "--human", "coherence", "--db", db, "--json"])
    assert agreed.exit_code == 0, agreed.output
    path.write_text(path.read_text().replace("Summary 3.", "Summary three."))  # other items: a new version
    again = run(
        cli,
        [
            "score",
            "--prompt",
            "coherence",
            "--data",
            str(path),
            "--judge",
            "scripted",
            "--db",
            db,
            "--out",
            str(tmp_path / "out2.jsonl"),
            *mapping,
        ],
    )
    assert again.exit_code == 0, again.output
    with Library(db) as library:
        assert [d.version for d in library.list_datasets() if d.name == "support"] == [1, 2]
