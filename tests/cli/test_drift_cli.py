"""`geval drift freeze` / `check` / `show` end to end against a loopback OpenAI-compatible server: checks of the
unchanged judge say no drift (exit 0), every check is an unalterable frozen record carrying the e-value on, and a
server whose replies shift one rating up under a new model version raises the alarm (exit 3) with the moves, the
agreement change and the model versions named; a split dataset's anchors are its dev side."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from click.testing import CliRunner
from faultserver import FaultServer
from runner_helpers import dimension
from scipy import stats

from geval_core.cli import cli
from geval_core.types import Item, JudgeSettings
from prompt_library import Library

KEY = "sk-test-DRIFT0000000000000000000000000000"
ENV = {"OPENAI_API_KEY": KEY, "GEVAL_PRICES": ""}
N = 40


def number(body: dict) -> int:
    return int(body["messages"][0]["content"].split("Document number ")[1].split(".")[0])


def human(k: int) -> int:
    return 1 + (k * 7) % 5


def distribution(k: int, shifted: bool) -> dict:
    """Near people's rating; shifted, the probability moves to the rating above (every score rises 0.4)."""
    h = human(k)
    if h == 5:
        return {"5": 1.0} if shifted else {"5": 0.6, "4": 0.4}
    return {str(h): 0.2, str(h + 1): 0.8} if shifted else {str(h): 0.6, str(h + 1): 0.4}


def weighted(k: int, shifted: bool) -> float:
    return sum(int(r) * p for r, p in distribution(k, shifted).items())


class Judge:
    """The server's replies, shifted once `shift` is set."""

    def __init__(self) -> None:
        self.shift = False

    def __call__(self, body: dict) -> dict:
        return distribution(number(body), self.shift)


def items(numbers: range) -> list[Item]:
    return [
        Item(
            f"i{k:03d}",
            {"document": f"Document number {k}.", "summary": f"Summary {k}."},
            {"coherence": float(human(k))},
            group=f"d{k % 10}",
        )
        for k in numbers
    ]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), env=ENV)


@pytest.fixture
def setup(tmp_path):
    path = str(tmp_path / "lib.db")
    with Library(path, seed_examples=False) as library:
        library.freeze(dimension(JudgeSettings(provider="openai", model="m")), name="coh")
        library.import_items("golden", items(range(N)))
    judge = Judge()
    with FaultServer(distribution=judge) as server:
        done = invoke(
            "score",
            "--prompt",
            "coh",
            "--data",
            "golden",
            "--db",
            path,
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "out.jsonl"),
            "--json",
        )
        assert done.exit_code == 0, done.output
        run_id = json.loads(done.output.strip().splitlines()[-1])["run_id"]
        yield path, server, judge, run_id


def test_unchanged_checks_say_no_drift_and_a_shifted_judge_raises_the_alarm(setup):
    path, server, judge, run_id = setup
    frozen = invoke("drift", "freeze", "coh", "--run", run_id, "--db", path, "--json")
    assert frozen.exit_code == 0, frozen.output
    watch = json.loads(frozen.stdout)
    assert (
        watch["anchors"] == N and watch["model_versions"] == ["fault-model-2024-01-01"] and watch["created"]
    )
    for k in range(2):
        result = invoke("drift", "check", "coh", "--db", path, *(["--sample", "20"] if k == 0 else []))
        assert result.exit_code == 0, result.output
        assert "judge: openai:m at" in result.output and "no drift" in result.output
        assert (
            "mean TV distance 0.000" in result.output
            and "model version: reference fault-model-2024-01-01" in result.output
        )
    judge.shift, server.model = True, "fault-model-2025-06-01"
    shifted = invoke("drift", "check", "coh", "--db", path, "--json")
    assert shifted.exit_code == 3, shifted.output
    report = json.loads(shifted.stdout)
    check = report["check"]
    assert report["verdict"] == "drift" and report["alarm_at"] == 3 and check["seq"] == 3
    moved = [k for k in range(N) if human(k) < 5]  # the likeliest rating moves up; a 5 stays a 5
    assert check["shift"]["top_moved_share"] == pytest.approx(len(moved) / N)
    tv = [
        0.5 * sum(abs(distribution(k, False).get(r, 0) - distribution(k, True).get(r, 0)) for r in "12345")
        for k in range(N)
    ]
    assert check["shift"]["mean_tv"] == pytest.approx(np.mean(tv))
    assert check["model_versions"] == {
        "reference": ["fault-model-2024-01-01"],
        "now": ["fault-model-2025-06-01"],
        "changed": True,
    }
    by_hand_agreement(report, check)
    shown = invoke("drift", "show", "coh", "--db", path)
    assert shown.exit_code == 0 and "DRIFT" in shown.output and "fault-model-2025-06-01" in shown.output
    later = invoke("drift", "check", "coh", "--db", path, "--quiet")  # once alarmed, the verdict stays
    assert later.exit_code == 3 and "at check 3" in later.output
    listed = invoke("drift", "list", "--db", path, "--json")
    assert listed.exit_code == 0
    assert [(w["name"], w["checks"], w["verdict"]) for w in json.loads(listed.stdout)] == [
        ("coh", 4, "drift")
    ]


def by_hand_agreement(report: dict, check: dict) -> None:
    """Spearman with people, reference vs now, by scipy on the same items."""
    ks = range(N)
    ref, now, people = (
        [weighted(k, False) for k in ks],
        [weighted(k, True) for k in ks],
        [human(k) for k in ks],
    )
    figure = check["agreement"]["figures"]["spearman"]
    assert figure["first"] == pytest.approx(stats.spearmanr(ref, people)[0])
    assert figure["second"] == pytest.approx(stats.spearmanr(now, people)[0])
    assert figure["difference"] == pytest.approx(figure["second"] - figure["first"])
    assert np.isclose(check["shift"]["mean_difference"], np.mean(np.array(now) - np.array(ref)))


def test_checks_are_unalterable_records(setup):
    path, _server, _judge, run_id = setup
    assert invoke("drift", "freeze", "coh", "--run", run_id, "--db", path).exit_code == 0
    assert invoke("drift", "check", "coh", "--db", path, "--sample", "5").exit_code == 0
    with sqlite3.connect(path) as conn:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE frozen_records SET body = '{}' WHERE kind = 'drift-check'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM frozen_records WHERE kind = 'drift'")
    verified = invoke("verify", "--db", path)
    assert verified.exit_code == 0, verified.output


def test_anchors_of_a_split_dataset_are_its_dev_side(setup):
    path, _server, _judge, run_id = setup
    assert invoke("split", "golden", "--dev", "0.6", "--db", path).exit_code == 0
    frozen = invoke("drift", "freeze", "coh", "--run", run_id, "--db", path, "--json")
    assert frozen.exit_code == 0, frozen.output
    watch = json.loads(frozen.stdout)
    with Library(path) as library:
        from geval_core.run.splits import get_split

        dev = set(get_split(library, library.get_dataset("golden").id)["dev"])
    assert watch["side"] == "dev" and set(watch["items"]) == dev and len(dev) < N
    checked = invoke("drift", "check", "coh", "--db", path, "--json")  # the plan takes the dev side's items
    assert checked.exit_code == 0, checked.output
    assert "dev side" in checked.output and set(json.loads(checked.stdout)["check"]["items"]) == dev
    with Library(path) as library:
        from geval_core.run.splits import sealed_uses

        assert sealed_uses(library, get_split(library, library.get_dataset("golden").id)) == []


def test_errors_name_what_is_wrong(setup):
    path, server, _judge, run_id = setup
    missing = invoke("drift", "check", "nope", "--db", path)
    assert (
        missing.exit_code == 1
        and "no drift watch 'nope'" in missing.output
        and "Traceback" not in missing.output
    )
    seed_alone = invoke("drift", "check", "nope", "--seed", "2", "--db", path)
    assert seed_alone.exit_code == 2 and "--seed draws a --sample" in seed_alone.output  # acted on or refused
    human_wrong = invoke("drift", "freeze", "coh", "--run", run_id, "--human", "fluency", "--db", path)
    assert human_wrong.exit_code == 1 and "no human rating 'fluency'" in human_wrong.output
    assert invoke("drift", "freeze", "coh", "--run", run_id, "--db", path).exit_code == 0
    other = invoke(
        "drift", "check", "coh", "--judge", "openai:m2", "--base-url", server.base_url, "--db", path, "--json"
    )
    assert other.exit_code == 0, other.output
    assert "warning: not the reference's judge: different judges (model)" in other.output
    assert "different judges (model)" in json.loads(other.stdout)["check"]["other_judge"]


class Redrawn(Judge):
    """Another judge of the same quality: each item's rating one point up or down by turns (the mean stays)."""

    def __call__(self, body: dict) -> dict:
        k = number(body)
        if not self.shift:
            return distribution(k, False)
        point = min(5, max(1, human(k) + (1 if k % 2 else -1)))
        return {str(point): 0.6, str(point % 5 + 1): 0.4}


def test_a_repeated_reference_finds_a_judge_that_moves_items_either_way(tmp_path):
    path = str(tmp_path / "lib.db")
    with Library(path, seed_examples=False) as library:
        library.freeze(dimension(JudgeSettings(provider="openai", model="m")), name="coh")
        library.import_items("golden", items(range(N)))
    judge = Redrawn()
    with FaultServer(distribution=judge) as server:
        done = invoke(
            "score",
            "--prompt",
            "coh",
            "--data",
            "golden",
            "--db",
            path,
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "out.jsonl"),
            "--json",
        )
        run_id = json.loads(done.stdout.strip().splitlines()[-1])["run_id"]
        frozen = invoke("drift", "freeze", "coh", "--run", run_id, "--repeat", "--db", path, "--json")
        assert frozen.exit_code == 0, frozen.output
        assert "judge: openai:m at " in frozen.output  # the repeat's plan, before it runs
        watch = json.loads(frozen.stdout)
        assert len(watch["runs"]) == 2 and watch["runs"][0] == run_id and len(server.log) == 2 * N
        judge.shift = True
        checked = invoke("drift", "check", "coh", "--db", path, "--json")
    assert checked.exit_code == 3, checked.output
    check = json.loads(checked.stdout)["check"]
    assert check["test"]["spread_bets"] == N and abs(check["shift"]["mean_difference"]) < 0.5


def test_an_exported_watch_is_checked_beside_production_scoring(setup, tmp_path, monkeypatch):
    """`geval drift export` and `drift_check_file` with the exported prompt: the same test carried on from the
    library's checks, no server URL in the file, an edited file refused."""
    from geval_core import InputError
    from geval_core.diagnostics.drift_file import drift_check_file

    path, server, judge, run_id = setup
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert invoke("drift", "freeze", "coh", "--run", run_id, "--db", path).exit_code == 0
    assert invoke("drift", "check", "coh", "--db", path).exit_code == 0
    prompt_file, watch_file = tmp_path / "coh.json", tmp_path / "coh.drift.json"
    assert invoke("prompts", "export", "coh", "-o", str(prompt_file), "--db", path).exit_code == 0
    exported = invoke("drift", "export", "coh", "-o", str(watch_file), "--db", path)
    assert exported.exit_code == 0 and "40 anchors, 1 checks" in exported.output
    assert server.base_url not in watch_file.read_text() and "127.0.0.1" not in watch_file.read_text()
    calls = len(server.log)
    report = drift_check_file(prompt_file, watch_file, base_url=server.base_url)
    assert report["verdict"] == "no drift" and report["check"]["seq"] == 2 and len(server.log) == calls + N
    assert report["check"]["shift"]["mean_tv"] == 0
    judge.shift = True
    report = drift_check_file(prompt_file, watch_file, base_url=server.base_url)
    assert report["verdict"] == "drift" and report["alarm_at"] == 3 and len(report["checks"]) == 3
    assert report["check"]["shift"]["mean_tv"] == pytest.approx(
        np.mean(
            [
                0.5
                * sum(
                    abs(distribution(k, False).get(r, 0) - distribution(k, True).get(r, 0)) for r in "12345"
                )
                for k in range(N)
            ]
        )
    )
    watch_file.write_text(watch_file.read_text().replace('"alpha": 0.05', '"alpha": 0.5'))
    with pytest.raises(InputError, match="does not match its hash"):
        drift_check_file(prompt_file, watch_file, base_url=server.base_url)


def test_the_readme_drift_lines_run_as_written(tmp_path, monkeypatch):
    """The README's drift block, copied verbatim (its server URL pointed at a loopback server): a check through the
    library, then one beside production scoring from the exported files; both say no drift."""
    from paths import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = (
        "from geval_core import drift_check, drift_check_file"
        + readme.split("from geval_core import drift_check, drift_check_file", 1)[1].split("```", 1)[0]
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Library("geval.db", seed_examples=False) as library:
        library.freeze(dimension(JudgeSettings(provider="openai", model="m")), name="coh")
        library.import_items("golden", items(range(N)))
    judge = Judge()
    with FaultServer(distribution=judge) as server:
        done = invoke(
            "score",
            "--prompt",
            "coh",
            "--data",
            "golden",
            "--db",
            "geval.db",
            "--base-url",
            server.base_url,
            "--out",
            "out.jsonl",
            "--json",
        )
        assert done.exit_code == 0, done.output
        run_id = json.loads(done.stdout.strip().splitlines()[-1])["run_id"]
        for args in (
            ["drift", "freeze", "coh", "--run", run_id, "--name", "coherence"],
            ["prompts", "export", "coh", "-o", "coherence.json"],
            ["drift", "export", "coherence", "-o", "coherence.drift.json"],
        ):
            assert invoke(*args, "--db", "geval.db").exit_code == 0
        printed: list = []
        exec(
            code.replace("http://127.0.0.1:8000/v1", server.base_url),
            {"print": lambda *args: printed.append(args)},
        )
    ((verdict, e_value, versions),) = printed
    assert verdict == "no drift" and e_value < 20 and versions["now"] == ["fault-model-2024-01-01"]
    with Library("geval.db") as library:
        assert (
            len(library.records("drift-check", library.records("drift", "coherence")[-1]["body"]["id"])) == 1
        )
