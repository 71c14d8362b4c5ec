"""Issue 11: the batch engines end to end (submit -> status -> collect) through the real SDKs against the
loopback Files + Batches and Gemini Batch servers; `geval score` with a gpt-5-style judge; `geval probe`."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from judge_fakes import FakeJudges
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.diagnostics.judge_probe import latest_probe, split_numbers
from geval_core.providers.capabilities import probe_findings
from geval_core.types import JudgeSettings

GPT = JudgeSettings(provider="openai", model="gpt-4o-mini", top_logprobs=5, max_tokens=3)
GEMINI = JudgeSettings(provider="gemini", model="gemini-2.5-flash", top_logprobs=5, max_tokens=3)


@pytest.fixture(scope="module")
def fake():
    server = FakeJudges()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0000")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-batch-0000")


def geval(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def scores(library, run_id: str) -> dict[str, float | None]:
    return {r["item_id"]: r["score"] for r in library.judgments(run_id)}


@pytest.mark.parametrize(("settings", "url"), [(GPT, "{}/v1"), (GEMINI, "{}")], ids=["openai", "gemini"])
def test_batch_submit_status_collect_scores_like_a_live_run(tmp_path, fake, settings, url):
    db = str(tmp_path / "lib.db")
    library, prompt, items, _ = setup_library(db, count=4, judge=settings)
    base = ["--db", db, "--base-url", url.format(fake.url)]
    code, out, err = geval("batch", "submit", "--prompt", prompt.id, "--data", "tiny", "--json", *base)
    assert code == 0, err
    submitted = json.loads(out)
    assert submitted["requests"] == 4 and submitted["status"] and submitted["estimated_usd"] is not None
    batch_id, run_id = submitted["batch_id"], submitted["run_id"]
    code, out, err = geval("batch", "status", batch_id, "--json", *base)
    status = json.loads(out)
    assert code == 0 and (status["batch_id"], status["run_id"], status["done"]) == (batch_id, run_id, False)
    code, out, err = geval("batch", "collect", batch_id, "--json", *base)
    collected = json.loads(out)
    assert code == 0 and collected["collected"] and collected["summary"]["scored"] == 4, err
    again = json.loads(geval("batch", "collect", batch_id, "--json", *base)[1])
    assert again["summary"]["skipped"] == 4 and again["summary"]["judged"] == 0  # idempotent
    code, _, err = geval(
        "score",
        "--prompt",
        prompt.id,
        "--data",
        "tiny",
        "--new-run",
        "--quiet",
        "--out",
        str(tmp_path / "live.jsonl"),
        *base,
    )
    assert code == 0, err
    live = [json.loads(line) for line in (tmp_path / "live.jsonl").read_text().splitlines()]
    batch = scores(library, run_id)
    assert {line["id"]: line["score"] for line in live} == batch and None not in batch.values()
    assert library.get_run(run_id).status == "done"


def test_gpt5_judge_scores_in_sampling_mode_and_refuses_logprobs_before_the_run(tmp_path, fake):
    db = str(tmp_path / "lib.db")
    library, prompt, _, _ = setup_library(db, count=3, judge=GPT)
    args = [
        "score",
        "--prompt",
        prompt.id,
        "--data",
        "tiny",
        "--db",
        db,
        "--judge",
        "openai:gpt-5-mini",
        "--quiet",
    ]
    code, _, err = geval(*args, "--mode", "logprobs")
    assert code == 1 and "this judge gives no log-probabilities: freeze in sampling mode" in err
    assert library.list_runs() == []  # refused before a run was recorded, and before any call
    code, out, err = geval(
        *args, "--mode", "sampling", "--n", "2", "--temperature", "1", "--base-url", f"{fake.url}/v1"
    )
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3 and all(line["score"] is not None and line["mode"] == "sampling" for line in lines)


def test_probe_reports_the_facts_and_the_library_keeps_them(tmp_path, fake):
    db = str(tmp_path / "lib.db")
    code, out, err = geval(
        "probe", "--judge", "openai:gpt-5-mini", "--base-url", f"{fake.url}/v1", "--db", db, "--json"
    )
    assert code == 0, err
    facts = json.loads(out)
    assert facts["reachable"] and facts["logprobs"] is False and facts["n_honoured"] is True
    assert facts["model_version"] == "gpt-5-mini-2026-01-01" and facts["latency_s"] >= 0
    code, out, _ = geval(
        "probe", "--judge", "gemini:gemini-2.5-flash", "--base-url", fake.url, "--db", db, "--json"
    )
    facts = json.loads(out)
    assert (facts["logprobs"], facts["top_logprobs_max"], facts["single_token_ratings"]) == (True, 3, True)
    from prompt_library import open_library

    with open_library(db) as library:
        kept = latest_probe(
            library, JudgeSettings(provider="gemini", model="gemini-2.5-flash", base_url=fake.url)
        )
    assert kept["logprobs"] is True and kept["probed_at"] == facts["probed_at"]


def test_probe_of_a_judge_without_logprobs_stops_a_logprobs_run(tmp_path, fake):
    db = str(tmp_path / "lib.db")
    library, prompt, _, _ = setup_library(db, count=2, judge=GPT)
    assert geval("probe", "--judge", "openai:reasoner-2", "--base-url", f"{fake.url}/v1", "--db", db)[0] == 0
    code, _, err = geval(
        "score",
        "--prompt",
        prompt.id,
        "--data",
        "tiny",
        "--db",
        db,
        "--judge",
        "openai:reasoner-2",
        "--base-url",
        f"{fake.url}/v1",
        "--quiet",
    )
    assert code == 1 and "this judge gives no log-probabilities" in err


def test_split_numbers_names_ratings_written_over_several_tokens():
    assert split_numbers(["1", " 2", " 1", "0", " 11"]) == ({"10"}, {"1", "2", "11"})
    assert probe_findings({"split_ratings": ["10"]}, JudgeSettings())[0].startswith("this judge splits 10")


def test_a_submit_that_never_reaches_the_engine_leaves_a_failed_run_not_a_running_one(tmp_path):
    from conftest import free_port

    from prompt_library import Library

    db = str(tmp_path / "lib.db")
    _, prompt, _, _ = setup_library(db, count=2, judge=GPT)
    code, out, err = geval(
        "batch",
        "submit",
        "--prompt",
        prompt.id,
        "--data",
        "tiny",
        "--db",
        db,
        "--base-url",
        f"http://127.0.0.1:{free_port()}/v1",
    )
    assert code == 1 and out == "" and "could not reach the batch engine at http://127.0.0.1:" in err
    [run] = Library(db).list_runs()
    assert run.status == "failed" and run.finished_at


def test_a_panel_is_sent_as_one_batch_per_member_and_panel_score_reuses_them(tmp_path, fake):
    from geval_core.run.panel import freeze_panel
    from prompt_library import Library

    db = str(tmp_path / "lib.db")
    library, prompt, items, _ = setup_library(db, count=4, judge=GPT)
    other = library.freeze(
        replace(prompt.dimension, definition="Another wording of coherence."), name="coherence-b"
    ).prompt
    freeze_panel(library, "jury", [prompt, other], "pooled")
    url = f"{fake.url}/v1"
    code, out, err = geval(
        "batch",
        "submit-panel",
        "jury",
        "--data",
        "tiny",
        "--db",
        db,
        "--json",
        "--member-base-url",
        f"{prompt.label}={url}",
        "--member-base-url",
        f"{other.label}={url}",
    )
    assert code == 0, err
    sent = json.loads(out)["batches"]
    assert [b["prompt"] for b in sent] == [prompt.label, other.label] and all(
        b["requests"] == 4 for b in sent
    )
    for batch in sent:
        geval(
            "batch", "status", batch["batch_id"], "--db", db, "--base-url", url, "--json"
        )  # the fake finishes it
        collected = json.loads(
            geval("batch", "collect", batch["batch_id"], "--db", db, "--base-url", url, "--json")[1]
        )
        assert collected["collected"] and collected["summary"]["scored"] == 4
    code, out, err = geval(
        "panel",
        "score",
        "jury",
        "--data",
        "tiny",
        "--db",
        db,
        "--json",
        "--member-base-url",
        f"{prompt.label}={url}",
        "--member-base-url",
        f"{other.label}={url}",
    )
    assert code == 0, err
    summary = json.loads(err.strip().splitlines()[-1])
    assert [m["judge_calls"] for m in summary["member_runs"]] == [
        0,
        0,
    ]  # both members answered by their batches
    assert {m["run"] for m in summary["member_runs"]} == {b["run_id"] for b in sent}
    with Library(db) as check:
        assert all(check.get_run(b["run_id"]).status == "done" for b in sent)
