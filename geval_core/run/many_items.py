"""Score many items from Python, concurrently, the way one item is scored (judge_item): a list of dicts or
a pandas DataFrame in, one Judgment per row out, in row order."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import ConfigError, InputError
from ..judgment import Judgment
from ..prompts.inputs import require_inputs, rows_as_fields
from ..types import FrozenPrompt, Item, Judge
from .one_item import judge_item
from .plan import JudgeChoice, PlannedJudge, plan_judge

__all__ = ["score_items"]


def _records(data: Any) -> list[dict[Any, Any]]:
    """A DataFrame's records, or any iterable of mappings, as dicts (values untouched: checked by the caller)."""
    records = data.to_dict("records") if hasattr(data, "to_dict") and hasattr(data, "columns") else data
    if not isinstance(records, Iterable) or isinstance(records, (str, bytes, Mapping)):
        raise TypeError("score_items takes a list of dicts (one per item) or a pandas DataFrame")
    rows = list(records)
    bad = next((n for n, row in enumerate(rows) if not isinstance(row, Mapping)), None)
    if bad is not None:
        raise InputError(f"row {bad} is a {type(rows[bad]).__name__}, not a mapping: give one dict per item "
                         "(its fields named like the prompt's inputs)", field=None)
    return [dict(row) for row in rows]


def planned_judge(prompt: FrozenPrompt, judge: Judge | str | None, base_url: str | None
                  ) -> tuple[PlannedJudge, Judge]:
    """(the judge's plan, the judge): the prompt's own, or the one `judge` names ("openai:MODEL"), at `base_url`
    else the environment's server; a Judge object is used as given (it names its own server)."""
    from ..providers import get_judge

    if judge is not None and not isinstance(judge, str):
        if base_url is not None:
            raise ConfigError("base_url= names a server for the judge made here, but a judge object was given (it "
                              "sends where it was built to): leave out one of them")
        return plan_judge(prompt.dimension.judge, JudgeChoice(where="base_url="), None), judge
    planned = plan_judge(prompt.dimension.judge, JudgeChoice(judge, base_url, where="base_url="), None)
    return planned, get_judge(planned.settings)


def score_items(prompt: FrozenPrompt, data: Any, judge: Judge | str | None = None, base_url: str | None = None,
                concurrency: int = 8, id_field: str | None = None,
                cancel: threading.Event | None = None) -> list[Judgment]:
    """Score every row with a frozen prompt, `concurrency` calls in flight; failures are error Judgments.

    Each row holds the prompt's inputs as text (other fields are ignored); a missing or non-text input is refused
    before any call, naming its row and column. `id_field` names the row's id (default: its position). The judge
    is the prompt's own or the one `judge` names ("openai:MODEL"); the server is `base_url`, else the
    environment's (OPENAI_BASE_URL), else the provider's own API: planned as every run is (`run.plan`).
    """
    from ..providers.registry import allowed_concurrency

    records = _records(data)
    require_inputs(prompt, records, "the rows given to score_items")  # before any judge call
    rows = rows_as_fields(records, prompt.dimension.inputs)
    planned, judge = planned_judge(prompt, judge, base_url)
    settings = planned.settings
    workers, _ = allowed_concurrency(settings, max(1, concurrency))
    items = [Item(row.get(id_field, str(n)) if id_field else str(n), row) for n, row in enumerate(rows)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda item: judge_item(prompt, item, judge, settings, cancel=cancel,
                                                     errors="judgment"), items))
