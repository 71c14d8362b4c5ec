"""The drift watch end to end with the real embedded judge (SmolLM2 in process): a reference run of the sample
set's coherence prompt, an anchor set frozen from it, and two checks of the same judge through `geval drift check`,
which re-score the anchors live (never from the cache) and say no drift: the embedded judge repeats its rating
probabilities exactly, so no anchor moves. The alarm against a changed judge is the loopback server's test
(tests/cli/test_drift_cli.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from prompt_library import Library

pytestmark = pytest.mark.slow
ITEMS = 8


def test_checks_of_the_unchanged_local_judge_say_no_drift(tmp_path, local_judge, monkeypatch):
    monkeypatch.setattr("geval_core.providers.get_judge", lambda settings, **_: local_judge)
    db = str(tmp_path / "lib.db")
    with Library(db) as lib:
        lib.import_items("anchors", lib.dataset_items("sample")[:ITEMS])
    scored = CliRunner().invoke(
        cli,
        [
            "score",
            "--prompt",
            "coherence",
            "--data",
            "anchors",
            "--db",
            db,
            "--out",
            str(tmp_path / "out.jsonl"),
            "--json",
        ],
    )
    assert scored.exit_code == 0, scored.output
    run_id = json.loads(scored.stdout.strip().splitlines()[-1])["run_id"]
    frozen = CliRunner().invoke(cli, ["drift", "freeze", "coherence", "--run", run_id, "--db", db, "--json"])
    assert frozen.exit_code == 0, frozen.output
    anchors = json.loads(frozen.stdout)["anchors"]
    for seq in (1, 2):
        checked = CliRunner().invoke(cli, ["drift", "check", "coherence", "--db", db, "--json"])
        assert checked.exit_code == 0, checked.output
        assert "judge: local in process; prompt coherence@1; data anchors@1" in checked.output
        report = json.loads(checked.stdout)
        check = report["check"]
        assert report["verdict"] == "no drift" and check["seq"] == seq and len(check["items"]) == anchors
        assert check["shift"]["mean_tv"] == pytest.approx(0, abs=1e-9)
        assert check["shift"]["top_moved_share"] == 0
        with Library(db) as lib:
            run = lib.get_run(check["run"])
            assert run.extra["drift"]["check"] == seq and run.id != run_id
            assert not any(row["cached"] for row in lib.judgments(run.id))  # live, never the cache
