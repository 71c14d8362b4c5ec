"""A batch output file is hostile input: lines for a live run, for another batch's run, for items or requests a
run never sent, or repeated, refuse the whole collect with the count and the reason; nothing is stored."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from faultserver import completion
from runner_helpers import setup_library, worked_judge

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.run import run_scoring
from geval_core.run.batch import collect_batch, prepare_batch
from geval_core.types import JudgeSettings

GPT = JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18", top_logprobs=5, max_tokens=3)


def answered(request_line: dict, custom_id: str | None = None) -> dict:
    body = completion(request_line["body"], {"5": 1.0}, True, "gpt-4o-mini-2024-07-18")
    return {
        "id": "batch_req",
        "custom_id": custom_id or request_line["custom_id"],
        "response": {"status_code": 200, "request_id": "r", "body": body},
        "error": None,
    }


@pytest.fixture
def prepared(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3, judge=GPT)
    run_id = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "in.jsonl")["run_id"]
    requests = [json.loads(line) for line in (tmp_path / "in.jsonl").read_text().splitlines()]
    yield library, prompt, items, dataset, run_id, requests
    library.close()


def write(path, lines: list[dict]):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_duplicated_unknown_and_never_sent_lines_are_refused_with_counts(prepared, tmp_path):
    library, _, _, _, run_id, requests = prepared
    lines = [answered(r) for r in requests]
    lines += [
        answered(requests[0]),
        answered(requests[0], f"{run_id}:ghost-item:0"),
        answered(requests[1], requests[1]["custom_id"][:-1] + "7"),
    ]
    path = write(tmp_path / "forged.jsonl", lines)
    with pytest.raises(InputError) as caught:
        collect_batch(library, [path])
    message = str(caught.value)
    assert message.startswith("refused 3 of 6 batch output lines, nothing was stored:")
    assert f"1 for a request answered twice (duplicated custom_id) ({path}:4)" in message
    assert f"1 for an item run {run_id} does not have ({path}:5)" in message
    assert f"1 for a request run {run_id} never sent (replica 7) ({path}:6)" in message
    assert "ghost-item" not in json.dumps(library.judgments(run_id)) and library.judgments(run_id) == []


def test_a_file_naming_a_live_run_is_refused_and_the_run_keeps_its_state(prepared, tmp_path):
    library, prompt, items, dataset, batch_run, requests = prepared
    live = library.create_run(prompt.id, dataset["id"], GPT)
    judge = worked_judge()
    judge.provider = "openai"
    run_scoring(prompt, items[:1], judge, library, live)
    before = library.judgments(live), library.get_run(live).status
    forged = [answered(r, r["custom_id"].replace(batch_run, live)) for r in requests]
    with pytest.raises(InputError, match=f"3 for run {live}, which was not prepared or submitted as a batch"):
        collect_batch(library, [write(tmp_path / "live.jsonl", forged)])
    assert (library.judgments(live), library.get_run(live).status) == before


def test_a_batch_collects_only_its_own_run(prepared, tmp_path):
    library, prompt, _, dataset, run_id, requests = prepared
    other = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "other.jsonl")["run_id"]
    lines = [answered(r, r["custom_id"].replace(run_id, other)) for r in requests]
    path = write(tmp_path / "other-out.jsonl", lines)
    with pytest.raises(InputError, match=f"another run than the batch's own \\({other}, not {run_id}\\)"):
        collect_batch(library, [path], expected_run=run_id)
    (summary,) = collect_batch(library, [path])  # named as what it is, the other batch takes its own file
    assert summary.run_id == other and summary.scored == 3


def test_geval_batch_collect_says_why_and_exits_1(prepared, tmp_path):
    library, *_, requests = prepared
    path = write(tmp_path / "dup.jsonl", [answered(requests[0]), answered(requests[0])])
    done = CliRunner().invoke(cli, ["batch", "collect", str(path), "--db", str(library.path)])
    assert done.exit_code == 1 and "refused 1 of 2 batch output lines" in done.output
    assert "Traceback" not in done.output
