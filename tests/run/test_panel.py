"""A panel of two judges on loopback servers with chosen rating behaviours: the pooled, mean and median
scores against hand computations, the members' alpha against the krippendorff package, runs reused."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension, make_items

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.run.panel import freeze_panel, get_panel
from geval_core.scoring.panel import panel_score
from geval_core.types import JudgeSettings, Scale
from prompt_library import Library

KEY = "sk-test-PANEL0000000000000000000000000000000"


def test_panel_scores_by_hand():
    a, b = {3: 0.6, 4: 0.4}, {4: 0.5, 5: 0.5}  # renormalised, as stored; b put only half its mass on ratings
    pooled = panel_score([3.4, 4.5], [a, b], Scale(1, 5), "pooled", [1.0, 0.5])
    raw = {3: 0.3, 4: (0.4 + 0.25) / 2, 5: 0.125}  # the members' raw probabilities, averaged
    assert pooled.score == pytest.approx(sum(r * p for r, p in raw.items()) / sum(raw.values()))
    assert pooled.distribution[3] == pytest.approx(0.3 / 0.75) and pooled.spread == pytest.approx(1.1)
    assert panel_score([3.4, 4.5], [a, b], Scale(1, 5), "mean", [1.0, 0.5]).score == pytest.approx(3.95)
    assert panel_score([3.4, None, 4.0], [a, {}, b], Scale(1, 5), "median").score == pytest.approx(3.7)
    assert panel_score([None, None], [{}, {}], Scale(1, 5), "pooled").score is None


def leaning(offset: float):
    """A judge whose p("4") grows with the document number (so members' scores vary across items)."""

    def distribution(body: dict) -> dict:
        number = int(body["messages"][0]["content"].split("Document number ")[1].split(".")[0])
        high = min(0.95, 0.1 + 0.12 * number + offset)
        return {"4": high, "2": 1.0 - high}

    return distribution


def test_a_panel_of_two_judges_scored_through_the_cli(tmp_path):
    db = str(tmp_path / "lib.db")
    library = Library(db, seed_examples=False)
    members = [
        library.freeze(dimension(JudgeSettings(provider="openai", model=model)), name=name).prompt
        for name, model in (("coherence-a", "model-a"), ("coherence-b", "model-b"))
    ]
    library.import_items("tiny", make_items(8))
    library.close()
    run = CliRunner().invoke
    env = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
    done = run(
        cli,
        [
            "panel",
            "freeze",
            "jury",
            "--member",
            "coherence-a",
            "--member",
            "coherence-b",
            "--rule",
            "pooled",
            "--db",
            db,
            "--json",
        ],
        env=env,
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["created"] is True
    with FaultServer(distribution=leaning(0.0)) as first, FaultServer(distribution=leaning(0.25)) as second:
        args = [
            "panel",
            "score",
            "jury",
            "--data",
            "tiny",
            "--db",
            db,
            "--out",
            str(tmp_path / "panel.jsonl"),
            "--member-base-url",
            f"coherence-a={first.base_url}",
            "--member-base-url",
            f"coherence-b={second.base_url}",
        ]
        scored = run(cli, args, env=env)
        again = run(cli, args, env=env)
        calls = (first.count, second.count)
    assert scored.exit_code == 0, scored.output
    assert calls == (8, 8)  # the second scoring reused both members' runs: no call paid twice
    assert again.output.count("(0 judge calls)") == 2
    rows = [json.loads(line) for line in (tmp_path / "panel.jsonl").read_text().splitlines()]
    matrix = np.array([[row["members"][m.label] for m in members] for row in rows])
    for row, (a, b) in zip(rows, matrix, strict=True):
        pa, pb = (a - 2) / 2, (b - 2) / 2  # p("4") of each member, back from its weighted score
        assert row["score"] == pytest.approx(2 + 2 * (pa + pb) / 2)  # equal masses: pooled = mean
        assert row["spread"] == pytest.approx(abs(a - b))
    expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    assert f"alpha (interval) {expected:.3f}" in scored.output


def test_members_of_another_dimension_or_scale_are_refused(tmp_path):
    with Library(tmp_path / "lib.db", seed_examples=False) as library:
        one = library.freeze(dimension(), name="one").prompt
        other = library.freeze(
            dimension(scale=Scale(1, 10), anchors={p: f"p{p}" for p in range(1, 11)}), name="ten"
        ).prompt
        with pytest.raises(InputError, match="members judge one dimension on one scale"):
            freeze_panel(library, "bad", [one, other], "pooled")
        with pytest.raises(InputError, match="at least two different"):
            freeze_panel(library, "bad", [one, one], "mean")
        two = library.freeze(dimension(definition="Worded otherwise."), name="two").prompt
        panel, created = freeze_panel(library, "jury", [one, two], "median")
        assert created and freeze_panel(library, "jury", [one, two], "median") == (panel, False)
        assert get_panel(library, "jury@1") == panel and panel.label == "jury@1"
        # Names are parsed as NAME@VERSION and shown on pages: the prompts' name rule, look-alikes refused.
        for bad in ("jury@2", "../jury", "jury\n", ""):
            with pytest.raises(InputError, match="panel name .* cannot be used"):
                freeze_panel(library, bad, [one, two], "mean")
        with pytest.raises(InputError, match="looks like the library's 'jury'"):
            freeze_panel(library, "jurу", [one, two], "mean")  # a Cyrillic у
        assert library.setting_keys("panel:") == ["panel:jury"]


def test_the_panel_and_each_member_against_people_with_the_panel_minus_its_best_member():
    from scipy import stats as sps

    from geval_core.diagnostics.panel_people import panel_against_people

    rng = np.random.default_rng(5)
    human = np.clip(np.round(3 + np.repeat(rng.normal(0, 1, 30), 3) + rng.normal(0, 0.6, 90)), 1, 5)
    good, poor = human + rng.normal(0, 0.6, 90), human + rng.normal(0, 1.5, 90)
    rows = [
        {"id": f"i{n}", "score": (g + p) / 2, "members": {"a@1": g, "b@1": p}, "group": f"g{n // 3}"}
        for n, (g, p) in enumerate(zip(good, poor, strict=True))
    ]

    class People:
        def human_means(self, dataset_id, name):
            return {f"i{n}": float(h) for n, h in enumerate(human)}

    out = panel_against_people(People(), rows, "d", "coherence", resamples=300)
    assert out["items"] == 90 and out["best_member"] == "a@1"
    assert out["figures"]["b@1"]["spearman"] == pytest.approx(sps.spearmanr(poor, human).statistic)
    assert out["figures"]["panel"]["kendall"] == pytest.approx(
        sps.kendalltau((good + poor) / 2, human).statistic
    )
    versus = out["panel_minus_best"]["figures"]["spearman"]
    assert versus["difference"] == pytest.approx(
        out["figures"]["panel"]["spearman"] - out["figures"]["a@1"]["spearman"]
    )
    assert versus["interval"][0] < versus["difference"] < versus["interval"][1]
    assert out["panel_minus_best"]["groups"] == 30
    over_poor = out["panel_minus_each"]["b@1"]["figures"]["spearman"]  # averaging in the good judge helps
    assert over_poor["difference"] == pytest.approx(
        out["figures"]["panel"]["spearman"] - out["figures"]["b@1"]["spearman"]
    )
    assert over_poor["interval"][0] > 0
    assert out["panel_minus_each"]["a@1"] == out["panel_minus_best"]


def test_geval_score_with_a_panel_writes_rows_with_members_and_a_json_summary_with_alpha(tmp_path):
    db = str(tmp_path / "lib.db")
    library = Library(db, seed_examples=False)
    members = [
        library.freeze(dimension(JudgeSettings(provider="openai", model=model)), name=name).prompt
        for name, model in (("coherence-a", "model-a"), ("coherence-b", "model-b"))
    ]
    library.import_items("tiny", make_items(8))
    freeze_panel(library, "jury", members, "mean")
    library.close()
    env = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
    out = tmp_path / "rows.jsonl"
    with FaultServer(distribution=leaning(0.0)) as first, FaultServer(distribution=leaning(0.25)) as second:
        result = CliRunner().invoke(
            cli,
            [
                "score",
                "--panel",
                "jury",
                "--data",
                "tiny",
                "--db",
                db,
                "--out",
                str(out),
                "--json",
                "--member-base-url",
                f"coherence-a={first.base_url}",
                "--member-base-url",
                f"coherence-b={second.base_url}",
            ],
            env=env,
        )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 8 and set(rows[0]["members"]) == {"coherence-a@1", "coherence-b@1"}
    for row in rows:
        assert row["score"] == pytest.approx(sum(row["members"].values()) / 2)  # the mean rule
    matrix = np.array([[row["members"][m.label] for m in members] for row in rows])
    assert summary["alpha"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    )
    assert len(summary["alpha"]["interval"]) == 2 and summary["out"] == str(out)
    both = CliRunner().invoke(
        cli, ["score", "--panel", "jury", "--prompt", "coherence-a", "--data", "tiny", "--db", db], env=env
    )
    assert both.exit_code == 2 and "one of them" in both.output
