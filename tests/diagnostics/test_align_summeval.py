"""The align flow on real SummEval data with the embedded local judge, end to end through the command line (its
ratings are close to noise: the flow, the sealing and the counts are what is tested)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from needs import require_file
from paths import SHARED

from geval_core.cli import cli
from geval_core.run.splits import get_split, sealed_uses
from prompt_library import Library

SUMMEVAL = SHARED / "data" / "summeval" / "summeval.jsonl"
pytestmark = pytest.mark.slow


def geval(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{") :])


def test_split_two_prompts_on_dev_one_on_test_and_the_report(tmp_path, gguf_path):
    rows = [json.loads(line) for line in require_file(SUMMEVAL, "SummEval").read_text().splitlines()]
    docs = list(dict.fromkeys(r["doc_id"] for r in rows))[:10]
    kept = [r for r in rows if r["doc_id"] in docs and r["system_id"] == "M0"]  # one summary per document
    data = tmp_path / "sub.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in kept))
    db = str(tmp_path / "lib.db")
    CliRunner().invoke(
        cli,
        [
            "--db",
            db,
            "datasets",
            "import",
            str(data),
            "--name",
            "summeval",
            "--id",
            "id",
            "--input",
            "document=source",
            "--input",
            "summary=output",
            "--human",
            "coherence=scores.coherence",
            "--group",
            "doc_id",
        ],
    )
    split = geval("--db", db, "split", "summeval", "--dev", "0.5", "--seed", "1")
    with Library(db) as lib:
        base = lib.get_prompt("coherence")
    (tmp_path / "draft.json").write_text(
        json.dumps({**base.dimension.to_dict(), "definition": "How well the sentences fit together."})
    )
    draft = geval("--db", db, "prompts", "freeze", str(tmp_path / "draft.json"))["label"]
    dev_runs = [
        geval("--db", db, "align", "dev", label, "--data", "summeval") for label in ("coherence@1", draft)
    ]
    assert all(r["dev_items"] == len(split["dev"]) and r["status"] == "done" for r in dev_runs)
    compared = geval(
        "--db", db, "compare", dev_runs[0]["run_id"], dev_runs[1]["run_id"], "--human", "coherence"
    )
    assert compared["items"] <= len(split["dev"]) and compared["scope"]["side"] == "dev"
    with Library(db) as lib:
        assert sealed_uses(lib, get_split(lib, lib.get_dataset("summeval").id)) == []  # dev only so far
    for label in ("coherence@1", draft):
        tested = geval("--db", db, "align", "test", label, "--data", "summeval")
        assert tested["test_items"] == len(split["test"])
    report = geval("--db", db, "align", "report", draft, "--data", "summeval")
    assert report["side"] == "test" and report["candidates_evaluated"] == 1 and report["test_looks"] == 2
    assert report["items"] <= len(split["test"]) and "withheld" in report  # 5 test documents: no interval
    with Library(db) as lib:
        runs = lib.list_runs()
        test = set(split["test"])
        assert sum(1 for r in runs if set(r.item_ids) & test) == 2  # only the two test runs hold test items
