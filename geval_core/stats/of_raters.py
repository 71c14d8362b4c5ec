"""The raters of a stored dataset version: their agreement with each other and the human ceiling.

Read through a library object (get_dataset, dataset_items; get_run, judgments, get_prompt for a run):
the store computes no statistics, and statistics import no store.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..store import Store
from ..types import Scale
from .ceiling import ceiling_summary, human_ceiling
from .kappa import infer_scale
from .raters import RaterMatrix, base_name, item_spread, rater_agreement, rater_matrix

SPREAD_ROWS = 10  # widest-spread items listed in the report


def dataset_matrix(library: Store, dataset_ref: str, human: str) -> tuple[dict[str, Any], RaterMatrix]:
    """(dataset row, rater matrix of rating `human`); InputError when the version has no such rating."""
    dataset = library.get_dataset(dataset_ref)
    name = base_name(human)
    if name not in dataset["human"] and not any(k.startswith(name + ".") for k in dataset["human"]):
        raise InputError(f"dataset {dataset['label']} has no human rating {name!r} "
                         f"(has: {', '.join(dataset['human']) or 'none'})", field=human)
    return dataset, rater_matrix(library.dataset_items(dataset["id"]), name)


def _scale(matrix: RaterMatrix, scale: Scale | None) -> Scale:
    finite = matrix.values[np.isfinite(matrix.values)]
    return scale or infer_scale(finite)


def run_scores(library: Store, run_id: str) -> tuple[dict[str, Any], dict[str, float | None], Scale]:
    """(run row, item id -> judge score, the prompt's scale) of a library run."""
    run = library.get_run(run_id)
    scores = {r["item_id"]: r["score"] for r in library.judgments(run["id"])}
    return run, scores, library.get_prompt(run["prompt_id"]).dimension.scale


def same_items(library: Store, run: dict[str, Any], dataset_id: str, scores: dict[str, float | None]
               ) -> dict[str, float | None]:
    """The run's scores of items whose inputs are identical in `dataset_id` (e.g. a version saved from ratings)."""
    if run["dataset_id"] == dataset_id:
        return scores
    judged = {i.id: i.fields for i in library.dataset_items(run["dataset_id"])}
    return {i.id: scores.get(i.id) for i in library.dataset_items(dataset_id) if judged.get(i.id) == i.fields}


def dataset_raters(library: Store, dataset_ref: str, human: str, scale: Scale | None = None,
                   bootstrap: int = 0, seed: int = 0, run_id: str | None = None,
                   grouped: bool = True) -> dict[str, Any]:
    """Alpha, pairwise kappa, raters per item, widest spreads and the human ceiling (with a run's judge)."""
    judge = None
    if run_id:
        run, judge, run_scale = run_scores(library, run_id)
        scale = scale or run_scale
        dataset_ref = dataset_ref or run["dataset_id"]
    dataset, matrix = dataset_matrix(library, dataset_ref, human)
    if run_id:
        judge = same_items(library, run, dataset["id"], judge)
    scale = _scale(matrix, scale)
    result = rater_agreement(matrix, scale, bootstrap, seed)
    ceiling = human_ceiling(matrix, scale, judge, grouped, bootstrap, seed) if len(matrix.raters) > 1 or judge else []
    return {"dataset": dataset["label"], "dataset_id": dataset["id"], "human": base_name(human),
            "rater_keys": matrix.raters, **result, "spread": item_spread(matrix)[:SPREAD_ROWS],
            "ceiling": ceiling, "ceiling_summary": ceiling_summary(ceiling) if ceiling else None,
            "run": run_id}
