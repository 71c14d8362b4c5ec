"""Diagnostics of a stored run (calibration, PPI estimate), read through a library object (a Store)."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..store import Store
from ..types import Item
from .calibration import calibration, rater_ratings
from .ppi import Estimate, hold_out, ppi_difference, ppi_mean


def run_items(library: Store, run_id: str) -> tuple[dict[str, Any], list[tuple[Item | None, dict[str, Any]]]]:
    """(the run, [(its dataset item or None, judgment dict)] in judgment order)."""
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run["dataset_id"])}
    return run, [(items.get(row["item_id"]), row) for row in library.judgments(run["id"])]


def check_human(library: Store, run: dict[str, Any], human: str) -> None:
    """InputError naming the ratings there are when the run's dataset has no rating `human`."""
    dataset = library.get_dataset(run["dataset_id"])
    if human not in dataset["human"]:
        raise InputError(f"dataset {dataset['label']} has no human rating {human!r} "
                         f"(has: {', '.join(dataset['human']) or 'none'})", field=human)


def run_calibration(library: Store, run_id: str, human: str, bins: int = 10) -> dict[str, Any]:
    """Calibration of a run's rating distributions against its dataset's rating `human`."""
    run, rows = run_items(library, run_id)
    check_human(library, run, human)
    scale = library.get_prompt(run["prompt_id"]).dimension.scale
    dists = [row.get("distribution") or {} for _, row in rows]
    ratings = [rater_ratings(item.human, human) if item else [] for item, _ in rows]
    result = calibration(dists, ratings, scale, [row.get("score") for _, row in rows], bins)
    if not result["items"]:
        raise InputError(f"run {run['id']} has no item with both a rating distribution and a human "
                         f"rating {human!r}")
    modes = sorted({row.get("mode") for _, row in rows if row.get("mode")})
    return {"run": run["id"], "human": human, "modes": modes, **result}


def item_value(item: Item | None, field: str) -> str | None:
    """An item's input field, or its group for "group"; None when absent."""
    if item is None:
        return None
    if field == "group":
        return item.group
    return item.fields.get(field)


def estimate_rows(judge: list[float | None], human: list[float | None], by: list[str | None] | None,
                  method: str, rated: int | None = None, seed: int = 0,
                  diff: tuple[str, str] | None = None) -> dict[str, Any]:
    """The PPI estimate overall, per level of `by` and the difference of two levels; rated=k keeps k ratings."""
    human = hold_out(human, rated, seed)
    out: dict[str, Any] = ppi_mean(judge, human, method).to_dict()
    if by is None:
        return out
    levels: dict[str, Estimate] = {}
    for level in sorted({b for b in by if b is not None}):
        pick = [i for i, b in enumerate(by) if b == level]
        try:
            levels[level] = ppi_mean([judge[i] for i in pick], [human[i] for i in pick], method)
        except InputError:
            continue  # fewer than 2 rated items in this level: no estimate, listed as skipped
    out["by"] = {k: v.to_dict() for k, v in levels.items()}
    out["by_skipped"] = sorted({b for b in by if b is not None} - set(levels))
    if diff:
        missing = [d for d in diff if d not in levels]
        if missing:
            raise InputError(f"no estimate for {', '.join(map(repr, missing))} "
                             f"(levels with one: {', '.join(levels) or 'none'})")
        out["difference"] = {"a": diff[0], "b": diff[1], **ppi_difference(levels[diff[0]], levels[diff[1]])}
    return out


def run_estimate(library: Store, run_id: str, human: str, method: str, by: str | None = None,
                 rated: int | None = None, seed: int = 0, diff: tuple[str, str] | None = None) -> dict[str, Any]:
    """PPI estimate of the mean human rating `human` from a run's scores and its dataset's ratings."""
    run, rows = run_items(library, run_id)
    check_human(library, run, human)
    judge = [row.get("score") for _, row in rows]
    ratings = [item.human.get(human) if item else None for item, _ in rows]
    levels = [item_value(item, by) for item, _ in rows] if by else None
    if by and not any(levels):
        raise InputError(f"no item of run {run['id']} has an input field {by!r} (or use --by group)", field=by)
    return {"run": run["id"], "human": human, **estimate_rows(judge, ratings, levels, method, rated, seed, diff)}


def _run_mean(library: Store, run_id: str, human: str, method: str, rated: int | None,
              seed: int) -> tuple[str, set[str], Estimate]:
    """(run id, its item ids, the PPI estimate of its mean human rating)."""
    run, rows = run_items(library, run_id)
    check_human(library, run, human)
    ratings = hold_out([item.human.get(human) if item else None for item, _ in rows], rated, seed)
    return run["id"], {row["item_id"] for _, row in rows}, ppi_mean([r.get("score") for _, r in rows], ratings, method)


def runs_difference(library: Store, run_a: str, run_b: str, human: str, method: str, rated: int | None = None,
                    seed: int = 0) -> dict[str, Any]:
    """PPI estimates of the mean human rating of two runs on different items, and A minus B with its interval.

    The interval adds the two variances, which holds only for independent items: runs that share items
    (the same dataset version, or items of the same id) are refused rather than given a wrong interval.
    """
    id_a, items_a, a = _run_mean(library, run_a, human, method, rated, seed)
    id_b, items_b, b = _run_mean(library, run_b, human, method, rated, seed + 1)
    shared = items_a & items_b
    if shared:
        raise InputError(f"runs {id_a} and {id_b} share {len(shared)} items (e.g. {sorted(shared)[0]!r}): their "
                         "estimates are not independent; a difference needs runs on different items (e.g. two "
                         "systems' outputs), or use --by FIELD --diff A B within one run")
    return {"run": id_a, "human": human, **a.to_dict(), "versus": {"run": id_b, **b.to_dict()},
            "difference": {"a": id_a, "b": id_b, **ppi_difference(a, b)}}
