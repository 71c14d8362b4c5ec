"""Agreement of a stored run: its judgments and its dataset's human ratings, read through a library.

The library object is passed in (anything with get_run, get_dataset, dataset_items, judgments and
get_prompt, e.g. prompt_library.Library): the store computes no statistics, and statistics import no store.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..store import Store
from .agreement import agreement
from .ties import with_ties


def agreement_inputs_from_run(library: Store, run_id: str, human_field: str
                              ) -> tuple[list[float], list[float], list[str | None]]:
    """(judge scores, human ratings, groups) of a run's scored items that have the human rating."""
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run["dataset_id"])}
    judge, human, groups = [], [], []
    for row in library.judgments(run["id"]):
        item = items.get(row["item_id"])
        if row["score"] is None or item is None or human_field not in item.human:
            continue
        judge.append(float(row["score"]))
        human.append(float(item.human[human_field]))
        groups.append(item.group)
    return judge, human, groups


def run_agreement(library: Store, run_id: str, human_field: str, pooled: bool = False) -> dict[str, Any]:
    """Agreement of a run's scores with its dataset's human ratings, labelled for a prompt export.

    Group-level (the paper's reading) when every item has a group and `pooled` is false; kappa on the
    prompt's own scale. InputError when the dataset has no such rating or no scored item has one.
    """
    run = library.get_run(run_id)
    dataset = library.get_dataset(run["dataset_id"])
    if human_field not in dataset["human"]:
        raise InputError(f"dataset {dataset['label']} has no human rating {human_field!r} "
                         f"(has: {', '.join(dataset['human']) or 'none'})", field=human_field)
    judge, human, groups = agreement_inputs_from_run(library, run["id"], human_field)
    if not judge:
        raise InputError(f"run {run['id']} has no scored item with a human rating {human_field!r}")
    grouped = not pooled and all(g is not None for g in groups)
    scale = library.get_prompt(run["prompt_id"]).dimension.scale
    result = agreement(judge, human, groups if grouped else None, scale)
    return {"dataset": dataset["label"], "dataset_id": dataset["id"], "human": human_field, "run": run["id"],
            "judge_model": run["model_version"], "measured_at": run["finished_at"] or run["created_at"],
            **result.to_dict(), "missing": _unscored(library, run, human_field)}


def _unscored(library: Store, run: dict[str, Any], human_field: str) -> int:
    """Items of the run with the human rating but no judge score (not judged, failed or null)."""
    scored = {r["item_id"] for r in library.judgments(run["id"]) if r["score"] is not None}
    wanted = set(run.get("item_ids") or []) or None
    return sum(1 for i in library.dataset_items(run["dataset_id"])
               if human_field in i.human and i.id not in scored and (wanted is None or i.id in wanted))


def judgment_rows(library: Store, run_id: str) -> list[dict[str, Any]]:
    """A run's judgments for export: each item's group, its human ratings (human_NAME) and its ties.

    Ties within groups are added when every judged item has a group (the pairs the per-document
    reading counts).
    """
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run["dataset_id"])}
    rows = []
    for row in library.judgments(run["id"]):
        item = items.get(row["item_id"])
        human = {f"human_{k}": v for k, v in (item.human if item else {}).items()}
        rows.append({**row, "group": item.group if item else None, **human})
    groups = [r["group"] for r in rows]
    return with_ties(rows, groups if rows and all(g is not None for g in groups) else None)
