"""AppTest: the Agreement page's judge diagnostics show the figures geval_core computes."""

from __future__ import annotations

import pytest
from app_support import after_jobs, metric, open_page, use_temp_library

from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats.stored import run_calibration, run_estimate
from geval_core.types import JudgeSettings
from prompt_library import Library

SCRIPTED = JudgeSettings(provider="scripted", model="scripted-1")


def opened(at, *panels: str) -> None:
    """Open the named diagnostics panels (their expanders track state) and rerun."""
    from workbench_ui.diagnostics import OPEN

    for name in panels:
        at.session_state[OPEN + name] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def lib_path(tmp_path, monkeypatch):
    return use_temp_library(tmp_path, monkeypatch)


def test_diagnostics_panels(lib_path):
    with Library(lib_path) as lib:
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
        cal = run_calibration(lib, run_id, "coherence")
        est = run_estimate(lib, run_id, "coherence", "ppi++")
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    opened(at, "calibration", "estimate", "bias")
    assert metric(at, "ECE") == f"{cal['ece']:.3f}"
    null = cal["ece_calibrated"]  # the calibrated judge's ECE on these items beside it, with its caution
    said = [w.value for w in at.warning] + [c.value for c in at.caption]
    assert any(f"perfectly calibrated judge on these items: {null['mean']:.3f} on average" in s for s in said)
    assert any("cannot tell miscalibration from noise" in s for s in said) == (cal["ece"] <= null["q95"])
    assert metric(at, "PPI estimate") == f"{est['estimate']:.3f}"
    at = after_jobs(at.button(key="dg_probe").click().run(), lib_path)  # scored by a worker of the library
    assert not at.exception, [e.value for e in at.exception]
    from geval_core.diagnostics.bias_probes import perturbation_result, probe_runs

    with Library(lib_path) as lib:
        (probe,) = probe_runs(lib, run_id)
        assert probe.status == "done" and probe.judge.provider == "scripted"  # the probed run's judge
        found = perturbation_result(lib, probe.id)
    shown = next(m for m in at.metric if m.label.startswith("Sensitivity"))
    assert shown.value == f"{found['sensitivity']:.3f}" and found["pairs"] == 20


def test_diagnostics_are_computed_once_per_run_state_and_compare_two_runs(lib_path, monkeypatch):
    from geval_core.stats.stored import runs_difference
    from geval_core.types import Item
    from workbench_ui import diagnostics

    with Library(lib_path) as lib:
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
        other_items = [
            Item(
                f"o{k}",
                {"document": f"doc {k}", "summary": f"other summary {k}."},
                {"coherence": float(1 + k % 5)},
            )
            for k in range(30)
        ]
        lib.import_items("other-system", other_items)
        other = lib.create_run(prompt.id, "other-system", SCRIPTED)
        run_scoring(prompt, other_items, ScriptedJudge(), lib, other, RunOptions(settings=SCRIPTED))
        diff = runs_difference(lib, run_id, other, "coherence", "ppi++")["difference"]
    calls = []
    real = diagnostics._compute
    monkeypatch.setattr(diagnostics, "_compute", lambda kind, *a: calls.append(kind) or real(kind, *a))
    at = open_page("agreement")
    at.selectbox(key="ag_run").select(run_id).run()
    at.number_input(key="ag_boot").set_value(0).run()
    assert calls == []  # closed panels compute nothing
    opened(at, "calibration")
    assert calls == ["calibration"] and metric(at, "ECE") is not None
    opened(at, "estimate", "bias")
    assert sorted(set(calls)) == ["bias", "calibration", "estimate"]
    seen = len(calls)
    at.number_input(key="dg_limit").set_value(7).run()  # a click elsewhere: nothing computed again
    assert len(calls) == seen
    at.selectbox(key="dg_versus").select(other).run()
    assert not at.exception, [e.value for e in at.exception]
    assert metric(at, "This run minus the other: mean human rating") == f"{diff['estimate']:.3f}"
    assert calls.count("difference") == 1
    assert [c.value for c in at.caption if c.value.startswith("Judges")], [c.value for c in at.caption]


def test_estimate_panel_states_its_assumption_and_withholds_few_ratings(lib_path):
    with Library(lib_path) as lib:
        prompt, items = lib.get_prompt("coherence"), lib.dataset_items("sample")
        run_id = lib.create_run(prompt.id, "sample", SCRIPTED)
        run_scoring(prompt, items, ScriptedJudge(), lib, run_id, RunOptions(settings=SCRIPTED))
        est = run_estimate(lib, run_id, "coherence", "ppi++")
    at = open_page("agreement")
    at.number_input(key="ag_boot").set_value(0).run()
    opened(at, "estimate")
    captions = " ".join(c.value for c in at.caption).replace("\\", "")  # markdown escapes off
    assert "random sample of the items" in captions and f"in {est['groups']} groups" in captions
    assert metric(at, "95% interval") == f"{est['ci'][0]:.3f} – {est['ci'][1]:.3f}"
    at.number_input(key="dg_rated").set_value(5).run()
    assert metric(at, "95% interval") == "withheld"
    assert any("fewer than 30 for ppi++" in w.value.replace("\\", "") for w in at.warning)


def test_the_reliability_chart_spans_both_probability_axes_in_the_same_ticks():
    from workbench_ui.diagnostics import reliability_figure

    fig = reliability_figure(
        [{"predicted": 0.2, "observed": 0.3, "count": 4}, {"predicted": 0.35, "observed": 0.25, "count": 9}]
    )
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert list(axis.range) == [0, 1] and axis.dtick == 0.1 and axis.tickformat == ".0%"
    assert fig.layout.yaxis.scaleanchor == "x"


def test_agree_usage_names_a_run_or_a_file():
    from click.testing import CliRunner

    from geval_core.cli import cli

    usage = CliRunner().invoke(cli, ["agree", "--help"]).output
    assert "RUN_OR_FILE" in usage and "JUDGE_FILE" not in usage
