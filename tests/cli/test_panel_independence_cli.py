"""`geval panel score --human` end to end against three loopback servers: three members one point off on a
share of the items they have in common and on items of their own; the line that says how many independent judges
they are worth carries the mean error correlation and K / (1 + (K - 1) rho) computed with scipy on the scores the
rows hold."""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension
from scipy import stats

from geval_core.cli import cli
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

KEY = "sk-test-PANELERR000000000000000000000000000"


def number(body: dict) -> int:
    return int(body["messages"][0]["content"].split("Document number ")[1].split(".")[0])


def human_of(k: int) -> int:
    return 1 + (k * 7) % 5


def member(shift: int):
    """A judge one point off on the items k % 3 == 0 (shared by every member) and on its own items k % 4 == shift."""

    def distribution(body: dict) -> dict:
        k = number(body)
        point = human_of(k) + (k % 3 == 0) + (k % 4 == shift)
        point = min(point, 5) if point <= 5 else human_of(k) - 1
        return {str(point): 0.8, str(human_of(k)): 0.2} if point != human_of(k) else {str(point): 1.0}

    return distribution


def test_panel_score_says_how_many_independent_judges_end_to_end(tmp_path):
    db = str(tmp_path / "lib.db")
    with Library(db, seed_examples=False) as library:
        names = []
        for j in range(3):
            library.freeze(
                dimension(
                    JudgeSettings(provider="openai", model=f"model-{j}"),
                    definition=f"Coherence, read by judge {j}.",
                ),
                name=f"m{j}",
            )
            names.append(f"m{j}")
        library.import_items(
            "rated",
            [
                Item(
                    f"i{k:03d}",
                    {"document": f"Document number {k}.", "summary": "S."},
                    {"coherence": float(human_of(k))},
                )
                for k in range(60)
            ],
        )
    env = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
    run = CliRunner().invoke
    frozen = run(
        cli, ["panel", "freeze", "jury", *[a for n in names for a in ("--member", n)], "--db", db], env=env
    )
    assert frozen.exit_code == 0, frozen.output
    with (
        FaultServer(distribution=member(0)) as a,
        FaultServer(distribution=member(1)) as b,
        FaultServer(distribution=member(2)) as c,
    ):
        urls = [f"m{j}={s.base_url}" for j, s in enumerate((a, b, c))]
        done = run(
            cli,
            [
                "panel",
                "score",
                "jury",
                "--data",
                "rated",
                "--db",
                db,
                "--human",
                "coherence",
                "--out",
                str(tmp_path / "rows.jsonl"),
                *[x for u in urls for x in ("--member-base-url", u)],
            ],
            env=env,
        )
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    errors = np.array(
        [[r["members"][f"m{j}@1"] - human_of(int(r["id"][1:])) for j in range(3)] for r in rows]
    )
    rho = np.mean(
        [stats.pearsonr(errors[:, i], errors[:, j]).statistic for i, j in combinations(range(3), 2)]
    )
    assert f"correlate {rho:.3f} on average" in done.stderr
    assert f"the 3 members are worth {3 / (1 + 2 * rho):.2f} independent judges" in done.stderr
    assert not math.isnan(rho) and 0 < rho < 1
