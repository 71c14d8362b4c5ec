"""`geval cascade guarantee` then `geval cascade score` end to end against loopback servers: the cheap judge sure
on two items in three (sure and wrong on a few of them) and torn on the third, the strong judge near the human
rating. The chosen threshold and what it keeps are a plain loop's with scipy's entropy and binomial test; the frozen
cascade keeps the sure items of new data, sends the rest to the strong server, and its report gives the share kept
beside the calibration's and what the guarantee does and does not cover."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension
from scipy import stats

from geval_core.cli import cli
from geval_core.stats.guarantee import threshold_grid
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

KEY = "sk-test-GUARANTEE000000000000000000000000"
ENV = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}


def number(body: dict) -> int:
    return int(body["messages"][0]["content"].split("Document number ")[1].split(".")[0])


def human(k: int) -> int:
    return 1 + (k * 7) % 5


def cheap_distribution(k: int) -> dict:
    if k % 3 == 0:  # torn between three ratings
        return {"2": 0.4, "3": 0.3, "4": 0.3}
    point = human(k) % 5 + 1 if k % 17 == 1 else human(k)  # sure, and now and then sure and wrong
    return {str(point): 0.95, str(point % 5 + 1): 0.05}


def cheap(body: dict) -> dict:
    return cheap_distribution(number(body))


def strong(body: dict) -> dict:
    return {str(human(number(body))): 0.9, "The": 0.1}


def items(numbers: range) -> list[Item]:
    return [
        Item(
            f"i{k:03d}",
            {"document": f"Document number {k}.", "summary": f"Summary {k}."},
            {"coherence": float(human(k))},
        )
        for k in numbers
    ]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), env=ENV)


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "lib.db")
    with Library(path, seed_examples=False) as library:
        for name, model in (("cheap", "model-cheap"), ("strong", "model-strong")):
            library.freeze(dimension(JudgeSettings(provider="openai", model=model)), name=name)
        library.import_items("calib", items(range(0, 90)))
        library.import_items("fresh", items(range(90, 120)))
    with FaultServer(distribution=cheap) as server:
        done = invoke(
            "score",
            "--prompt",
            "cheap",
            "--data",
            "calib",
            "--db",
            path,
            "--base-url",
            server.base_url,
            "--out",
            "-",
        )
    assert done.exit_code == 0, done.output
    return path


def by_hand(target: float, delta: float, min_kept: int) -> tuple[float | None, int, int]:
    ks = range(0, 90)
    scores = {k: sum(int(r) * p for r, p in cheap_distribution(k).items()) for k in ks}
    u = np.array([stats.entropy(list(cheap_distribution(k).values()), base=2) for k in ks])
    ok = np.array([abs(scores[k] - human(k)) <= 0.5 for k in ks])
    chosen = None
    for t in threshold_grid(math.log2(5)):
        keep = u <= t
        if keep.sum() < min_kept:
            continue
        if (
            stats.binomtest(int((~ok[keep]).sum()), int(keep.sum()), 1 - target, alternative="less").pvalue
            > delta
        ):
            break
        chosen = t
    keep = u <= chosen
    return chosen, int(keep.sum()), int((~ok[keep]).sum())


def test_guarantee_freeze_and_score_end_to_end(db, tmp_path):
    with Library(db) as library:
        (run,) = library.list_runs()
    done = invoke(
        "cascade",
        "guarantee",
        run.id,
        "--human",
        "coherence",
        "--target",
        "0.8",
        "--delta",
        "0.1",
        "--min-kept",
        "20",
        "--db",
        db,
        "--json",
    )
    assert done.exit_code == 0, done.output
    out = json.loads(done.output)
    threshold, kept, wrong = by_hand(0.8, 0.1, 20)
    assert out["threshold"] == pytest.approx(threshold) and (out["kept"], out["disagree"]) == (kept, wrong)
    assert kept == 60 and wrong == 4  # the sure two thirds, four of them sure and wrong

    text = invoke(
        "cascade",
        "guarantee",
        run.id,
        "--human",
        "coherence",
        "--min-kept",
        "20",
        "--strong",
        "strong",
        "--freeze",
        "sure",
        "--steps",
        "--db",
        db,
    )
    assert text.exit_code == 0, text.output
    assert "keeps 60 of 90 (66.7%)" in text.output and "froze sure@1" in text.output
    assert "distribution shift" in text.output and "Traceback" not in text.output

    rows_file = tmp_path / "rows.jsonl"
    with FaultServer(distribution=cheap) as first, FaultServer(distribution=strong) as second:
        scored = invoke(
            "cascade",
            "score",
            "sure",
            "--data",
            "fresh",
            "--db",
            db,
            "--base-url",
            f"cheap={first.base_url}",
            "--base-url",
            f"strong={second.base_url}",
            "--out",
            str(rows_file),
        )
        assert scored.exit_code == 0, scored.output
        assert (first.count, second.count) == (30, 10)  # k % 3 == 0 of 90..119 go on
    assert "guarantee: kept 20 of 30 (66.7%; calibration 66.7% of 90)" in scored.stderr
    assert "people rated 20 kept items" in scored.stderr and "does not cover:" in scored.stderr
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert {r["id"] for r in rows if r["by"] == "strong"} == {
        f"i{k:03d}" for k in range(90, 120) if k % 3 == 0
    }


def test_refusals_exit_with_a_message(db):
    with Library(db) as library:
        (run,) = library.list_runs()
    never = invoke(
        "cascade",
        "guarantee",
        run.id,
        "--human",
        "coherence",
        "--target",
        "0.99",
        "--delta",
        "0.01",
        "--strong",
        "strong",
        "--freeze",
        "x",
        "--db",
        db,
    )
    assert never.exit_code != 0 and "no threshold reaches 99%" in never.output
    alone = invoke("cascade", "guarantee", run.id, "--human", "coherence", "--freeze", "x", "--db", db)
    assert alone.exit_code != 0 and "--freeze needs --strong" in alone.output
    shown = invoke("cascade", "guarantee", run.id, "--human", "coherence", "--target", "0.99", "--db", db)
    assert shown.exit_code == 0 and "no threshold" in shown.output
    for result in (never, alone, shown):
        assert "Traceback" not in result.output
