"""Batch API files: the request file `prepare` writes and the output files `collect` scores."""

from __future__ import annotations

import hashlib
import json
import math
import random

import openai  # noqa: F401 -- a hard dependency: missing, this fails instead of skipping
import pytest
from click.testing import CliRunner
from faultserver import completion
from runner_helpers import WORKED, WORKED_RAW, WORKED_SCORE, close, setup_library, worked_judge

from geval_core.cli import cli
from geval_core.prompts import messages
from geval_core.run import RunOptions, run_scoring
from geval_core.run.batch import collect_batch, parse_custom_id, prepare_batch
from geval_core.run.calls import prefix_key
from geval_core.types import JudgeSettings

GPT = JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18", top_logprobs=5, max_tokens=3)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def output_line(
    request_line: dict, body: dict | None = None, status: int = 200, error: dict | None = None
) -> dict:
    """One line of the provider's output file, in the documented shape."""
    response = None
    if error is None:
        response = {
            "status_code": status,
            "request_id": "req_" + request_line["custom_id"][-6:],
            "body": body,
        }
    return {
        "id": "batch_req_" + str(abs(hash(request_line["custom_id"]))),
        "custom_id": request_line["custom_id"],
        "response": response,
        "error": error,
    }


def test_prepare_writes_one_documented_line_per_item(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3, judge=GPT)
    result = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "in.jsonl")
    lines = read_jsonl(tmp_path / "in.jsonl")
    assert result["requests"] == 3 and len(lines) == 3
    run_id = result["run_id"]
    for line, item in zip(lines, items, strict=True):
        assert line["custom_id"] == f"{run_id}:{item.id}:0"
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert line["body"] == {
            "model": "gpt-4o-mini-2024-07-18",
            "messages": list(messages(prompt, item)),
            "temperature": 0.0,
            "max_tokens": 3,
            "n": 1,
            "logprobs": True,
            "top_logprobs": 5,
            "prompt_cache_key": prefix_key(prompt, item),
        }  # the Batch API routes by it too
    run = library.get_run(run_id)
    assert run.status == "running" and run.extra["batch_requests"] == 3 and run.judge.model == GPT.model


def test_prepare_sampling_writes_a_line_per_replica(tmp_path):
    settings = JudgeSettings(
        provider="openai", model="gpt-4o-mini", mode="sampling", n=3, temperature=1.0, seed=7
    )
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=2, judge=settings)
    prepare_batch(library, prompt, dataset["id"], settings, tmp_path / "in.jsonl")
    lines = read_jsonl(tmp_path / "in.jsonl")
    assert [parse_custom_id(x["custom_id"])[1:] for x in lines] == [
        ("i000", 0),
        ("i000", 1),
        ("i000", 2),
        ("i001", 0),
        ("i001", 1),
        ("i001", 2),
    ]
    assert [x["body"]["seed"] for x in lines] == [7, 8, 9, 7, 8, 9]
    assert all(
        x["body"]["n"] == 1 and "logprobs" not in x["body"] and x["body"]["temperature"] == 1.0 for x in lines
    )


def test_prepare_refuses_a_judge_without_a_batch_api(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=1)
    with pytest.raises(Exception, match="OpenAI Batch API"):
        prepare_batch(library, prompt, dataset["id"], prompt.dimension.judge, tmp_path / "in.jsonl")


def test_custom_id_keeps_colons_in_item_ids():
    assert parse_custom_id("20250101-000000-abcdef:doc:7:a:2") == ("20250101-000000-abcdef", "doc:7:a", 2)
    with pytest.raises(ValueError):
        parse_custom_id("no-replica")


def test_collect_scores_like_a_live_run_and_records_failures(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=5, judge=GPT)
    run_id = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "in.jsonl")["run_id"]
    requests = read_jsonl(tmp_path / "in.jsonl")
    out = [
        output_line(r, completion(r["body"], WORKED, True, "gpt-4o-mini-2024-07-18")) for r in requests[:3]
    ]
    out.append(output_line(requests[3], error={"code": "batch_expired", "message": "not completed in time"}))
    out.append(output_line(requests[4], {"error": {"message": "The server had an error"}}, status=500))
    random.Random(3).shuffle(out)  # the provider writes lines in any order
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))
    (summary,) = collect_batch(library, [tmp_path / "out.jsonl"])
    assert summary.status == "done" and summary.scored == 3 and summary.failed == 2
    rows = {r["item_id"]: r for r in library.judgments(run_id)}
    for item in ("i000", "i001", "i002"):
        row = rows[item]
        assert (
            close(row["score"], WORKED_SCORE)
            and close(row["raw_score"], WORKED_RAW)
            and row["top_rating"] == 3
        )
        assert close(row["valid_mass"], 0.95) and row["model_version"] == "gpt-4o-mini-2024-07-18"
    assert rows["i003"]["error"] == "JudgeError: batch error batch_expired: not completed in time"
    assert rows["i004"]["error"] == "JudgeError: batch request answered 500: The server had an error"
    assert library.run_servers(run_id) == {
        "openai"
    }  # a file's run names OpenAI's own Batch API as its server
    # The same items scored live by a judge giving the same distribution: identical judgments.
    live_id = library.create_run(prompt.id, dataset["id"], GPT)
    run_scoring(prompt, items[:3], worked_judge(), library, live_id, RunOptions(use_cache=False))
    for live in library.judgments(live_id):
        batch = rows[live["item_id"]]
        assert live["score"] == batch["score"] and live["distribution"] == batch["distribution"]
    run = library.get_run(run_id)
    assert run.status == "done" and run.input_tokens > 0
    # Half the live price: $0.15 in, $0.60 out per million for gpt-4o-mini.
    assert math.isclose(run.cost_usd, (run.input_tokens * 0.15 + run.output_tokens * 0.60) / 1e6 / 2)


def test_collect_in_parts_and_again_never_duplicates(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=4, judge=GPT)
    run_id = prepare_batch(library, prompt, dataset["id"], GPT, tmp_path / "in.jsonl")["run_id"]
    requests = read_jsonl(tmp_path / "in.jsonl")
    lines = [
        json.dumps(output_line(r, completion(r["body"], {"5": 1.0}, True, "m"))) + "\n" for r in requests
    ]
    (tmp_path / "part1.jsonl").write_text("".join(lines[:2]))
    (tmp_path / "part2.jsonl").write_text("".join(lines[2:]))
    (first,) = collect_batch(library, [tmp_path / "part1.jsonl"])
    assert first.status == "running" and library.get_run(run_id).extra["batch_missing"] == 2
    (second,) = collect_batch(library, [tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"])
    assert second.status == "done" and second.skipped == 2 and second.judged == 2
    rows = library.judgments(run_id)
    assert [r["item_id"] for r in rows] == [i.id for i in items] and all(r["score"] == 5.0 for r in rows)
    assert {r["source"] for r in rows} == {
        "batch:" + hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        for name in ("part1.jsonl", "part2.jsonl")
    }
    # A file's replies score its run only: a live run of the same requests asks the judge, never the file.
    judge = worked_judge()
    judge.provider = "openai"  # the cache key names the provider that answered
    run_scoring(prompt, items, judge, library, library.create_run(prompt.id, dataset["id"], GPT))
    assert len(judge.requests) == len(items)


def test_collect_sampling_merges_the_replicas_of_an_item(tmp_path):
    settings = JudgeSettings(provider="openai", model="gpt-4o-mini", mode="sampling", n=4, temperature=1.0)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=1, judge=settings)
    run_id = prepare_batch(library, prompt, dataset["id"], settings, tmp_path / "in.jsonl")["run_id"]
    out = []
    for request, text in zip(read_jsonl(tmp_path / "in.jsonl"), ["4", "3", "4", "Four"], strict=True):
        body = completion(request["body"], {text: 1.0}, False, "gpt-4o-mini-2024-07-18")
        out.append(json.dumps(output_line(request, body)) + "\n")
    (tmp_path / "out.jsonl").write_text("".join(reversed(out)))
    collect_batch(library, [tmp_path / "out.jsonl"])
    (row,) = library.judgments(run_id)
    assert row["replies"] == ["4", "3", "4", "Four"] and row["parsed"] == 3 and row["unparsed"] == 1
    assert close(row["score"], 11 / 3) and row["mode"] == "sampling"


def test_batch_commands(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=2, judge=GPT)
    db = str(tmp_path / "lib.db")
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "batch",
            "prepare",
            "--prompt",
            prompt.label,
            "--data",
            "tiny",
            "--db",
            db,
            "--out",
            str(tmp_path / "in.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    requests = read_jsonl(tmp_path / "in.jsonl")
    assert len(requests) == 2
    out = [json.dumps(output_line(r, completion(r["body"], WORKED, True, "m"))) + "\n" for r in requests]
    (tmp_path / "out.jsonl").write_text("".join(out))
    result = runner.invoke(
        cli,
        [
            "batch",
            "collect",
            str(tmp_path / "out.jsonl"),
            "--db",
            db,
            "--out",
            str(tmp_path / "results.jsonl"),
        ],
    )
    assert result.exit_code == 0, result.output
    results = read_jsonl(tmp_path / "results.jsonl")
    assert [r["id"] for r in results] == ["i000", "i001"] and all(
        close(r["score"], WORKED_SCORE) for r in results
    )
    bad = runner.invoke(
        cli,
        [
            "batch",
            "prepare",
            "--prompt",
            prompt.label,
            "--data",
            "tiny",
            "--db",
            db,
            "--judge",
            "local",
            "--out",
            str(tmp_path / "x.jsonl"),
        ],
    )
    assert bad.exit_code == 1 and "OpenAI Batch API" in bad.output
