"""`geval budget` end to end: a judge at a loopback server scores 150 items, people rated 60 of them so far; the
command plans the ratings for the agreement figure's and the PPI estimate's target widths. Its pilot figures are
scipy's on the scores the server's distributions give, its plans are the Python API's on those values, and a
missing target or rating exits with a message."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension
from scipy import stats

from geval_core.cli import cli
from geval_core.stats.budget import agreement_plan
from geval_core.stats.budget_ppi import ppi_plan
from geval_core.types import Item, JudgeSettings, Scale
from prompt_library import Library

KEY = "sk-test-BUDGET0000000000000000000000000000"
ENV = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
RATED = 60


def number(body: dict) -> int:
    return int(body["messages"][0]["content"].split("Document number ")[1].split(".")[0])


def human(k: int) -> int:
    return 1 + (k * 7) % 5


def distribution(k: int) -> dict:
    off = int(np.clip(human(k) + (k * 13) % 3 - 1, 1, 5))  # a point off now and then: signal, not a copy
    return {str(off): 0.6, str(human(k)): 0.4} if off != human(k) else {str(off): 1.0}


def items() -> list[Item]:
    return [
        Item(
            f"i{k:03d}",
            {"document": f"Document number {k}.", "summary": f"Summary {k}."},
            {"coherence": float(human(k))} if k < RATED else {},
        )
        for k in range(150)
    ]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), env=ENV)


@pytest.fixture
def scored(tmp_path) -> tuple[str, str]:
    path = str(tmp_path / "lib.db")
    with Library(path, seed_examples=False) as library:
        library.freeze(dimension(JudgeSettings(provider="openai", model="model-a")), name="judge")
        library.import_items("pilot", items())
    with FaultServer(distribution=lambda body: distribution(number(body))) as server:
        done = invoke(
            "score",
            "--prompt",
            "judge",
            "--data",
            "pilot",
            "--db",
            path,
            "--base-url",
            server.base_url,
            "--out",
            "-",
        )
    assert done.exit_code == 0, done.output
    with Library(path) as library:
        (run,) = library.list_runs()
    return path, run.id


def test_plans_against_scipy_and_the_api(scored):
    db, run_id = scored
    done = invoke(
        "budget",
        run_id,
        "--human",
        "coherence",
        "--width",
        "0.05",
        "--ppi-width",
        "0.4",
        "--db",
        db,
        "--json",
    )
    assert done.exit_code == 0, done.output
    out = json.loads(done.output)
    scores = np.array([sum(int(r) * p for r, p in distribution(k).items()) for k in range(150)])
    people = np.array([human(k) for k in range(RATED)], dtype=float)
    assert (out["judged"], out["rated"]) == (150, RATED)
    a = out["agreement"]
    assert a["estimate"] == pytest.approx(stats.spearmanr(scores[:RATED], people).statistic)
    assert (a["unit"], a["pilot_units"], a["reading"]) == ("items", RATED, "dataset")
    expected = agreement_plan(
        scores[:RATED], people, 0.05, "spearman", 0.8, scale=Scale(1, 5), bootstrap=1000
    )
    assert a["planned_units"] == expected["planned_units"] > RATED
    assert a["further_units"] == a["planned_units"] - RATED
    p = out["ppi"]
    some = [*people, *[None] * (150 - RATED)]
    assert p == json.loads(json.dumps(ppi_plan(scores, some, 0.4, "ppi++", 0.8)))
    assert p["pilot_rated"] == RATED and p["judged"] == 150

    text = invoke(
        "budget", run_id, "--human", "coherence", "--width", "0.05", "--ppi-width", "0.4", "--db", db
    )
    assert text.exit_code == 0, text.output
    assert f"{RATED} of 150 judged items rated" in text.output
    assert f"{a['planned_units']} items in all, {a['further_units']} more items" in text.output
    assert "assumes the further ratings are drawn like the ones so far" in text.output


def test_refusals_exit_with_a_message(scored):
    db, run_id = scored
    nothing = invoke("budget", run_id, "--human", "coherence", "--db", db)
    assert nothing.exit_code != 0 and "name a target width" in nothing.output
    other = invoke("budget", run_id, "--human", "fluency", "--width", "0.1", "--db", db)
    assert other.exit_code != 0 and "no human rating 'fluency'" in other.output
    for result in (nothing, other):
        assert "Traceback" not in result.output
