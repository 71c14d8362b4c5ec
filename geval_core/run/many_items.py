"""Score many items from Python, concurrently, the way one item is scored (judge_item): a list of dicts or
a pandas DataFrame in, one Judgment per row out, in row order."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from ..judgment import Judgment
from ..prompts.inputs import require_inputs
from ..types import FrozenPrompt, Item, Judge
from .one_item import judge_item

__all__ = ["score_items"]


def _rows(data: Any) -> list[dict[str, str]]:
    """Rows as dicts of strings: a DataFrame's records, or any iterable of mappings."""
    records = data.to_dict("records") if hasattr(data, "to_dict") and hasattr(data, "columns") else data
    if not isinstance(records, Iterable) or isinstance(records, (str, bytes, Mapping)):
        raise TypeError("score_items takes a list of dicts (one per item) or a pandas DataFrame")
    return [{str(k): "" if v is None else str(v) for k, v in dict(row).items()} for row in records]


def score_items(prompt: FrozenPrompt, data: Any, judge: Judge | None = None, base_url: str | None = None,
                concurrency: int = 8, id_field: str | None = None,
                cancel: threading.Event | None = None) -> list[Judgment]:
    """Score every row with a frozen prompt, `concurrency` calls in flight; failures are error Judgments.

    Each row holds the prompt's inputs (other fields are ignored); `id_field` names the row's id (default:
    its position). The server is the caller's (`base_url`) or the provider's own API, as for score_item.
    """
    from ..providers import get_judge
    from ..providers.registry import allowed_concurrency

    rows = _rows(data)
    require_inputs(prompt, rows, "the rows given to score_items")  # before any judge call
    settings = replace(prompt.dimension.judge, base_url=base_url)
    judge = judge if judge is not None else get_judge(settings)
    workers, _ = allowed_concurrency(settings, max(1, concurrency))
    items = [Item(row.get(id_field, str(n)) if id_field else str(n), row) for n, row in enumerate(rows)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda item: judge_item(prompt, item, judge, settings, cancel=cancel,
                                                     errors="judgment"), items))
