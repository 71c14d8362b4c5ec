"""`geval cascade curve | freeze | score` against two loopback servers with chosen rating behaviours: the cheap
judge sure on even documents and torn between 2 and 4 on odd ones, the strong judge near the human rating. The
curve's shares and Spearman figures against scipy; the frozen cascade sends exactly the odd documents to the
strong server; a second scoring pays no call; bad references exit with a message, not a traceback."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension
from scipy import stats

from geval_core.cli import cli
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

KEY = "sk-test-CASCADE00000000000000000000000000"
ENV = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
SURE, TORN = {"4": 0.95, "2": 0.05}, {"4": 0.5, "2": 0.5}


def number(body: dict) -> int:
    return int(body["messages"][0]["content"].split("Document number ")[1].split(".")[0])


def human(k: int) -> int:
    return 1 + (k * 7) % 5


def cheap(body: dict) -> dict:
    return TORN if number(body) % 2 else SURE


def strong(body: dict) -> dict:
    point = human(number(body))
    return {str(point): 0.9, str(point % 5 + 1): 0.1}


def items(numbers: range) -> list[Item]:
    return [
        Item(
            f"i{k:03d}",
            {"document": f"Document number {k}.", "summary": f"Summary {k}."},
            {"coherence": float(human(k))},
            f"d{k // 2:03d}",
        )
        for k in numbers
    ]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), env=ENV)


def bits(distribution: dict) -> float:
    return float(stats.entropy(list(distribution.values()), base=2))


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "lib.db")
    with Library(path, seed_examples=False) as library:
        for name, model in (("cheap", "model-cheap"), ("strong", "model-strong")):
            library.freeze(dimension(JudgeSettings(provider="openai", model=model)), name=name)
        library.import_items("calib", items(range(0, 24)))
        library.import_items("fresh", items(range(24, 40)))
    return path


def scored_calibration(db: str) -> dict[str, str]:
    """Both judges on the calibration set; their run ids by prompt name."""
    for name, script in (("cheap", cheap), ("strong", strong)):
        with FaultServer(distribution=script) as server:
            done = invoke(
                "score",
                "--prompt",
                name,
                "--data",
                "calib",
                "--db",
                db,
                "--base-url",
                server.base_url,
                "--out",
                "-",
            )
        assert done.exit_code == 0, done.output
    with Library(db) as library:
        return {r.prompt_label.split("@")[0]: r.id for r in library.list_runs()}


def test_the_curve_against_scipy(db):
    runs = scored_calibration(db)
    done = invoke(
        "cascade",
        "curve",
        runs["cheap"],
        runs["strong"],
        "--human",
        "coherence",
        "--signal",
        "entropy",
        "--thresholds",
        "5",
        "--bootstrap",
        "200",
        "--db",
        db,
        "--json",
    )
    assert done.exit_code == 0, done.output
    curve = json.loads(done.output)
    assert curve["items"] == 24 and curve["resampled"] == "groups"
    with Library(db) as library:
        scores = {
            name: {r["item_id"]: r["score"] for r in library.judgments(run)} for name, run in runs.items()
        }
    ids = sorted(scores["cheap"])
    unsure = {i: bits(TORN if int(i[1:]) % 2 else SURE) for i in ids}
    people = [float(human(int(i[1:]))) for i in ids]
    # quantiles of two distinct entropies, repeated cuts dropped: all, the low one, between, the high one
    assert [row["routed"] for row in curve["curve"]] == [24, 12, 12, 0]
    for row in curve["curve"]:
        routed = {i for i in ids if unsure[i] > row["threshold"] + 1e-12}
        assert row["routed"] == len(routed)
        mixed = [scores["strong" if i in routed else "cheap"][i] for i in ids]
        assert row["spearman"] == pytest.approx(stats.spearmanr(mixed, people).statistic)
        assert (
            row["interval"][0] - 1e-6 <= row["spearman"] <= row["interval"][1] + 1e-6
        )  # bounds kept to 6 places
        assert row["with_strong_interval"] is not None or row["with_strong"] is None
    text = invoke(
        "cascade",
        "curve",
        runs["cheap"],
        runs["strong"],
        "--human",
        "coherence",
        "--db",
        db,
        "--thresholds",
        "3",
        "--bootstrap",
        "0",
    )
    assert text.exit_code == 0 and "strong on 100.0%" in text.output and "Traceback" not in text.output


def test_freeze_then_score_sends_only_the_unsure_items_and_pays_nothing_twice(db, tmp_path):
    frozen = invoke(
        "cascade",
        "freeze",
        "tiered",
        "--cheap",
        "cheap",
        "--strong",
        "strong",
        "--signal",
        "entropy",
        "--threshold",
        "0.5",
        "--db",
        db,
        "--json",
    )
    assert frozen.exit_code == 0, frozen.output
    assert json.loads(frozen.output)["created"] is True
    again = invoke(
        "cascade",
        "freeze",
        "tiered",
        "--cheap",
        "cheap",
        "--strong",
        "strong",
        "--signal",
        "entropy",
        "--threshold",
        "0.5",
        "--db",
        db,
    )
    assert again.exit_code == 0 and "already frozen: tiered@1" in again.output
    out = tmp_path / "rows.jsonl"
    with FaultServer(distribution=cheap) as first, FaultServer(distribution=strong) as second:
        args = [
            "cascade",
            "score",
            "tiered",
            "--data",
            "fresh",
            "--db",
            db,
            "--base-url",
            f"cheap={first.base_url}",
            "--base-url",
            f"strong={second.base_url}",
            "--out",
            str(out),
            "--json",
        ]
        done = invoke(*args)
        assert done.exit_code == 0, done.output
        calls = (first.count, second.count)
        repeat = invoke(*args)
        assert (first.count, second.count) == calls  # both runs reused
    assert calls == (16, 8)
    summary = json.loads(done.stderr)
    assert summary["routed"] == 8 and summary["items"] == 16
    assert summary["judge_calls"] == {"cheap": 16, "strong": 8}
    assert summary["spend"]["strong_calls_saved"] == 8
    assert json.loads(repeat.stderr)["judge_calls"] == {"cheap": 0, "strong": 0}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for row in rows:
        k = int(row["id"][1:])
        assert row["by"] == ("strong" if k % 2 else "cheap")
        expected = human(k) * 0.9 + (human(k) % 5 + 1) * 0.1 if k % 2 else 4 * 0.95 + 2 * 0.05
        assert row["score"] == pytest.approx(expected)
        assert row["uncertainty"] == pytest.approx(bits(TORN if k % 2 else SURE))


def test_bad_references_exit_with_a_message(db):
    unknown = invoke("cascade", "score", "nothing", "--data", "fresh", "--db", db)
    assert unknown.exit_code != 0 and "no cascade 'nothing'" in unknown.output
    same = invoke(
        "cascade", "freeze", "x", "--cheap", "cheap", "--strong", "cheap", "--threshold", "0.5", "--db", db
    )
    assert same.exit_code != 0 and "the same prompt" in same.output
    runs = scored_calibration(db)
    with Library(db) as library:
        other = library.create_run(
            library.get_prompt("strong").id, "fresh", library.get_prompt("strong").dimension.judge
        )
    apart = invoke("cascade", "curve", runs["cheap"], other, "--human", "coherence", "--db", db)
    assert apart.exit_code != 0 and "same dataset version" in apart.output
    for result in (unknown, same, apart):
        assert "Traceback" not in result.output


def test_a_strong_judge_that_dies_fails_the_cascade_and_a_rerun_resumes_it(db, tmp_path):
    """The strong judge's server answers two requests, then refuses every call: the cascade exits non-zero, each
    unscored row says why; with the server back (the same server: another one would be another run), the same
    command resumes the failed run and finishes."""
    assert (
        invoke(
            "cascade",
            "freeze",
            "tiered",
            "--cheap",
            "cheap",
            "--strong",
            "strong",
            "--signal",
            "entropy",
            "--threshold",
            "0.5",
            "--db",
            db,
        ).exit_code
        == 0
    )
    out = tmp_path / "rows.jsonl"
    back = [False]
    with (
        FaultServer(distribution=cheap) as cheap_server,
        FaultServer(
            distribution=strong, script=lambda index, body: "ok" if back[0] or index < 2 else "401"
        ) as sick,
    ):
        command = (
            "cascade",
            "score",
            "tiered",
            "--data",
            "fresh",
            "--db",
            db,
            "--out",
            str(out),
            "--base-url",
            f"cheap={cheap_server.base_url}",
            "--base-url",
            f"strong={sick.base_url}",
        )
        done = invoke(*command)
        assert done.exit_code == 3, done.output
        assert (
            "the cascade did not finish: its strong judge's run" in done.output
            and "Traceback" not in done.output
        )
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        strong_rows = [r for r in rows if r["by"] == "strong"]
        unscored = [r for r in strong_rows if r["score"] is None]
        assert len(strong_rows) == 8 and len(unscored) == 6  # two answered before the server died
        assert all("not scored: the strong judge's run" in r["error"] for r in unscored)
        back[0] = True
        calls = (cheap_server.count, sick.count)
        again = invoke(*command)
        assert again.exit_code == 0, again.output
        assert cheap_server.count == calls[0]  # the cheap run was finished: nothing asked again
        assert sick.count - calls[1] == 6  # only the strong items left unscored, once each
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["score"] is not None for r in rows)
