"""The cascade on a known mixture: a cheap judge sure and right on easy items, unsure and noisy on hard ones, a
strong judge right everywhere. On a calibration set the curve gives the share routed and the agreement per
threshold; the frozen threshold then routes, on new data, about the share and reaches about the agreement the
curve predicted (inside its interval); the run says what it spent and saved against the strong judge."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from runner_helpers import dimension

from geval_core.diagnostics.cascade import (
    cascade_curve,
    freeze_cascade,
    get_cascade,
    score_cascade,
    uncertainty,
)
from geval_core.errors import InputError
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.stats import agreement
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

CHEAP = JudgeSettings(provider="scripted", model="scripted-cheap")
STRONG = JudgeSettings(provider="scripted", model="scripted-strong")
MARK = re.compile(r"\[h=(\d)\]\[hard=(\d)\]\[n=(-?\d+)\]")


def marks(request) -> tuple[int, bool, int]:
    human, hard, noise = MARK.search("".join(m["content"] for m in request.messages)).groups()
    return int(human), hard == "1", int(noise)


def cheap_script(request):
    human, hard, noise = marks(request)
    if not hard:  # sure and right
        return {str(human): 0.95, "The": 0.05}
    guess = int(np.clip(human + noise // 4, 1, 5))  # unsure and often wrong
    return {str(p): (0.3 if p == guess else 0.15) for p in range(1, 6)} | {"The": 0.1}


def strong_script(request):
    human, _, noise = marks(request)
    point = int(np.clip(human + (1 if noise > 8 else 0), 1, 5))
    return {str(point): 0.9, str(point - 1 if point > 1 else point + 1): 0.05, "The": 0.05}


def judge_for(settings):
    return ScriptedJudge(cheap_script if settings.model == CHEAP.model else strong_script)


def items(docs: range, rng) -> list[Item]:
    out = []
    for doc in docs:
        effect = rng.normal(0, 1)
        for k in range(4):
            human = int(np.clip(round(3 + effect + rng.normal(0, 0.8)), 1, 5))
            hard = int(rng.random() < 0.35)
            out.append(
                Item(
                    f"d{doc:03d}-{k}",
                    {
                        "document": f"Document {doc}.",
                        "summary": f"S{k} [h={human}][hard={hard}][n={int(rng.normal(0, 6))}]",
                    },
                    {"coherence": float(human)},
                    f"d{doc:03d}",
                )
            )
    return out


@pytest.fixture
def lib(tmp_path):
    rng = np.random.default_rng(11)
    library = Library(tmp_path / "lib.db", seed_examples=False)
    library.import_items("calibration", items(range(0, 40), rng))
    library.import_items("fresh", items(range(40, 80), rng))
    cheap = library.freeze(dimension(CHEAP), name="cheap").prompt
    strong = library.freeze(dimension(STRONG, definition="Coherence, read closely."), name="strong").prompt
    yield library, cheap, strong
    library.close()


def both_runs(library, cheap, strong, dataset: str) -> tuple[str, str]:
    runs = []
    for prompt, settings in ((cheap, CHEAP), (strong, STRONG)):
        run_id = library.create_run(prompt.id, dataset, settings)
        run_scoring(
            prompt,
            library.dataset_items(dataset),
            judge_for(settings),
            library,
            run_id,
            RunOptions(settings=settings),
        )
        runs.append(run_id)
    return runs[0], runs[1]


def test_uncertainty_signals_by_hand():
    sure = {"score": 3.0, "distribution": {3: 1.0}, "valid_mass": 0.9}
    split = {"score": 2.5, "distribution": {2: 0.5, 3: 0.5}, "valid_mass": 0.6}
    assert uncertainty(sure, "entropy") == 0 and uncertainty(split, "entropy") == pytest.approx(1.0)
    assert uncertainty(split, "sd") == pytest.approx(0.5) and uncertainty(split, "margin") == pytest.approx(
        1.0
    )
    assert uncertainty(split, "valid_mass") == pytest.approx(0.4)
    assert uncertainty({"score": None}, "entropy") == math.inf  # no cheap score: always the strong judge
    # flip: 2.5 rounds (halves up) to 3, which one draw in two gives; 3.26 rounds to 3 (p 0.6 of 0.95)
    assert uncertainty(split, "flip") == pytest.approx(0.5) and uncertainty(sure, "flip") == 0
    worked = {"score": 3.26, "distribution": {"3": 0.6, "4": 0.3, "2": 0.05}}
    assert uncertainty(worked, "flip") == pytest.approx(1 - 0.6 / 0.95)
    sampled = {"score": 3.6, "distribution": {3: 0.4, 4: 0.6}}  # replies 3, 4, 4, 3, 4: rounds to 4
    assert uncertainty(sampled, "flip") == pytest.approx(0.4)


def test_the_cli_offers_every_signal():
    from geval_core.cli.cascade import SIGNALS as OFFERED
    from geval_core.diagnostics.cascade import SIGNALS

    assert list(SIGNALS) == OFFERED


def test_the_frozen_threshold_routes_and_agrees_as_the_curve_predicted(lib):
    library, cheap, strong = lib
    cal_cheap, cal_strong = both_runs(library, cheap, strong, "calibration")
    curve = cascade_curve(
        library, cal_cheap, cal_strong, "coherence", "entropy", thresholds=11, bootstrap=300
    )
    rows = curve["curve"]
    assert rows[0]["routed_share"] == 1.0 and rows[-1]["routed_share"] == 0.0  # every item / none
    assert all(r["with_strong_interval"] for r in rows[1:-1])
    lighter = cascade_curve(
        library,
        cal_cheap,
        cal_strong,
        "coherence",
        "entropy",
        thresholds=11,
        bootstrap=300,
        strong_intervals=False,
    )["curve"]
    assert [r["with_strong_interval"] for r in lighter] == [None] * len(rows)
    assert [{k: v for k, v in r.items() if k != "with_strong_interval"} for r in lighter] == [
        {k: v for k, v in r.items() if k != "with_strong_interval"} for r in rows
    ]  # the same draws for people
    assert rows[0]["with_strong"] == pytest.approx(1.0)
    all_strong, none = rows[0]["spearman"], rows[-1]["spearman"]
    assert all_strong > none  # the strong judge agrees better with people than the cheap one
    # The threshold that sends the unsure (hard) items: the cheap judge's entropy is 0 on easy ones.
    chosen = next(r for r in rows if r["routed_share"] < 0.5 and r["threshold"] >= 0)
    assert chosen["spearman"] > none
    cascade, created = freeze_cascade(
        library, "casc", cheap.label, strong.label, "entropy", chosen["threshold"]
    )
    assert created and get_cascade(library, "casc")["id"] == cascade["id"]
    assert not freeze_cascade(library, "casc", cheap.label, strong.label, "entropy", chosen["threshold"])[1]
    result = score_cascade(library, cascade, library.get_dataset("fresh").id, judge_for)
    n = result["items"]
    share = chosen["routed_share"]
    assert abs(result["routed_share"] - share) < 3 * math.sqrt(share * (1 - share) / n)
    people = {i.id: i.human["coherence"] for i in library.dataset_items("fresh")}
    measured = agreement(
        [r["score"] for r in result["rows"]], [people[r["id"]] for r in result["rows"]]
    ).spearman
    low, high = chosen["interval"]
    assert low <= measured <= high  # the curve's prediction held on new data
    assert result["judge_calls"] == {"cheap": n, "strong": result["routed"]}
    spend = result["spend"]
    assert spend["strong_calls_saved"] == n - result["routed"]
    assert spend["strong_tokens_saved_share"] == pytest.approx(1 - result["routed"] / n, abs=0.05)
    again = score_cascade(library, cascade, library.get_dataset("fresh").id, judge_for)
    assert again["judge_calls"] == {"cheap": 0, "strong": 0}  # both runs reused, never paid twice


def test_geval_cascade_curve_freeze_and_score(lib, monkeypatch):
    import json

    import scripted_app_judge
    from click.testing import CliRunner

    from geval_core.cli import cli

    scripted_app_judge.offer(monkeypatch)
    library, cheap, strong = lib
    cal_cheap, cal_strong = both_runs(library, cheap, strong, "calibration")
    runner, db = CliRunner(), str(library.path)
    curve = json.loads(
        runner.invoke(
            cli,
            [
                "cascade",
                "curve",
                cal_cheap,
                cal_strong,
                "--human",
                "coherence",
                "--db",
                db,
                "--json",
                "--bootstrap",
                "100",
            ],
        ).output
    )
    assert curve["items"] == 160 and len(curve["curve"]) >= 2 and curve["resampled"] == "groups"
    frozen = runner.invoke(
        cli,
        [
            "cascade",
            "freeze",
            "c1",
            "--cheap",
            cheap.label,
            "--strong",
            strong.label,
            "--threshold",
            "0.5",
            "--db",
            db,
            "--json",
        ],
    )
    assert json.loads(frozen.output)["threshold"] == 0.5
    scored = runner.invoke(cli, ["cascade", "score", "c1", "--data", "fresh", "--db", db, "--json"])
    assert scored.exit_code == 0, scored.output
    lines = [json.loads(line) for line in scored.stdout.splitlines()]
    summary = json.loads(scored.stderr.strip().splitlines()[-1])
    assert len(lines) == 160 and {r["by"] for r in lines} <= {"cheap", "strong"}
    assert summary["routed"] == sum(r["by"] == "strong" for r in lines)


def test_cascade_names_follow_the_name_rule(lib):
    library, cheap, strong = lib
    freeze_cascade(library, "tiered", cheap.label, strong.label, "entropy", 0.5)
    with pytest.raises(InputError, match="cascade name 'tiered@2' cannot be used"):
        freeze_cascade(library, "tiered@2", cheap.label, strong.label, "entropy", 0.6)
    with pytest.raises(InputError, match="looks like the library's 'tiered'"):
        freeze_cascade(library, "tіered", cheap.label, strong.label, "entropy", 0.6)  # a Cyrillic і
    assert library.setting_keys("cascade:") == ["cascade:tiered"]
