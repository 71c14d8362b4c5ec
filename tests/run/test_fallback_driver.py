"""One driver of the auto-mode fallback (one_item.AutoFallback) for judge_item and the runner's Session: a run,
score_items and score_item give every item the same rating on the same judge, and after the first fallback the
later items of a run go straight to sampling (each score_item call is a run of one item)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict

import pytest
from runner_helpers import setup_library, worked_judge

from geval_core.export import score_item, score_items
from geval_core.judgment import Judgment
from geval_core.providers.scripted import ScriptedJudge
from geval_core.run import RunOptions, run_scoring
from geval_core.run.one_item import AutoFallback
from geval_core.types import Choice, JudgeReply, JudgeRequest, JudgeSettings

AUTO = JudgeSettings(mode="auto", n=3, temperature=0.7)
COUNT = 6
# What a judgment says about the item's rating; tokens and latency say what the road paid, compared apart.
RATING = (
    "score",
    "raw_score",
    "top_rating",
    "first_rating",
    "distribution",
    "valid_mass",
    "parsed_share",
    "replies",
    "parsed",
    "unparsed",
    "differs",
    "mode",
    "fallback",
    "model_version",
    "error",
    "note",
    "server",
)


class ItemSampledJudge(ScriptedJudge):
    """No log-probabilities ever; sampled replies that depend on the item, so items score differently."""

    def judge(self, request: JudgeRequest) -> JudgeReply:
        reply = super().judge(request)  # records the request
        digest = hashlib.sha256(request.messages[-1]["content"].encode()).digest()
        texts = [str(1 + digest[k] % 5) for k in range(request.n)]
        return JudgeReply(tuple(Choice(t) for t in texts), reply.model_version, reply.usage)

    def asked(self, logprobs: bool) -> int:
        return sum(r.logprobs == logprobs for r in self.requests)


def rating(judgment: Judgment | dict) -> dict:
    data = asdict(judgment) if isinstance(judgment, Judgment) else dict(judgment)
    return {k: data[k] for k in RATING}


@pytest.fixture
def roads(tmp_path):
    """The same items and judge through a run, one score_items call and score_item item by item."""
    library, prompt, items, dataset = setup_library(tmp_path / "fallback.db", count=COUNT, judge=AUTO)
    run_id = library.create_run(prompt.id, dataset["id"], AUTO)
    judges = {"run": ItemSampledJudge(), "items": ItemSampledJudge(), "item": ItemSampledJudge()}
    run_scoring(prompt, items, judges["run"], library, run_id, RunOptions(concurrency=1, use_cache=False))
    stored = {row["item_id"]: row for row in library.judgments(run_id)}
    rows = [{"id": item.id, **item.fields} for item in items]
    many = {
        j.item_id: j for j in score_items(prompt, rows, judge=judges["items"], concurrency=1, id_field="id")
    }
    one = {item.id: score_item(prompt, dict(item.fields), judge=judges["item"]) for item in items}
    library.close()
    return items, stored, many, one, judges


def test_a_run_score_items_and_score_item_give_every_item_the_same_rating(roads):
    items, stored, many, one, _ = roads
    scores = set()
    for item in items:
        assert rating(stored[item.id]) == rating(many[item.id]) == rating(one[item.id]), item.id
        assert stored[item.id]["mode"] == "sampling" and stored[item.id]["fallback"] is True
        scores.add(stored[item.id]["score"])
    assert len(scores) > 1  # the items really differ: agreeing is not a constant


def test_after_the_first_fallback_later_items_of_a_run_go_straight_to_sampling(roads):
    items, stored, many, one, judges = roads
    # The run keeps two calls queued per call in flight: those sent before the first fallback fall back alone.
    assert judges["run"].asked(logprobs=True) == 2 and judges["run"].asked(logprobs=False) == COUNT
    paid_both = one[items[0].id].output_tokens
    assert [stored[i.id]["output_tokens"] for i in items] == [paid_both] * 2 + [paid_both - 3] * (COUNT - 2)
    # score_item, and score_items row by row, judge a run of one item: each pays the logprobs request first.
    for road in ("items", "item"):
        assert judges[road].asked(logprobs=True) == COUNT and judges[road].asked(logprobs=False) == COUNT
    assert all(many[i.id].output_tokens == one[i.id].output_tokens == paid_both for i in items)


def test_a_judge_with_logprobs_never_falls_back_on_any_road(tmp_path):
    library, prompt, items, dataset = setup_library(tmp_path / "logprobs.db", count=3, judge=AUTO)
    run_id = library.create_run(prompt.id, dataset["id"], AUTO)
    run_scoring(prompt, items, worked_judge(), library, run_id, RunOptions(concurrency=1, use_cache=False))
    stored = library.judgments(run_id)
    library.close()
    scored = score_items(prompt, [dict(i.fields) for i in items], judge=worked_judge(), concurrency=1)
    for row, judgment in zip(stored, scored, strict=True):
        assert rating(row) == rating(judgment)
        assert row["mode"] == "logprobs" and row["fallback"] is False
        assert row["score"] == pytest.approx(3.2631578947)  # the worked example, renormalised


def test_the_driver_rule():
    auto = AutoFallback("auto")
    assert auto.first() == ("logprobs", False)
    assert auto.after_no_logprobs("sampling") is False  # only a logprobs request falls back
    assert auto.after_no_logprobs("logprobs") is True
    assert auto.first() == ("sampling", True)
    logprobs = AutoFallback("logprobs")
    assert logprobs.after_no_logprobs("logprobs") is False and logprobs.first() == ("logprobs", False)
    assert AutoFallback("sampling").first() == ("sampling", False)
