"""Items longer than the judge reads are listed before the run, recorded as errors that say so, and never sent."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from runner_helpers import setup_library, worked_judge

from geval_core.cli import cli
from geval_core.errors import ContextLengthError
from geval_core.export import score_item
from geval_core.providers.context import context_window
from geval_core.providers.local_judge import DEFAULT_CTX
from geval_core.providers.registry import LOCAL_CONTEXT
from geval_core.run import RunOptions, run_scoring
from geval_core.run.one_item import overlong_items
from geval_core.types import Item, JudgeSettings

LONG = "word " * 6000  # 30,000 characters: about 7,500 tokens, over the local judge's 4,096


def with_long_item(library, dataset_label: str) -> tuple[list[Item], object]:
    items = [
        Item("short", {"document": "A short document.", "summary": "Short."}),
        Item("long", {"document": LONG, "summary": "Long."}),
    ]
    return items, library.import_items(dataset_label, items)


def test_the_local_context_is_the_judges_own_and_hosted_windows_are_documented():
    assert LOCAL_CONTEXT == DEFAULT_CTX
    assert context_window(JudgeSettings(provider="openai", model="gpt-4o-mini-2024-07-18")) == 128_000
    assert (
        context_window(
            JudgeSettings(provider="openai", model="gpt-4o-mini", base_url="http://127.0.0.1:1/v1")
        )
        is None
    )
    assert (
        context_window(JudgeSettings(provider="openai", model="my-server"), {"context_tokens": 2048}) == 2048
    )
    assert context_window(JudgeSettings(provider="gemini", model="gemini-2.5-flash")) == 1_048_576


def test_a_long_item_is_an_error_and_never_sent_while_the_others_are_scored(tmp_path):
    library, prompt, _, _ = setup_library(tmp_path / "ctx.db", count=1)
    items, dataset = with_long_item(library, "with-long")
    settings = prompt.dimension.judge  # the local judge: 4,096 tokens
    assert overlong_items(prompt, items, settings) == (LOCAL_CONTEXT, ["long"])
    judge = worked_judge()
    run_id = library.create_run(prompt.id, dataset["id"], settings)
    summary = run_scoring(prompt, items, judge, library, run_id, RunOptions(settings=settings))
    rows = {r["item_id"]: r for r in library.judgments(run_id)}
    assert len(judge.requests) == 1 and "A short document." in judge.requests[0].messages[0]["content"]
    assert rows["short"]["score"] is not None and rows["long"]["score"] is None
    assert rows["long"]["error"].startswith("ContextLengthError: the item's prompt is about")
    assert f"over the judge's context of {LOCAL_CONTEXT} tokens" in rows["long"]["error"]
    assert summary.scored == 1 and summary.failed == 1
    with pytest.raises(ContextLengthError):
        score_item(prompt, {"document": LONG, "summary": "Long."}, judge=worked_judge())
    library.close()


def test_geval_score_lists_the_long_items_before_anything_is_sent(tmp_path):
    """A dataset of one long item: the listing comes first, and the local model (made at the first request)
    is never even loaded, because nothing is sent."""
    db = tmp_path / "cli.db"
    library, prompt, _, _ = setup_library(db, count=1)
    only = library.import_items("only-long", [Item("long", {"document": LONG, "summary": "Long."})])
    library.close()
    done = CliRunner().invoke(
        cli, ["score", "--prompt", prompt.label, "--data", only["label"], "--db", str(db)]
    )
    assert done.exit_code == 4, done.output
    assert "warning: 1 of 1 items do not fit in the judge's context of 4096 tokens" in done.output
    assert "0 scored" in done.output and "1 errors" in done.output and "Traceback" not in done.output
