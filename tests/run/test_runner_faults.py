"""run_scoring with the real OpenAI provider against the loopback fault server."""

from __future__ import annotations

from collections import Counter, defaultdict

import openai  # noqa: F401 -- a hard dependency: missing, this fails instead of skipping
from faultserver import FaultServer
from runner_helpers import WORKED_RAW, WORKED_SCORE, close, setup_library

from geval_core.providers import get_judge
from geval_core.run import RunOptions, run_scoring
from geval_core.types import JudgeSettings

KEY = "sk-test-FAULTS0000000000000000000000000000"


def settings_for(server: FaultServer, **changes) -> JudgeSettings:
    return JudgeSettings(provider="openai", model="fault-model", base_url=server.base_url, **changes)


def item_of(body: dict) -> str:
    """'i003' from the rendered prompt 'Document number 3.'."""
    text = body["messages"][0]["content"]
    number = int(text.split("Document number ")[1].split(".")[0])
    return f"i{number:03d}"


def per_item_script(plan: dict[str, list[str]]):
    """Each item answers with its own list of behaviours, then "ok"; a trailing "forever" repeats the last."""
    seen: Counter = Counter()

    def script(index: int, body: dict) -> str:
        item = item_of(body)
        seen[item] += 1
        steps = plan.get(item, [])
        if steps[-1:] == ["forever"]:
            steps = steps[:-1]
            return steps[min(seen[item], len(steps)) - 1]
        return steps[seen[item] - 1] if seen[item] <= len(steps) else "ok"

    return script


def requests_by_item(server: FaultServer) -> dict[str, list[str]]:
    out = defaultdict(list)
    for behaviour, body in server.log:
        out[item_of(body)].append(behaviour)
    return dict(out)


def test_every_fault_ends_in_a_score_or_an_error_and_retries_stay_bounded(tmp_path):
    plan = {
        "i000": ["429", "429"],  # rate limited twice, Retry-After honoured, then scored
        "i001": ["500"],  # one server error, then scored
        "i002": ["hang"],  # times out once, then scored
        "i003": ["malformed"],  # a body that is not JSON: one broken answer, asked again, then scored
        "i004": ["500", "forever"],  # never recovers: exactly max_attempts requests
    }
    with FaultServer(per_item_script(plan), hang_s=3.0, retry_after="0.05") as server:
        library, prompt, items, dataset = setup_library(
            tmp_path / "lib.db", count=10, judge=settings_for(server)
        )
        judge = get_judge(settings_for(server), api_key=KEY, timeout=0.5)
        run_id = library.create_run(prompt.id, dataset["id"], settings_for(server))
        summary = run_scoring(
            prompt, items, judge, library, run_id, RunOptions(concurrency=4, max_attempts=3, retry_base=0.05)
        )
        by_item = requests_by_item(server)
    rows = {r["item_id"]: r for r in library.judgments(run_id)}
    assert summary.status == "done" and len(rows) == 10
    assert by_item["i000"] == ["429", "429", "ok"] and by_item["i001"] == ["500", "ok"]
    assert by_item["i002"] == ["hang", "ok"] and by_item["i003"] == ["malformed", "ok"]
    assert by_item["i004"] == ["500", "500", "500"]
    assert all(by_item[f"i{k:03d}"] == ["ok"] for k in range(5, 10))
    assert server.count == 3 + 2 + 2 + 2 + 3 + 5 == summary.judge_calls
    for item in ("i000", "i001", "i002", "i003", *(f"i{k:03d}" for k in range(5, 10))):
        row = rows[item]
        assert (
            row["error"] is None and close(row["score"], WORKED_SCORE) and close(row["raw_score"], WORKED_RAW)
        )
        assert row["model_version"] == "fault-model-2024-01-01" and row["input_tokens"] > 0
    assert (
        rows["i004"]["error"].startswith("RetryableJudgeError after 3 attempts")
        and "500" in rows["i004"]["error"]
    )
    assert summary.failed == 1 and summary.scored == 9


def test_a_reply_that_lost_its_logprobs_is_asked_again_but_a_judge_without_any_is_an_error(tmp_path):
    plan = {"i002": ["nologprobs"]}  # the judge gave logprobs for i000 and i001: this reply lost them
    with FaultServer(per_item_script(plan)) as server:
        library, prompt, items, dataset = setup_library(
            tmp_path / "lib.db", count=4, judge=settings_for(server)
        )
        judge = get_judge(settings_for(server), api_key=KEY, timeout=5)
        summary = run_scoring(
            prompt,
            items,
            judge,
            library,
            library.create_run(prompt.id, dataset["id"], settings_for(server)),
            RunOptions(concurrency=1, retry_base=0.01),
        )
        assert requests_by_item(server)["i002"] == ["nologprobs", "ok"] and summary.scored == 4
    with FaultServer(per_item_script({"i000": ["nologprobs", "forever"]})) as server:
        library, prompt, items, dataset = setup_library(
            tmp_path / "other.db", count=1, judge=settings_for(server)
        )
        judge = get_judge(settings_for(server), api_key=KEY, timeout=5)
        run_id = library.create_run(prompt.id, dataset["id"], settings_for(server))
        run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=1))
        assert server.count == 1  # never gave logprobs: not retried, a clear error
    [row] = library.judgments(run_id)
    assert row["error"].startswith("LogprobsUnavailableError") and "sampling" in row["error"]


def test_auto_mode_falls_back_on_a_server_without_logprobs(tmp_path):
    def script(index: int, body: dict) -> str:
        return "nologprobs" if body.get("logprobs") else "ok"

    with FaultServer(script) as server:
        settings = settings_for(server, mode="auto", n=4, temperature=1.0)
        library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=6, judge=settings)
        judge = get_judge(settings, api_key=KEY, timeout=5)
        run_id = library.create_run(prompt.id, dataset["id"], settings)
        summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(concurrency=2))
        asked = [(body.get("logprobs", False), body["n"]) for _, body in server.log]
    assert summary.fallbacks == 6 and summary.failed == 0
    # Only the items in flight before the first refusal asked for logprobs; all six sampled.
    assert 1 <= asked.count((True, 4)) <= 4 and asked.count((False, 4)) == 6
    for row in library.judgments(run_id):
        # four "samples" of the worked example at quantiles 1/8, 3/8, 5/8, 7/8: 3, 3, 4, 4
        assert row["fallback"] is True and row["mode"] == "sampling"
        assert row["replies"] == ["3", "3", "4", "4"] and close(row["score"], 3.5)


def test_a_second_run_sends_no_request(tmp_path):
    with FaultServer() as server:
        library, prompt, items, dataset = setup_library(
            tmp_path / "lib.db", count=8, judge=settings_for(server)
        )
        judge = get_judge(settings_for(server), api_key=KEY, timeout=5)
        first = run_scoring(
            prompt, items, judge, library, library.create_run(prompt.id, dataset["id"], settings_for(server))
        )
        assert server.count == 8 and first.judge_calls == 8
        run_id = library.create_run(prompt.id, dataset["id"], settings_for(server))
        second = run_scoring(prompt, items, judge, library, run_id)
        assert server.count == 8 and second.judge_calls == 0 and second.cached == 8
    assert all(r["cached"] and close(r["score"], WORKED_SCORE) for r in library.judgments(run_id))
