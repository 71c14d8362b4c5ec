"""The human ceiling: each rater against the mean of the other raters, beside the judge against all of them.

Leave one rater out: rater r's ratings are compared with the mean of the other raters on the items
where r rated and at least one other rater did, with the same readings and intervals as the judge
(`agreement`). The judge is compared with the mean of every rater (the human rating used everywhere
else). A judge inside the raters' range agrees with people about as well as a person does; the
others' mean averages one rater fewer than the judge's reference, which favours the judge slightly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..types import Scale
from .agreement import agreement
from .raters import RaterMatrix

FIGURES = ("spearman", "kendall", "pearson", "kappa_quadratic")


def others_mean(values: np.ndarray, rater: int) -> np.ndarray:
    """Per unit, the mean rating of every rater but `rater` (NaN where no other rater rated)."""
    others = np.delete(values, rater, axis=1)
    counts = np.isfinite(others).sum(axis=1)
    sums = np.nansum(others, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / np.where(counts > 0, counts, 1), np.nan)


def all_mean(values: np.ndarray) -> np.ndarray:
    """Per unit, the mean of every rating (NaN where none)."""
    counts = np.isfinite(values).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, np.nansum(values, axis=1) / np.where(counts > 0, counts, 1), np.nan)


def _reading(matrix: RaterMatrix, grouped: bool) -> tuple[list | None, list | None]:
    """(groups, clusters) for `agreement`: per-group when asked and every item has a group."""
    has_groups = all(g is not None for g in matrix.groups)
    if grouped and has_groups:
        return matrix.groups, None
    return None, (matrix.groups if has_groups else None)


def _row(who: str, reference: str, result: dict[str, Any]) -> dict[str, Any]:
    return {"who": who, "against": reference, **result}


def human_ceiling(
    matrix: RaterMatrix,
    scale: Scale,
    judge: Mapping[str, float | None] | None = None,
    grouped: bool = True,
    bootstrap: int = 0,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One agreement row per rater (vs the others' mean), then the judge's row (vs every rater's mean)."""
    groups, clusters = _reading(matrix, grouped)
    rows = []
    for r, name in enumerate(matrix.raters):
        if len(matrix.raters) < 2 or not np.isfinite(matrix.values[:, r]).any():
            continue
        result = agreement(
            matrix.values[:, r], others_mean(matrix.values, r), groups, scale, bootstrap, seed, clusters
        )
        rows.append(_row(f"rater {name}", "mean of the other raters", result.to_dict()))
    if judge is not None:
        scores = [judge.get(i) for i in matrix.ids]
        result = agreement(scores, all_mean(matrix.values), groups, scale, bootstrap, seed, clusters)
        rows.append(_row("judge", "mean of every rater", result.to_dict()))
    return rows


def ceiling_summary(rows: list[dict[str, Any]], figure: str = "spearman") -> dict[str, Any]:
    """The raters' range (min, mean, max) of one figure and where the judge stands in it."""
    people = [r[figure] for r in rows if r["who"] != "judge" and r[figure] is not None]
    judge = next((r[figure] for r in rows if r["who"] == "judge"), None)
    if not people:
        return {"figure": figure, "raters": 0, "judge": judge}
    return {
        "figure": figure,
        "raters": len(people),
        "min": min(people),
        "mean": float(np.mean(people)),
        "max": max(people),
        "judge": judge,
        "judge_above": None if judge is None else sum(judge > p for p in people),
    }
