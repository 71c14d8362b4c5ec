"""Impossible log-probabilities (NaN, infinite, above 0, more than probability 1 on the ratings) are never a
score: the runner asks again within the attempt budget, then the item carries an error naming what came back."""

from __future__ import annotations

import json
import math
import threading

import pytest
from faultserver import completion
from runner_helpers import WORKED, WORKED_SCORE, close, dimension, setup_library

from geval_core.errors import InvalidReplyError, RetryableJudgeError
from geval_core.export import score_item
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.batch import collect_batch, prepare_batch
from geval_core.scoring.reply_check import check_reply, reply_problem
from geval_core.types import (
    Choice,
    FrozenPrompt,
    JudgeReply,
    JudgeRequest,
    JudgeSettings,
    Position,
    TopLogprob,
)

# What a broken server or adapter could send at the rating position (token -> logprob).
IMPOSSIBLE = {
    "nan": ({"3": math.nan, "4": math.log(0.3)}, "position 1: log-probability nan for token '3'"),
    "positive": ({"3": 0.47, "4": math.log(0.3)}, "position 1: log-probability 0.47 for token '3'"),
    "inf": ({"3": math.inf, "4": math.log(0.3)}, "position 1: log-probability inf for token '3'"),
    "minus_inf": ({"3": -math.inf, "4": math.log(0.3)}, "position 1: log-probability -inf for token '3'"),
    # Every number possible on its own, but 0.9 + 0.7 on the ratings is more than everything.
    "mass": ({"3": math.log(0.9), " 4": math.log(0.7)}, "the allowed ratings carry probability 1.6 in all"),
}


def reply_of(logprobs: dict[str, float], n: int = 1) -> JudgeReply:
    """A reply whose rating position lists `logprobs`; the chosen token is the first one."""
    top = tuple(TopLogprob(t, lp) for t, lp in logprobs.items())
    token, logprob = next(iter(logprobs.items()))
    return JudgeReply(
        tuple(Choice(token.strip(), (Position(token, logprob, top),)) for _ in range(n)), "fake-1"
    )


class ImpossibleJudge(ScriptedJudge):
    """Answers with the given logprobs (as an API would report them) for the first `bad` calls per item."""

    def __init__(self, logprobs: dict[str, float], bad: int = 10**6) -> None:
        super().__init__(lambda request: dict(WORKED))
        self.logprobs, self.bad = logprobs, bad
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def judge(self, request: JudgeRequest) -> JudgeReply:
        key = request.messages[0]["content"]
        with self.lock:
            self.calls[key] = self.calls.get(key, 0) + 1
            bad = self.calls[key] <= self.bad
        return reply_of(self.logprobs, request.n) if bad else super().judge(request)


@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_the_check_names_what_the_judge_sent(case):
    logprobs, said = IMPOSSIBLE[case]
    assert said in reply_problem(reply_of(logprobs), (1, 2, 3, 4, 5))
    with pytest.raises(InvalidReplyError, match="impossible log-probabilities") as info:
        check_reply(reply_of(logprobs), (1, 2, 3, 4, 5))
    assert isinstance(info.value, RetryableJudgeError)  # retried by the runner like a 5xx
    good = Choice("3", (Position("3", math.log(0.6)),))
    several = JudgeReply((good, reply_of(logprobs).choices[0]), "fake-1")
    assert reply_problem(several, (1, 2, 3, 4, 5)).startswith("choice 2, position 1: ")


def test_possible_replies_pass_rounding_included():
    worked = {t: math.log(p) for t, p in WORKED.items()}
    assert reply_problem(reply_of(worked), (1, 2, 3, 4, 5)) is None
    # APIs round: a logprob of +5e-7 and a total a hair above 1 are rounding, not impossible.
    assert reply_problem(reply_of({"3": 5e-7, "4": -30.0}), (1, 2, 3, 4, 5)) is None
    assert reply_problem(reply_of({"3": math.log(0.6000004), "4": math.log(0.4)}), (1, 2, 3, 4, 5)) is None
    # The chosen token listed again among the alternatives is one token, counted once.
    chosen = Position("3", math.log(0.6), (TopLogprob("3", math.log(0.6)), TopLogprob("4", math.log(0.4))))
    assert reply_problem(JudgeReply((Choice("3", (chosen,)),), "fake-1"), (1, 2, 3, 4, 5)) is None
    assert (
        reply_problem(JudgeReply((Choice("4"),), "fake-1"), (1, 2, 3, 4, 5)) is None
    )  # sampling: no numbers


@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_the_runner_asks_again_then_stores_an_error_never_a_score(tmp_path, case):
    logprobs, said = IMPOSSIBLE[case]
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=3)
    judge = ImpossibleJudge(logprobs)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(max_attempts=3, retry_base=0.001))
    rows = library.judgments(run_id)
    assert len(rows) == 3 and [r["score"] for r in rows] == [None] * 3  # impossible probabilities stored: 0
    assert all(r["raw_score"] is None and r["valid_mass"] is None for r in rows)
    assert all(
        r["error"].startswith("InvalidReplyError after 3 attempts") and said in r["error"] for r in rows
    )
    assert sorted(judge.calls.values()) == [3, 3, 3] and summary.judge_calls == 9 and summary.failed == 3
    # Nothing impossible was cached: a new run asks the judge again (and this time it answers sensibly).
    again = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    run_scoring(prompt, items, ImpossibleJudge(logprobs, bad=0), library, again, RunOptions(max_attempts=1))
    assert all(close(r["score"], WORKED_SCORE) and not r["cached"] for r in library.judgments(again))


def test_a_glitch_costs_a_retry_not_the_item(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=4)
    judge = ImpossibleJudge(IMPOSSIBLE["nan"][0], bad=1)
    run_id = library.create_run(prompt.id, dataset["id"], prompt.dimension.judge)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(max_attempts=3, retry_base=0.001))
    assert summary.scored == 4 and summary.failed == 0 and summary.judge_calls == 8
    assert all(close(r["score"], WORKED_SCORE) and r["error"] is None for r in library.judgments(run_id))


@pytest.mark.parametrize("case", ["nan", "positive", "mass"])
def test_score_item_applies_the_same_check(case):
    logprobs, said = IMPOSSIBLE[case]
    prompt = FrozenPrompt("0" * 64, "coherence", 1, dimension(), "")
    with pytest.raises(InvalidReplyError) as info:
        score_item(prompt, {"document": "D.", "summary": "S."}, judge=ImpossibleJudge(logprobs))
    assert said in str(info.value)


def test_a_batch_line_with_impossible_numbers_is_an_error(tmp_path):
    gpt = JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18", top_logprobs=5, max_tokens=3)
    library, prompt, items, dataset = setup_library(tmp_path / "lib.db", count=2, judge=gpt)
    run_id = prepare_batch(library, prompt, dataset["id"], gpt, tmp_path / "in.jsonl")["run_id"]
    lines = []
    for n, text in enumerate((tmp_path / "in.jsonl").read_text().splitlines()):
        request = json.loads(text)
        body = completion(request["body"], WORKED, True, "gpt-4o-mini-2024-07-18")
        if n == 0:  # the provider reports log(p) > 0 for the chosen "3"
            body["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] = 0.47
        lines.append(
            {
                "id": f"b{n}",
                "custom_id": request["custom_id"],
                "error": None,
                "response": {"status_code": 200, "request_id": f"r{n}", "body": body},
            }
        )
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (summary,) = collect_batch(library, [tmp_path / "out.jsonl"])
    rows = {r["item_id"]: r for r in library.judgments(run_id)}
    assert summary.scored == 1 and summary.failed == 1
    assert rows["i000"]["score"] is None and "log-probability 0.47 for token '3'" in rows["i000"]["error"]
    assert close(rows["i001"]["score"], WORKED_SCORE)
