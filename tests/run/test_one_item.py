"""One road from a reply to a Judgment: the runner's session, judge_item, the stability check's judge_one and
the production snippet's score_item give the same Judgment for the same judge and item, auto-mode fallback,
retries and the tokens of the first call included."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest
from runner_helpers import FlakyJudge, NoLogprobsJudge, setup_library, worked_judge

from geval_core.diagnostics.stability import judge_one
from geval_core.errors import JudgeError
from geval_core.export import score_item
from geval_core.judgment import Judgment
from geval_core.run import RunOptions, run_scoring
from geval_core.run.one_item import judge_item
from geval_core.types import JudgeSettings

AUTO = JudgeSettings(mode="auto", n=4, temperature=0.7)
VARYING = ("latency_s", "cached", "item_id")  # how long a call took, a cache hit, the id score_item makes up


def comparable(judgment: Judgment | dict) -> dict:
    data = asdict(judgment) if isinstance(judgment, Judgment) else dict(judgment)
    return {k: data[k] for k in asdict(Judgment("x")) if k not in VARYING}


def through_every_road(tmp_path, make_judge, settings: JudgeSettings) -> list[dict]:
    library, prompt, items, dataset = setup_library(tmp_path / "roads.db", count=1, judge=settings)
    item = items[0]
    run_id = library.create_run(prompt.name, dataset["label"], prompt.dimension.judge)
    options = RunOptions(concurrency=1, use_cache=False, retry_base=0.0)
    summary = run_scoring(prompt, [item], make_judge(), library, run_id, options)
    [stored] = library.judgments(run_id)
    roads = [
        stored,
        judge_item(prompt, item, make_judge(), settings),
        judge_one(prompt, item, make_judge(), settings),
        score_item(prompt, dict(item.fields), judge=make_judge()),
    ]
    library.close()
    assert summary.judged == 1
    return [comparable(road) for road in roads]


@pytest.mark.parametrize("make_judge", [worked_judge, NoLogprobsJudge], ids=["logprobs", "no-logprobs"])
def test_every_road_gives_the_same_judgment(tmp_path, make_judge):
    stored, *others = through_every_road(tmp_path, make_judge, AUTO)
    assert all(other == stored for other in others), (stored, others)


def test_auto_mode_falls_back_in_score_item_and_counts_both_calls(tmp_path):
    """The fixed bug: score_item raised LogprobsUnavailableError where the runner fell back to sampling."""
    stored, _, _, scored = through_every_road(tmp_path, NoLogprobsJudge, AUTO)
    assert scored["mode"] == "sampling" and scored["fallback"] is True
    assert scored["score"] == pytest.approx((4 + 3 + 4) / 3)  # "4", "3", "4" parse; "x" does not
    assert scored["unparsed"] == 1 and scored["parsed"] == 3
    # The logprobs request's reply and the sampling request's both count (the scripted judge: n tokens each).
    assert scored["output_tokens"] == 4 + 4 and stored["output_tokens"] == 8


def test_score_item_retries_a_transient_failure_like_a_run(tmp_path, monkeypatch):
    monkeypatch.setattr("geval_core.run.calls.backoff_delay", lambda *args: 0.0)
    stored, direct, one, scored = through_every_road(
        tmp_path, lambda: FlakyJudge(failures=2), JudgeSettings()
    )
    assert scored == stored and scored["score"] is not None and scored["error"] is None


def test_a_judge_that_keeps_failing_raises_from_score_item_and_is_an_error_judgment_elsewhere(
    tmp_path, monkeypatch
):
    monkeypatch.setattr("geval_core.run.calls.backoff_delay", lambda *args: 0.0)
    library, prompt, items, _ = setup_library(tmp_path / "fails.db", count=1)
    with pytest.raises(JudgeError, match="HTTP 429"):
        score_item(prompt, dict(items[0].fields), judge=FlakyJudge(failures=99))
    judgment = judge_one(prompt, items[0], FlakyJudge(failures=99), replace(prompt.dimension.judge))
    assert judgment.score is None and judgment.error.startswith(
        "RetryableJudgeError after 5 attempts: HTTP 429"
    )
    library.close()
