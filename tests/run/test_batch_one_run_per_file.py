"""One batch output file holds one batch run (issue 38): a file whose lines name two runs refuses the whole collect,
naming the file, the line and both runs, before anything is written into either run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from faultserver import completion
from runner_helpers import setup_library

from geval_core.cli import cli
from geval_core.errors import InputError
from geval_core.run.batch import collect_batch, prepare_batch
from geval_core.types import JudgeSettings

GPT = JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18", top_logprobs=5, max_tokens=3)


def answered(request_line: dict) -> dict:
    body = completion(request_line["body"], {"4": 1.0}, True, "gpt-4o-mini-2024-07-18")
    return {
        "id": "batch_req",
        "custom_id": request_line["custom_id"],
        "response": {"status_code": 200, "request_id": "r", "body": body},
        "error": None,
    }


def requests_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path, lines: list[dict]):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def two_batches(tmp_path):
    """Two prepared batch runs of 3 items each, and every request line of each."""
    library, prompt, _, dataset = setup_library(tmp_path / "lib.db", count=3, judge=GPT)
    one = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "one.jsonl")["run_id"]
    two = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "two.jsonl")["run_id"]
    yield library, one, two, requests_of(tmp_path / "one.jsonl"), requests_of(tmp_path / "two.jsonl")
    library.close()


def stored(library, *runs: str) -> list[tuple[str, int, str]]:
    return [(run, len(library.judgments(run)), library.get_run(run).status) for run in runs]


def test_a_file_naming_two_batch_runs_is_refused_whole(two_batches, tmp_path):
    library, one, two, first, second = two_batches
    before = stored(library, one, two)
    # Every line is a real answer to a request its run sent: only the mixture is wrong.
    path = write(tmp_path / "mixed.jsonl", [answered(r) for r in first] + [answered(r) for r in second])
    with pytest.raises(InputError) as caught:
        collect_batch(library, [path])
    message = str(caught.value)
    assert message.startswith("refused 3 of 6 batch output lines, nothing was stored:"), message
    assert (
        f"3 for a second batch run in {path} (one file holds one batch run: line 1 names run {one}, these "
        f"name run {two}) ({path}:4, {path}:5, {path}:6)"
    ) in message
    assert stored(library, one, two) == before == [(one, 0, "running"), (two, 0, "running")]


def test_each_run_in_its_own_file_is_collected(two_batches, tmp_path):
    library, one, two, first, second = two_batches
    files = [
        write(tmp_path / "out-one.jsonl", [answered(r) for r in first]),
        write(tmp_path / "out-two.jsonl", [answered(r) for r in second]),
    ]
    summaries = collect_batch(library, files)
    assert sorted((s.run_id, s.scored) for s in summaries) == sorted([(one, 3), (two, 3)])
    assert stored(library, one, two) == [(one, 3, "done"), (two, 3, "done")]


def test_geval_batch_collect_refuses_the_mixed_file_and_exits_1(two_batches, tmp_path):
    library, one, two, first, second = two_batches
    path = write(tmp_path / "mixed.jsonl", [answered(second[0])] + [answered(r) for r in first])
    done = CliRunner().invoke(cli, ["batch", "collect", str(path), "--db", str(library.path)])
    assert done.exit_code == 1, done.output
    assert f"a second batch run in {path}" in done.output and f"line 1 names run {two}" in done.output
    assert f"these name run {one}" in done.output and "Traceback" not in done.output
    assert stored(library, one, two) == [(one, 0, "running"), (two, 0, "running")]
