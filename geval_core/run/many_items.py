"""Score many items from Python, concurrently, the way one item is scored (judge_item): a list of dicts or
a pandas DataFrame in, one Judgment per row out, in row order."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..judgment import Judgment
from ..prompts.inputs import require_inputs, rows_as_fields
from ..types import FrozenPrompt, Item, Judge
from .one_item import CallPolicy, judge_item
from .plan import JudgeChoice, PlannedJudge, plan_judge
from .progress_line import ProgressLine, shows_progress
from .workers import DaemonPool

__all__ = ["score_items"]


def planned_judge(
    prompt: FrozenPrompt, judge: Judge | str | None, base_url: str | None
) -> tuple[PlannedJudge, Judge]:
    """(the judge's plan, the judge): the prompt's own, or the one `judge` names ("openai:MODEL"), at `base_url`
    else the environment's server; a Judge object is used as given (it names its own server)."""
    from ..providers import get_judge

    if judge is not None and not isinstance(judge, str):
        if base_url is not None:
            raise ConfigError(
                "base_url= names a server for the judge made here, but a judge object was given (it "
                "sends where it was built to): leave out one of them"
            )
        return plan_judge(prompt.dimension.judge, JudgeChoice(where="base_url="), None), judge
    planned = plan_judge(prompt.dimension.judge, JudgeChoice(judge, base_url, where="base_url="), None)
    return planned, get_judge(planned.settings)


def score_items(
    prompt: FrozenPrompt | str | Path,
    data: Any,
    judge: Judge | str | None = None,
    base_url: str | None = None,
    concurrency: int = 8,
    id_field: str | None = None,
    cancel: threading.Event | None = None,
    progress: bool | None = None,
) -> list[Judgment]:
    """Score every row with a frozen prompt, `concurrency` calls in flight; failures are error Judgments.

    `prompt` is a FrozenPrompt or an exported prompt file's path; `data` a DataFrame, a list of dicts or a data
    file's path. Each row holds the prompt's inputs as text (other fields are ignored); a missing or non-text input
    is refused before any call, naming its row and column. `id_field` names the row's id (default: its position).
    The judge is the prompt's own or the one `judge` names ("openai:MODEL"); the server is `base_url`, else the
    environment's (OPENAI_BASE_URL), else the provider's own API: planned as every run is (`run.plan`).
    `progress`: a line on stderr (default: on in a terminal or Jupyter). An interrupt (Ctrl-C, Jupyter's stop)
    stops at once: calls in flight are abandoned, not waited for.
    """
    from ..files.datafiles import records_of
    from ..files.prompt_files import load_prompt
    from ..providers.registry import allowed_concurrency

    frozen = prompt if isinstance(prompt, FrozenPrompt) else load_prompt(prompt)
    records = records_of(data, "score_items")
    require_inputs(frozen, records, "the rows given to score_items")  # before any judge call
    rows = rows_as_fields(records, frozen.dimension.inputs)
    planned, made = planned_judge(frozen, judge, base_url)
    workers, _ = allowed_concurrency(planned.settings, max(1, concurrency))
    items = [Item(row.get(id_field, str(n)) if id_field else str(n), row) for n, row in enumerate(rows)]
    line = (
        ProgressLine(frozen.label, len(items))
        if (shows_progress() if progress is None else progress)
        else None
    )
    try:
        return _judge_all(frozen, items, made, planned, workers, cancel or threading.Event(), line)
    finally:
        if line is not None:
            line.close()


def _judge_all(
    prompt: FrozenPrompt,
    items: list[Item],
    judge: Judge,
    planned: PlannedJudge,
    workers: int,
    cancel: threading.Event,
    line: ProgressLine | None,
) -> list[Judgment]:
    """Every item judged on the runner's daemon pool, in row order; an interrupt cancels what has not started and
    leaves the calls in flight behind (daemon threads end with their call)."""
    pool = DaemonPool(workers, name="geval-items")
    results: list[Judgment | None] = [None] * len(items)
    policy = CallPolicy(cancel=cancel)

    def one(item: Item) -> Judgment:
        return judge_item(prompt, item, judge, planned.settings, policy=policy, errors="judgment")

    position = {pool.submit(one, item): n for n, item in enumerate(items)}
    try:
        done = 0
        while done < len(items):
            for future in pool.finished(0.1):
                results[position[future]] = future.result()
                done += 1
                if line is not None:
                    line(done, len(items), results[position[future]])
    except BaseException:
        cancel.set()  # retries and waits in flight end now
        for future in position:
            future.cancel()
        raise
    finally:
        pool.shutdown()
    return [r for r in results if r is not None]
