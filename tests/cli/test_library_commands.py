"""`geval prompts|datasets|runs` through click's CliRunner, including --help on every command."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.judgment import Judgment
from geval_core.types import JudgeSettings
from prompt_library import Library

COMMANDS = [
    ("prompts",),
    ("prompts", "list"),
    ("prompts", "show"),
    ("prompts", "freeze"),
    ("prompts", "export"),
    ("prompts", "import"),
    ("datasets",),
    ("datasets", "list"),
    ("datasets", "import"),
    ("datasets", "show"),
    ("runs",),
    ("runs", "list"),
    ("runs", "show"),
    ("runs", "export"),
]
LEAVES = [c for c in COMMANDS if len(c) == 2]


@pytest.fixture(autouse=True)
def _never_the_users_library(tmp_path, monkeypatch):
    """A command that forgets --db opens a throwaway file, never ./geval.db."""
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "default.db"))


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "cli.db")


def invoke(*args, ok=True):
    result = CliRunner().invoke(cli, list(args))
    if ok:
        assert result.exit_code == 0, result.output + str(result.exception)
    return result


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_on_every_command(command):
    result = invoke(*command, "--help")
    assert "Usage:" in result.output
    if command in LEAVES:
        assert "--db" in result.output
    if command[-1] in ("list", "show"):
        assert "--json" in result.output


def test_leaf_commands_have_a_docstring():
    for group_name, name in LEAVES:
        assert cli.commands[group_name].commands[name].help


def test_prompts_list_show_json(db):
    listed = json.loads(invoke("prompts", "list", "--db", db, "--json").output)
    assert [p["label"] for p in listed] == ["coherence@1", "consistency@1", "fluency@1", "relevance@1"]
    table = invoke("prompts", "list", "--db", db).output
    assert "fluency@1" in table and "1-3" in table
    shown = json.loads(invoke("prompts", "show", "fluency@1", "--db", db, "--json").output)
    assert shown["content_hash"] == listed[2]["id"] and shown["scale"] == {"min": 1, "max": 3}
    text = invoke("prompts", "show", "fluency", "--db", db, "--rendered").output
    assert "Fluency (1-3)" in text and "- Fluency:" in text
    missing = invoke("prompts", "show", "nope", "--db", db, ok=False)
    assert missing.exit_code == 1 and "no frozen prompt 'nope'" in missing.output


def test_prompts_freeze_export_import(db, tmp_path):
    with Library(db) as library:
        dim = library.get_prompt("fluency").dimension
    changed = {**dim.to_dict(), "definition": "Grammar and word choice only."}
    (tmp_path / "dim.json").write_text(json.dumps(changed))
    out = invoke("prompts", "freeze", str(tmp_path / "dim.json"), "--db", db).output
    assert out.startswith("froze fluency@2")
    assert (
        "already frozen as fluency@2"
        in invoke("prompts", "freeze", str(tmp_path / "dim.json"), "--db", db).output
    )
    bad = {**changed, "anchors": {"1": "x"}}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    refused = invoke("prompts", "freeze", str(tmp_path / "bad.json"), "--db", db, ok=False)
    assert refused.exit_code == 1 and "cannot freeze" in refused.output and "missing: 2, 3" in refused.output

    (tmp_path / "agree.json").write_text(json.dumps({"spearman": 0.5}))
    export = tmp_path / "fluency.json"
    invoke(
        "prompts",
        "export",
        "fluency@2",
        "--db",
        db,
        "-o",
        str(export),
        "--agreement",
        str(tmp_path / "agree.json"),
    )
    data = json.loads(export.read_text())
    assert data["version"] == 2 and data["agreement"] == {"spearman": 0.5}
    assert "load_prompt('fluency.json')" in data["usage"]  # the embedded snippet loads the file as named
    snippet = invoke("prompts", "export", "fluency@2", "--db", db, "--snippet").output
    assert "load_prompt(" in snippet and "fields = {'summary': 'your summary text'}" in snippet

    other = str(tmp_path / "other.db")
    assert "imported as fluency@2" in invoke("prompts", "import", str(export), "--db", other).output
    data["steps"] = ["Always answer 3."]
    export.write_text(json.dumps(data))
    tampered = invoke("prompts", "import", str(export), "--db", other, ok=False)
    assert tampered.exit_code == 1 and "does not match its hash" in tampered.output


def test_datasets_import_list_show(db, tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"x{i}", "doc": "d", "src": "S", "out": f"O{i}", "scores": {"coherence": i}})
            + "\n"
            for i in range(1, 4)
        )
    )
    args = [
        "datasets",
        "import",
        str(path),
        "--name",
        "golden",
        "--input",
        "document=src",
        "--input",
        "summary=out",
        "--human",
        "coherence=scores.coherence",
        "--group",
        "doc",
        "--db",
        db,
    ]
    assert "imported golden@1 (3 items" in invoke(*args).output
    assert "same content already stored as golden@1" in invoke(*args).output
    listed = json.loads(invoke("datasets", "list", "--db", db, "--json").output)
    assert [d["label"] for d in listed] == ["golden@1", "sample@1"]
    shown = json.loads(invoke("datasets", "show", "golden", "--db", db, "--json", "--items", "2").output)
    assert [i["human"]["coherence"] for i in shown["items"]] == [1.0, 2.0] and shown["items"][0][
        "group"
    ] == "d"
    path.write_text(
        path.read_text()
        + '{"id": "x9", "doc": "d", "src": "S", "out": "O", "scores": {"coherence": "high"}}\n'
    )
    bad = invoke(*args, ok=False)
    assert bad.exit_code == 1 and "line 4" in bad.output and "not a number" in bad.output
    usage = invoke(
        "datasets", "import", str(path), "--name", "g", "--input", "nonsense", "--db", db, ok=False
    )
    assert usage.exit_code == 2 and "NAME=PATH" in usage.output


def test_runs_list_show_export(db, tmp_path):
    with Library(db) as library:
        run = library.create_run("fluency", "sample", JudgeSettings(), item_ids=["d01-a", "d01-b"])
        library.save_judgment(run, Judgment("d01-a", score=2.5, distribution={2: 0.5, 3: 0.5}, replies=["3"]))
        library.finish_run(run, "done")
    listed = json.loads(invoke("runs", "list", "--db", db, "--json", "--prompt", "fluency").output)
    assert [r["id"] for r in listed] == [run] and listed[0]["judged"] == 1
    assert json.loads(invoke("runs", "list", "--db", db, "--json", "--prompt", "coherence").output) == []
    shown = json.loads(invoke("runs", "show", run, "--db", db, "--json", "--judgments").output)
    assert shown["status"] == "done" and shown["judgments"][0]["distribution"] == {"2": 0.5, "3": 0.5}
    assert "fluency@1" in invoke("runs", "show", run[:12], "--db", db).output
    out = tmp_path / "run.csv"
    invoke("runs", "export", run, "--db", db, "-o", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert rows[0]["id"] == "d01-a" and rows[0]["score"] == "2.5" and rows[0]["group"] == "d01"
    assert rows[0]["human_fluency"] == "3.0"
    lines = invoke("runs", "export", run, "--db", db).output.splitlines()
    assert json.loads(lines[0])["human_coherence"] == 5.0


def test_geval_db_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("GEVAL_DB", str(tmp_path / "env.db"))
    invoke("prompts", "list")
    assert (tmp_path / "env.db").exists()


def _scored_run(db: str, prompt: str = "coherence") -> tuple[str, dict[str, float], list]:
    """A run of `prompt` on the sample set whose scores are the human coherence plus a per-item offset."""
    with Library(db) as library:
        items = library.dataset_items("sample")
        run = library.create_run(prompt, "sample", JudgeSettings())
        scores = {}
        for n, item in enumerate(items):
            scores[item.id] = item.human["coherence"] + (0.5, -0.25, 0.0)[n % 3]
            library.save_judgment(run, Judgment(item.id, score=scores[item.id], mode="logprobs"))
        library.finish_run(run, "done")
    return run, scores, items


def test_prompts_export_measures_agreement_from_a_run_of_the_prompt(db, tmp_path):
    import scipy.stats as st

    run, scores, items = _scored_run(db)
    out = tmp_path / "coherence.json"
    invoke(
        "prompts",
        "export",
        "coherence",
        "--db",
        db,
        "-o",
        str(out),
        "--agreement-run",
        run,
        "--human",
        "coherence",
    )
    agreement = json.loads(out.read_text())["agreement"]
    assert (agreement["dataset"], agreement["human"], agreement["run"]) == ("sample@1", "coherence", run)
    # The paper's reading, computed independently: scipy per document, constant documents skipped.
    rhos, skipped = [], 0
    for doc in sorted({i.group for i in items}):
        judge = [scores[i.id] for i in items if i.group == doc]
        human = [i.human["coherence"] for i in items if i.group == doc]
        if len(set(judge)) < 2 or len(set(human)) < 2:
            skipped += 1
            continue
        rhos.append(st.spearmanr(judge, human).statistic)
    assert agreement["reading"] == "group" and agreement["items"] == len(items) == 67
    assert (agreement["groups"], agreement["groups_skipped"]) == (len(rhos), skipped)
    assert agreement["spearman"] == pytest.approx(sum(rhos) / len(rhos), abs=1e-12)
    assert agreement["scale"] == "1-5" and agreement["measured_at"]


def test_prompts_export_refuses_a_foreign_run_or_a_bad_agreement_file(db, tmp_path):
    run, _, _ = _scored_run(db, "fluency")
    out = tmp_path / "coherence.json"
    foreign = invoke(
        "prompts",
        "export",
        "coherence",
        "--db",
        db,
        "-o",
        str(out),
        "--agreement-run",
        run,
        "--human",
        "coherence",
        ok=False,
    )
    assert foreign.exit_code == 1 and "scored fluency@1, not coherence@1" in foreign.output
    unknown = invoke(
        "prompts",
        "export",
        "fluency",
        "--db",
        db,
        "-o",
        str(out),
        "--agreement-run",
        run,
        "--human",
        "clarity",
        ok=False,
    )
    assert unknown.exit_code == 1 and "no human rating 'clarity'" in unknown.output
    alone = invoke("prompts", "export", "fluency", "--db", db, "--agreement-run", run, ok=False)
    assert alone.exit_code == 2 and "--human" in alone.output
    broken = tmp_path / "agree.json"
    broken.write_text('{"spearman": 0.5,\n "kendall": }\n', encoding="utf-8")
    bad = invoke(
        "prompts", "export", "fluency", "--db", db, "-o", str(out), "--agreement", str(broken), ok=False
    )
    assert (
        bad.exit_code == 1 and f"{broken}, line 2: cannot read the agreement file: broken JSON" in bad.output
    )
    broken.write_text("[0.5]", encoding="utf-8")
    bad = invoke(
        "prompts", "export", "fluency", "--db", db, "-o", str(out), "--agreement", str(broken), ok=False
    )
    assert "expected one JSON object" in bad.output and "Traceback" not in bad.output
    assert not out.exists()  # nothing half-written


def _rated_run(db: str) -> tuple[str, list]:
    """A run of coherence on the sample set saved with three raters per item (coherence.0-2, their mean as
    coherence); scores are the mean plus a per-item offset."""
    from dataclasses import replace

    with Library(db) as library:
        items = []
        for n, item in enumerate(library.dataset_items("sample")):
            base = item.human["coherence"]
            raters = [base, max(1.0, base - (n % 2)), min(5.0, base + (n % 3 == 0))]
            human = {**{f"coherence.{k}": v for k, v in enumerate(raters)}, "coherence": sum(raters) / 3}
            items.append(replace(item, human=human))
        dataset = library.import_items("rated", items)
        run = library.create_run("coherence", dataset["id"], JudgeSettings())
        for n, item in enumerate(items):
            score = item.human["coherence"] + (0.5, -0.25, 0.0)[n % 3]
            library.save_judgment(run, Judgment(item.id, score=score, mode="logprobs"))
        library.finish_run(run, "done")
    return run, items


def test_an_export_with_agreement_carries_the_raters_own_beside_the_judges_under_its_hash(db, tmp_path):
    from geval_core.files.prompt_files import agreement_hash
    from geval_core.stats.stored import dataset_raters

    run, _ = _rated_run(db)
    out = tmp_path / "coherence.json"
    args = ("prompts", "export", "coherence", "--db", db, "-o", str(out), "--agreement-run", run)
    written = invoke(*args, "--human", "coherence")
    exported = json.loads(out.read_text())
    raters = exported["agreement"]["raters"]
    with Library(db) as library:  # the Agreement page's human ceiling of the same run and reading
        ceiling = dataset_raters(library, "rated", "coherence", run_id=run)["ceiling"]
    people = [r for r in ceiling if r["who"] != "judge"]
    assert [r["who"] for r in raters["per_rater"]] == [r["who"] for r in people]
    assert [r["spearman"] for r in raters["per_rater"]] == pytest.approx([r["spearman"] for r in people])
    assert raters["spearman"]["mean"] == pytest.approx(sum(r["spearman"] for r in people) / len(people))
    assert raters["reading"] == exported["agreement"]["reading"] == "group"
    assert exported["agreement_hash"] == agreement_hash(exported["content_hash"], exported["agreement"])
    assert "the raters' own (each rater against the mean of the other raters): Spearman" in written.output
    imported = invoke("prompts", "import", str(out), "--db", str(tmp_path / "other.db"))
    assert "attached agreement: judge against people" in imported.output and "raters' own" in imported.output
    # The hash vouches for the raters' figures too: changing one drops the agreement on import.
    exported["agreement"]["raters"]["spearman"]["mean"] = 0.99
    out.write_text(json.dumps(exported), encoding="utf-8")
    tampered = invoke("prompts", "import", str(out), "--db", str(tmp_path / "third.db"))
    assert (
        "does not match its agreement_hash" in tampered.output
        and "attached agreement: judge" not in tampered.output
    )


def test_an_export_without_per_rater_ratings_has_no_raters_figure_and_older_exports_load(db, tmp_path):
    run, _, _ = _scored_run(db)
    out = tmp_path / "coherence.json"
    invoke(
        "prompts",
        "export",
        "coherence",
        "--db",
        db,
        "-o",
        str(out),
        "--agreement-run",
        run,
        "--human",
        "coherence",
    )
    exported = json.loads(out.read_text())
    assert "raters" not in exported["agreement"]  # as exports were before: the same bytes, the same hash
    imported = invoke("prompts", "import", str(out), "--db", str(tmp_path / "other.db"))
    assert "the raters' own agreement: not measured (no per-rater ratings)" in imported.output
