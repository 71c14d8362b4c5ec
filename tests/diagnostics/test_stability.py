"""Stability before freezing (issue 13, part 2): flip rate and score spread over K repeats, against a hand
computation; `geval stability` end to end with a scripted judge whose answers are known per repeat; the
real local judge on 3 sample items x 2 repeats."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
from click.testing import CliRunner
from runner_helpers import dimension

from geval_core.cli import cli
from geval_core.diagnostics.stability import dimension_stability, stability_check
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.stats.repeatability import flip_rate, likeliest_rating, spread, stability
from geval_core.types import Item, JudgeSettings
from prompt_library import Library


def lp(item: str, score: float, top: int) -> Judgment:
    return Judgment(item, score=score, top_rating=top, mode="logprobs")


def sm(item: str, score: float, first: float, dist: dict[int, float]) -> Judgment:
    return Judgment(item, score=score, first_rating=first, distribution=dist, mode="sampling")


# ---- statistics against a hand computation ---------------------------------------------------------------


def test_flip_rate_and_spread_by_hand():
    assert flip_rate([3, 3, 3]) == 0
    assert flip_rate([3, 4, 3]) == pytest.approx(2 / 3)  # pairs (3,4) (3,3) (4,3): two of three differ
    assert flip_rate([1, 2, 3, 4]) == 1
    assert flip_rate([3, None]) is None and flip_rate([]) is None
    sd, width = spread([3.4, 3.6, 3.4])
    # mean 3.4667; squared deviations 0.00444 + 0.01778 + 0.00444 = 0.02667; / (3 - 1); sqrt -> 0.11547
    assert sd == pytest.approx(math.sqrt(0.08 / 3 / 2)) and sd == pytest.approx(0.11547, abs=1e-5)
    assert width == pytest.approx(0.2)
    assert spread([2.0, None]) == (None, None)


def test_likeliest_rating_in_each_mode():
    assert likeliest_rating(lp("a", 3.3, 3)) == 3
    assert likeliest_rating(sm("a", 3.5, 4, {3: 0.25, 4: 0.25, 5: 0.5})) == 5  # the modal reply
    assert likeliest_rating(sm("a", 3.5, 4, {3: 0.5, 4: 0.5})) == 4  # a tie: the first reply's rating
    assert likeliest_rating(sm("a", 3.5, 2, {3: 0.5, 4: 0.5, 2: 0.0})) == 3  # else the lowest tied
    assert likeliest_rating(Judgment("a", mode="logprobs", error="JudgeError: down")) is None
    assert likeliest_rating(Judgment("a", mode="logprobs")) is None  # no valid mass, no score


def test_report_against_hand_computation():
    repeats = [
        [lp("a", 3.1, 3), lp("b", 3.4, 3), lp("c", 2.0, 2), lp("d", 1.0, 1), lp("e", 4.0, 4)],
        [
            lp("a", 3.1, 3),
            lp("b", 3.6, 4),
            lp("c", 3.3, 2),
            lp("d", 5.0, 5),
            Judgment("e", mode="logprobs", error="JudgeError: timeout"),
        ],
        [lp("a", 3.1, 3), lp("b", 3.4, 3), lp("c", 2.0, 2), lp("d", 5.0, 5)],  # e missing altogether
    ]
    report = stability(repeats)
    by_id = {i.id: i for i in report.per_item}
    assert [i.id for i in report.per_item] == ["a", "b", "c", "d", "e"]
    assert by_id["b"].ratings == [3, 4, 3] and by_id["b"].flip_rate == pytest.approx(2 / 3)
    assert by_id["b"].sd == pytest.approx(statistics.stdev([3.4, 3.6, 3.4])) and not by_id["b"].moved
    assert by_id["c"].flip_rate == 0 and by_id["c"].range == pytest.approx(1.3) and by_id["c"].moved
    assert by_id["d"].ratings == [1, 5, 5] and by_id["d"].flip_rate == pytest.approx(2 / 3)
    assert by_id["d"].range == 4 and by_id["d"].moved and by_id["d"].changed
    assert by_id["e"].ratings == [4, None, None] and by_id["e"].flip_rate is None and by_id["e"].sd is None
    assert report.items == 5 and report.unmeasured == 1
    assert report.items_changed == 2 and report.items_moved_half_point == 2
    assert report.flip_rate == pytest.approx((0 + 2 / 3 + 0 + 2 / 3) / 4)
    assert report.mean_sd == pytest.approx(
        statistics.fmean(
            [
                0.0,
                statistics.stdev([3.4, 3.6, 3.4]),
                statistics.stdev([2, 3.3, 2]),
                statistics.stdev([1, 5, 5]),
            ]
        )
    )
    assert report.summary().startswith(
        "2 of 4 items change rating between repeats; 2 of 4 move by more than half a point (3 repeats"
    )
    assert "1 item(s) had a rating in fewer than 2 repeats" in report.summary()
    data = json.loads(json.dumps(report.to_dict()))
    assert {"repeats", "items", "flip_rate", "items_changed", "items_moved_half_point", "per_item"} <= set(
        data
    )
    assert data["per_item"][1]["ratings"] == [3, 4, 3]  # whole ratings print as integers
    assert {"id", "ratings", "flip_rate", "sd", "range"} <= set(data["per_item"][0])


def test_dicts_from_the_library_work_like_judgments():
    rows = [[lp("a", 3.0, 3).to_dict()], [lp("a", 4.0, 4).to_dict()]]
    report = stability(rows)
    assert report.per_item[0].ratings == [3, 4] and report.items_changed == 1


def test_stability_check_levels():
    stable = stability([[lp("a", 3.0, 3)], [lp("a", 3.2, 3)]])
    check = stability_check(stable)
    assert check.level == "info" and check.field == "stability"
    assert check.message.startswith("0 of 1 items change rating between repeats")
    shaky = stability([[lp("a", 3.0, 3)], [lp("a", 4.0, 4)]])
    assert stability_check(shaky).level == "warning"
    assert "1 of 1 items change rating" in stability_check(shaky).message


# ---- the CLI with a scripted judge whose answers are known per item and repeat -----------------------------

# Item k's answer on its r-th call (a per-item counter; the calls of one item come one repeat after another).
PLAN = {
    0: [{"3": 0.9, "4": 0.1}] * 3,  # stable: 3.1 every time
    1: [{"3": 0.6, "4": 0.4}, {"4": 0.6, "3": 0.4}, {"3": 0.6, "4": 0.4}],  # 3 4 3; 3.4 3.6 3.4
    2: [{"2": 1.0}, {"2": 0.5, "5": 0.45, "1": 0.05}, {"2": 1.0}],  # always 2; 2.0 3.3 2.0: moves 1.3
    3: [{"1": 1.0}, {"5": 1.0}, {"5": 1.0}],  # 1 5 5: flips and moves
}


class PlannedScript:
    """Answers item k's r-th rating request with PLAN[k][r]; steps requests get numbered steps per seed."""

    def __init__(self) -> None:
        self.calls: dict[int, int] = {}
        self.seeds: list[int | None] = []

    def __call__(self, request) -> dict[str, float]:
        text = request.messages[-1]["content"]
        if not request.ratings:  # the steps-generation prompt
            return {f"1. Read the summary (version {request.seed}).\n2. Assign a score.": 1.0}
        k = int(re.search(r"Summary S(\d+)\.", text).group(1))
        r = self.calls.get(k, 0)
        self.calls[k] = r + 1
        self.seeds.append(request.seed)
        return dict(PLAN[k][r])


@pytest.fixture
def planned(monkeypatch):
    script = PlannedScript()
    monkeypatch.setattr("geval_core.providers.get_judge", lambda settings, **_: ScriptedJudge(script))
    return script


def data_file(tmp_path):
    path = tmp_path / "sample4.jsonl"
    rows = [{"id": f"s{k}", "document": f"Document {k}.", "summary": f"Summary S{k}."} for k in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_stability_of_a_frozen_prompt(tmp_path, planned):
    db = str(tmp_path / "lib.db")
    result = CliRunner().invoke(
        cli,
        [
            "stability",
            "--prompt",
            "coherence",
            "--data",
            str(data_file(tmp_path)),
            "--judge",
            "scripted",
            "--repeats",
            "3",
            "--seed",
            "7",
            "--temperature",
            "0.7",
            "--db",
            db,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["repeats"] == 3 and out["items"] == 4
    assert out["items_changed"] == 2 and out["items_moved_half_point"] == 2
    assert out["flip_rate"] == pytest.approx(1 / 3)
    per = {p["id"]: p for p in out["per_item"]}
    assert per["s0"]["ratings"] == [3, 3, 3] and per["s0"]["sd"] == pytest.approx(0.0)
    assert per["s1"]["ratings"] == [3, 4, 3] and per["s1"]["flip_rate"] == pytest.approx(2 / 3)
    assert per["s1"]["sd"] == pytest.approx(statistics.stdev([3.4, 3.6, 3.4]))
    assert per["s2"]["ratings"] == [2, 2, 2] and per["s2"]["range"] == pytest.approx(1.3)
    assert per["s3"]["ratings"] == [1, 5, 5] and per["s3"]["range"] == pytest.approx(4.0)
    assert out["summary"].startswith("2 of 4 items change rating between repeats")
    assert sorted(set(planned.seeds)) == [7, 8, 9]  # one seed per repeat: the repeats are not copies
    assert any("logprobs mode" in w for w in out["warnings"])
    # Each repeat is a stored run of the frozen prompt, made without the judge cache.
    library = Library(db)
    assert len(out["run_ids"]) == 3
    for run_id in out["run_ids"]:
        run = library.get_run(run_id)
        assert run.status == "done" and run.judge.seed in (7, 8, 9)
        assert len(library.judgments(run_id)) == 4
    text = CliRunner().invoke(
        cli,
        [
            "stability",
            "--prompt",
            "coherence",
            "--data",
            str(data_file(tmp_path)),
            "--judge",
            "scripted",
            "--repeats",
            "2",
            "--limit",
            "2",
            "--db",
            db,
        ],
    )
    assert text.exit_code == 0, text.output
    assert "items change rating between repeats" in text.stdout and "s1" in text.stdout
    # `runs list` says what each run is for: the repeats are not runs one scored to read.
    listed = CliRunner().invoke(cli, ["runs", "list", "--db", db]).output.splitlines()
    purposes = {line.split()[0]: line for line in listed[1:]}
    assert all("stability repeat" in purposes[run_id] for run_id in out["run_ids"])
    assert [library.get_run(r).purpose for r in out["run_ids"]] == [
        f"stability repeat {k} of 3" for k in (1, 2, 3)
    ]


def test_cli_stability_of_a_draft_stores_nothing(tmp_path, planned):
    db = str(tmp_path / "lib.db")
    library = Library(db)
    judge = JudgeSettings(provider="scripted", model="scripted", mode="sampling", n=1, temperature=0.0)
    draft_id = library.save_draft(dimension(judge, name="Shaky"))
    runs_before = len(library.list_runs())
    args = [
        "stability",
        "--prompt",
        f"draft:{draft_id}",
        "--data",
        str(data_file(tmp_path)),
        "--repeats",
        "3",
        "--db",
        db,
        "--json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    # Sampling mode: the reply is the script's top token, so ratings follow the plan's top ratings.
    assert [p["ratings"] for p in out["per_item"]] == [[3, 3, 3], [3, 4, 3], [2, 2, 2], [1, 5, 5]]
    assert out["items_changed"] == 2 and out["items_moved_half_point"] == 2  # sampled scores are the ratings
    assert out["run_ids"] == [] and len(library.list_runs()) == runs_before
    assert any("temperature 0 only measure server nondeterminism" in w for w in out["warnings"])
    by_name = CliRunner().invoke(cli, [*args[:2], "Shaky", *args[3:]])
    assert by_name.exit_code == 0, by_name.output  # no frozen prompt of that name: the draft is found
    missing = CliRunner().invoke(cli, [*args[:2], "draft:nope", *args[3:]])
    assert missing.exit_code == 1 and "no draft 'nope'" in missing.output


def test_cli_regenerated_steps_change_every_repeat(tmp_path, planned):
    db = str(tmp_path / "lib.db")
    result = CliRunner().invoke(
        cli,
        [
            "stability",
            "--prompt",
            "coherence",
            "--data",
            str(data_file(tmp_path)),
            "--judge",
            "scripted",
            "--repeats",
            "3",
            "--seed",
            "0",
            "--regenerate-steps",
            "--db",
            db,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["regenerate_steps"] and out["run_ids"] == [] and out["warnings"][1:] == []
    assert [s[0] for s in out["steps"]] == [f"Read the summary (version {k})." for k in range(3)]
    assert out["items_changed"] == 2


def test_cli_refuses_a_single_repeat(tmp_path):
    result = CliRunner().invoke(
        cli,
        [
            "stability",
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--repeats",
            "1",
            "--db",
            str(tmp_path / "lib.db"),
        ],
    )
    assert result.exit_code == 2 and "--repeats" in result.output


# ---- the real local judge --------------------------------------------------------------------------------


@pytest.mark.slow
def test_local_judge_stability_end_to_end(tmp_path, local_judge, monkeypatch):
    """3 sample items x 2 repeats, sampling at temperature 1 with 3 replies, through the CLI and stored runs."""
    monkeypatch.setattr("geval_core.providers.get_judge", lambda settings, **_: local_judge)
    db = str(tmp_path / "lib.db")
    result = CliRunner().invoke(
        cli,
        [
            "stability",
            "--prompt",
            "coherence",
            "--data",
            "sample",
            "--limit",
            "3",
            "--repeats",
            "2",
            "--mode",
            "sampling",
            "--n",
            "3",
            "--temperature",
            "1.0",
            "--seed",
            "1",
            "--db",
            db,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["repeats"] == 2 and out["items"] == 3 and len(out["run_ids"]) == 2
    for item in out["per_item"]:
        assert len(item["ratings"]) == 2 and all(r is None or 1 <= r <= 5 for r in item["ratings"])
    assert 0 <= out["items_changed"] <= 3 and "items change rating between repeats" in out["summary"]


@pytest.mark.slow
def test_local_judge_draft_with_regenerated_steps(local_judge):
    """The Design page's entry point: a draft, steps generated per repeat by the local model, nothing stored."""
    items = [
        Item(f"i{k}", {"document": f"The council met on day {k}.", "summary": f"The council met {k}."})
        for k in range(3)
    ]
    run = dimension_stability(
        dimension(JudgeSettings()), items, local_judge, repeats=2, regenerate_steps=True, seed=0
    )
    assert run.report.repeats == 2 and run.report.items == 3
    assert len(run.steps) + len(run.failures) == 2
    assert stability_check(run).field == "stability"
