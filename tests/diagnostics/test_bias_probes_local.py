"""Every bias probe end to end with the real local judge on the sample set (a few items per dimension).

The local judge's ratings are close to noise: these tests prove the probes run through the real model,
runner and library and report consistent figures, never that the judge is good.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from geval_core.cli import cli
from geval_core.diagnostics.perturb import KINDS
from geval_core.run import RunOptions, run_scoring
from prompt_library import Library

pytestmark = pytest.mark.slow
ITEMS, COPIES = 4, 2


@pytest.mark.parametrize("dimension", sorted(KINDS))
def test_bias_probe_end_to_end_with_the_local_judge(tmp_path, local_judge, monkeypatch, dimension):
    monkeypatch.setattr("geval_core.providers.get_judge", lambda settings, **_: local_judge)
    db = tmp_path / "lib.db"
    with Library(db) as lib:
        items = lib.dataset_items("sample")[:ITEMS]
        lib.import_items("sample-few", items)
        prompt = lib.get_prompt(dimension)
        run_id = lib.create_run(prompt.id, "sample-few", prompt.dimension.judge)
        run_scoring(prompt, items, local_judge, lib, run_id, RunOptions(settings=prompt.dimension.judge))
        scored = sum(r["score"] is not None for r in lib.judgments(run_id))
    res = CliRunner().invoke(
        cli,
        [
            "probe",
            "bias",
            run_id,
            "--db",
            str(db),
            "--system-field",
            "group",
            "--limit",
            str(COPIES),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    p = out["perturbation"]
    assert p["kind"] == KINDS[dimension] and p["pairs"] == min(COPIES, scored)
    assert p["sensitivity"] == pytest.approx(p["lower"] / p["pairs"])
    assert p["ci"][0] <= p["sensitivity"] <= p["ci"][1]
    assert out["length_spearman"] is None or -1 <= out["length_spearman"] <= 1
    assert {s["system"] for s in out["systems"]} <= {i.group for i in items}
    with Library(db) as lib:
        probe = lib.get_run(p["probe_run"])
        copies = lib.dataset_items(probe.dataset_id)
        assert probe.status == "done" and probe.model_version == local_judge.model_version
        assert all(c.id.endswith(f"~{p['kind']}") for c in copies) and len(copies) == p["pairs"]
        originals = {i.id: i for i in items}
        field = p["field"]
        assert all(c.fields[field] != originals[c.id.rsplit("~", 1)[0]].fields[field] for c in copies)
