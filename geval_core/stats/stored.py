"""The figures of stored runs and datasets, read through a Store: agreement inputs, calibration and
estimates of runs, the raters of a dataset. Everything else in stats/ is pure computation on values."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..records import Dataset, Run
from ..store import Store
from ..types import Item, Scale
from .agreement import agreement
from .calibration import calibration, rater_ratings
from .ceiling import ceiling_summary, human_ceiling
from .kappa import infer_scale
from .ppi import Estimate, hold_out, ppi_difference, ppi_mean
from .raters import RaterMatrix, base_name, item_spread, rater_agreement, rater_keys, rater_matrix
from .ties import with_ties


def agreement_inputs_from_run(
    library: Store, run_id: str, human_field: str, only: set[str] | None = None
) -> tuple[list[float], list[float], list[str | None]]:
    """(judge scores, human ratings, groups) of a run's scored items that have the human rating (and are in
    `only`, the scope of the figure: a split's side without the prompt's example items)."""
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run.dataset_id)}
    people = library.human_means(run.dataset_id, human_field)  # the version's own: what "people" means
    judge, human, groups = [], [], []
    for row in library.judgments(run.id):
        item = items.get(row["item_id"])
        if row["score"] is None or item is None or item.id not in people:
            continue
        if only is not None and item.id not in only:
            continue
        judge.append(float(row["score"]))
        human.append(people[item.id])
        groups.append(item.group)
    return judge, human, groups


def run_agreement(
    library: Store, run_id: str, human_field: str, pooled: bool = False, only: set[str] | None = None
) -> dict[str, Any]:
    """Agreement of a run's scores with its dataset's human ratings, labelled for a prompt export.

    Group-level (the paper's reading) when every item has a group and `pooled` is false; kappa on the
    prompt's own scale. InputError when the dataset has no such rating or no scored item has one.
    """
    run = library.get_run(run_id)
    dataset = library.get_dataset(run.dataset_id)
    if human_field not in dataset.human:
        raise InputError(
            f"dataset {dataset.label} has no human rating {human_field!r} "
            f"(has: {', '.join(dataset.human) or 'none'})",
            field=human_field,
        )
    judge, human, groups = agreement_inputs_from_run(library, run.id, human_field, only)
    if not judge:
        raise InputError(f"run {run.id} has no scored item with a human rating {human_field!r}")
    grouped = not pooled and all(g is not None for g in groups)
    scale = library.get_prompt(run.prompt_id).dimension.scale
    result = agreement(judge, human, groups if grouped else None, scale)
    return {
        "dataset": dataset.label,
        "dataset_id": dataset.id,
        "human": human_field,
        "run": run.id,
        "judge_model": run.model_version,
        "measured_at": run.finished_at or run.created_at,
        **result.to_dict(),
        "missing": _unscored(library, run, human_field),
        # Only with per-rater ratings: an export without raters stays as it was (and hashes as before).
        **(
            {"raters": raters}
            if (raters := raters_own(library, run, dataset, human_field, grouped, only))
            else {}
        ),
    }


RATER_FIGURES = ("spearman", "kappa_quadratic")  # the raters' own, beside the judge's same figures


def raters_own(
    library: Store, run: Run, dataset: Dataset, human_field: str, grouped: bool, only: set[str] | None
) -> dict[str, Any] | None:
    """The raters' own agreement (each rater against the mean of the others, the Agreement page's human ceiling)
    on the items the judge's figures cover, in the same reading; None without per-rater ratings NAME.k."""
    if len(rater_keys(dataset.human, human_field)) < 2:
        return None
    scored = {r["item_id"] for r in library.judgments(run.id) if r["score"] is not None}
    items = [
        i for i in library.dataset_items(dataset.id) if i.id in scored and (only is None or i.id in only)
    ]
    scale = library.get_prompt(run.prompt_id).dimension.scale
    rows = human_ceiling(rater_matrix(items, human_field), scale, grouped=grouped)
    if not rows:
        return None
    per_rater = [{"who": r["who"], "items": r["items"], **{f: r[f] for f in RATER_FIGURES}} for r in rows]
    summaries = {f: ceiling_summary(rows, f) for f in RATER_FIGURES}
    return {
        "against": "each rater against the mean of the other raters",
        "reading": rows[0]["reading"],
        "per_rater": per_rater,
        **{f: {k: summaries[f].get(k) for k in ("raters", "min", "mean", "max")} for f in RATER_FIGURES},
    }


def _unscored(library: Store, run: Run, human_field: str) -> int:
    """Items of the run with the human rating but no judge score (not judged, failed or null)."""
    scored = {r["item_id"] for r in library.judgments(run.id) if r["score"] is not None}
    wanted = set(run.item_ids or []) or None
    return sum(
        1
        for i in library.dataset_items(run.dataset_id)
        if human_field in i.human and i.id not in scored and (wanted is None or i.id in wanted)
    )


def judgment_rows(library: Store, run_id: str) -> list[dict[str, Any]]:
    """A run's judgments for export: each item's group, its human ratings (human_NAME) and its ties.

    Ties within groups are added when every judged item has a group (the pairs the per-document
    reading counts).
    """
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run.dataset_id)}
    rows = []
    for row in library.judgments(run.id):
        item = items.get(row["item_id"])
        human = {f"human_{k}": v for k, v in (item.human if item else {}).items()}
        rows.append({**row, "group": item.group if item else None, **human})
    groups = [r["group"] for r in rows]
    return with_ties(rows, groups if rows and all(g is not None for g in groups) else None)


def run_items(library: Store, run_id: str) -> tuple[Run, list[tuple[Item | None, dict[str, Any]]]]:
    """(the run, [(its dataset item or None, judgment dict)] in judgment order)."""
    run = library.get_run(run_id)
    items = {i.id: i for i in library.dataset_items(run.dataset_id)}
    return run, [(items.get(row["item_id"]), row) for row in library.judgments(run.id)]


def check_human(library: Store, run: Run, human: str) -> None:
    """InputError naming the ratings there are when the run's dataset has no rating `human`."""
    dataset = library.get_dataset(run.dataset_id)
    if human not in dataset.human:
        raise InputError(
            f"dataset {dataset.label} has no human rating {human!r} "
            f"(has: {', '.join(dataset.human) or 'none'})",
            field=human,
        )


def run_calibration(library: Store, run_id: str, human: str, bins: int = 10) -> dict[str, Any]:
    """Calibration of a run's rating distributions against its dataset's rating `human`."""
    run, rows = run_items(library, run_id)
    check_human(library, run, human)
    scale = library.get_prompt(run.prompt_id).dimension.scale
    dists = [row.get("distribution") or {} for _, row in rows]
    ratings = [rater_ratings(item.human, human) if item else [] for item, _ in rows]
    result = calibration(dists, ratings, scale, [row.get("score") for _, row in rows], bins)
    if not result["items"]:
        raise InputError(
            f"run {run.id} has no item with both a rating distribution and a human rating {human!r}"
        )
    modes = sorted({mode for _, row in rows if (mode := row.get("mode"))})
    return {"run": run.id, "human": human, "modes": modes, **result}


def item_value(item: Item | None, field: str) -> str | None:
    """An item's input field, or its group for "group"; None when absent."""
    if item is None:
        return None
    if field == "group":
        return item.group
    return item.fields.get(field)


def _groups_of(clusters: list[Any] | None) -> list[Any] | None:
    """The clusters when every item has one (a cluster-robust PPI), else None (items independent)."""
    return clusters if clusters and all(c is not None for c in clusters) else None


def estimate_rows(
    judge: list[float | None],
    human: list[float | None],
    by: list[str | None] | None,
    method: str,
    rated: int | None = None,
    seed: int = 0,
    diff: tuple[str, str] | None = None,
    clusters: list[Any] | None = None,
) -> dict[str, Any]:
    """The PPI estimate overall, per level of `by` and the difference of two levels; rated=k keeps k ratings.

    `clusters` (each item's group, e.g. its document) make the intervals cluster-robust.
    """
    human = hold_out(human, rated, seed)
    clusters = _groups_of(clusters)
    out: dict[str, Any] = ppi_mean(judge, human, method, clusters).to_dict()
    if by is None:
        return out
    levels: dict[str, Estimate] = {}
    for level in sorted({b for b in by if b is not None}):
        pick = [i for i, b in enumerate(by) if b == level]
        try:
            levels[level] = ppi_mean(
                [judge[i] for i in pick],
                [human[i] for i in pick],
                method,
                None if clusters is None else [clusters[i] for i in pick],
            )
        except InputError:
            continue  # fewer than 2 rated items in this level: no estimate, listed as skipped
    out["by"] = {k: v.to_dict() for k, v in levels.items()}
    out["by_skipped"] = sorted({b for b in by if b is not None} - set(levels))
    if diff:
        missing = [d for d in diff if d not in levels]
        if missing:
            raise InputError(
                f"no estimate for {', '.join(map(repr, missing))} "
                f"(levels with one: {', '.join(levels) or 'none'})"
            )
        if clusters is not None and {clusters[i] for i, b in enumerate(by) if b == diff[0]} & {
            clusters[i] for i, b in enumerate(by) if b == diff[1]
        }:
            # Two levels that share groups (two systems' summaries of the same documents) are correlated:
            # adding their variances would be wrong, so the difference is estimated per item instead.
            out["difference"] = {
                "a": diff[0],
                "b": diff[1],
                **_paired_difference(judge, human, by, diff, clusters, method),
            }
        else:
            out["difference"] = {
                "a": diff[0],
                "b": diff[1],
                **ppi_difference(levels[diff[0]], levels[diff[1]]),
            }
    return out


def _paired_difference(
    judge: list[float | None],
    human: list[float | None],
    by: list[str | None],
    diff: tuple[str, str],
    clusters: list[Any],
    method: str,
) -> dict[str, Any]:
    """A - B over groups that share items of both levels: a PPI mean of signed, level-weighted values.

    Within each group, level A's items count +1/(A's items in all) * (items of A and B) and B's negatively,
    so the mean of the signed values is the difference; clustering on the groups keeps their covariance.
    """
    sign: dict[str | None, float] = {diff[0]: 1.0, diff[1]: -1.0}
    pick = [i for i, b in enumerate(by) if b in sign]
    share: dict[str | None, float] = {d: sum(1 for i in pick if by[i] == d) / len(pick) for d in diff}

    def signed(values: list[float | None], i: int) -> float | None:
        v = values[i]
        return None if v is None else sign[by[i]] * v / share[by[i]]

    e = ppi_mean(
        [signed(judge, i) for i in pick],
        [signed(human, i) for i in pick],
        method,
        [clusters[i] for i in pick],
    )
    return {**e.to_dict(), "paired": True}


def run_estimate(
    library: Store,
    run_id: str,
    human: str,
    method: str,
    by: str | None = None,
    rated: int | None = None,
    seed: int = 0,
    diff: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """PPI estimate of the mean human rating `human` from a run's scores and its dataset's ratings."""
    run, rows = run_items(library, run_id)
    check_human(library, run, human)
    judge = [row.get("score") for _, row in rows]
    ratings = [item.human.get(human) if item else None for item, _ in rows]
    levels = [item_value(item, by) for item, _ in rows] if by else None
    if levels is not None and not any(levels):  # levels of `by`
        raise InputError(f"no item of run {run.id} has an input field {by!r} (or use --by group)", field=by)
    groups = [item.group if item else None for item, _ in rows]
    return {
        "run": run.id,
        "human": human,
        **estimate_rows(judge, ratings, levels, method, rated, seed, diff, groups),
    }


def _run_mean(
    library: Store, run_id: str, human: str, method: str, rated: int | None, seed: int
) -> tuple[str, set[str], set[str], Estimate]:
    """(run id, its item ids, its items' groups, the PPI estimate of its mean human rating)."""
    run, rows = run_items(library, run_id)
    check_human(library, run, human)
    ratings = hold_out([item.human.get(human) if item else None for item, _ in rows], rated, seed)
    groups = _groups_of([item.group if item else None for item, _ in rows])
    return (
        run.id,
        {row["item_id"] for _, row in rows},
        set(groups or ()),
        ppi_mean([r.get("score") for _, r in rows], ratings, method, groups),
    )


def runs_difference(
    library: Store, run_a: str, run_b: str, human: str, method: str, rated: int | None = None, seed: int = 0
) -> dict[str, Any]:
    """PPI estimates of the mean human rating of two runs on different items, and A minus B with its interval.

    The interval adds the two variances, which holds only for independent items: runs that share items
    (the same dataset version, or items of the same id) are refused rather than given a wrong interval.
    """
    id_a, items_a, groups_a, a = _run_mean(library, run_a, human, method, rated, seed)
    id_b, items_b, groups_b, b = _run_mean(library, run_b, human, method, rated, seed + 1)
    shared = items_a & items_b
    if shared:
        raise InputError(
            f"runs {id_a} and {id_b} share {len(shared)} items (e.g. {sorted(shared)[0]!r}): their "
            "estimates are not independent; a difference needs runs on different items (e.g. two "
            "systems' outputs), or use --by FIELD --diff A B within one run"
        )
    difference = ppi_difference(a, b)
    common = groups_a & groups_b
    if common:  # e.g. two systems' summaries of the same documents: correlated, so variances do not add
        difference.update(
            ci=None,
            warning=f"no interval: the runs' items share {len(common)} groups (e.g. "
            f"{sorted(common)[0]!r}), so their estimates are not independent; put both in one "
            "dataset and use --by FIELD --diff A B (clustered on the groups)",
        )
    return {
        "run": id_a,
        "human": human,
        **a.to_dict(),
        "versus": {"run": id_b, **b.to_dict()},
        "difference": {"a": id_a, "b": id_b, **difference},
    }


SPREAD_ROWS = 10  # widest-spread items listed in the report


def dataset_matrix(library: Store, dataset_ref: str, human: str) -> tuple[Dataset, RaterMatrix]:
    """(dataset row, rater matrix of rating `human`); InputError when the version has no such rating."""
    dataset = library.get_dataset(dataset_ref)
    name = base_name(human)
    if name not in dataset.human and not any(k.startswith(name + ".") for k in dataset.human):
        raise InputError(
            f"dataset {dataset.label} has no human rating {name!r} "
            f"(has: {', '.join(dataset.human) or 'none'})",
            field=human,
        )
    return dataset, rater_matrix(library.dataset_items(dataset.id), name)


def _scale(matrix: RaterMatrix, scale: Scale | None) -> Scale:
    finite = matrix.values[np.isfinite(matrix.values)]
    return scale or infer_scale(finite)


def run_scores(library: Store, run_id: str) -> tuple[Run, dict[str, float | None], Scale]:
    """(run row, item id -> judge score, the prompt's scale) of a library run."""
    run = library.get_run(run_id)
    scores = {r["item_id"]: r["score"] for r in library.judgments(run.id)}
    return run, scores, library.get_prompt(run.prompt_id).dimension.scale


def same_items(
    library: Store, run: Run, dataset_id: str, scores: dict[str, float | None]
) -> dict[str, float | None]:
    """The run's scores of items whose inputs are identical in `dataset_id` (e.g. a version saved from ratings)."""
    if run.dataset_id == dataset_id:
        return scores
    judged = {i.id: i.fields for i in library.dataset_items(run.dataset_id)}
    return {i.id: scores.get(i.id) for i in library.dataset_items(dataset_id) if judged.get(i.id) == i.fields}


def dataset_raters(
    library: Store,
    dataset_ref: str,
    human: str,
    scale: Scale | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    run_id: str | None = None,
    grouped: bool = True,
) -> dict[str, Any]:
    """Alpha, pairwise kappa, raters per item, widest spreads and the human ceiling (with a run's judge)."""
    judge = None
    if run_id:
        run, judge, run_scale = run_scores(library, run_id)
        scale = scale or run_scale
        dataset_ref = dataset_ref or run.dataset_id
    dataset, matrix = dataset_matrix(library, dataset_ref, human)
    if run_id and judge is not None:  # a run's scores (run_scores read them above)
        judge = same_items(library, run, dataset.id, judge)
    scale = _scale(matrix, scale)
    result = rater_agreement(matrix, scale, bootstrap, seed)
    ceiling = (
        human_ceiling(matrix, scale, judge, grouped, bootstrap, seed)
        if len(matrix.raters) > 1 or judge
        else []
    )
    return {
        "dataset": dataset.label,
        "dataset_id": dataset.id,
        "human": base_name(human),
        "rater_keys": matrix.raters,
        **result,
        "spread": item_spread(matrix)[:SPREAD_ROWS],
        "ceiling": ceiling,
        "ceiling_summary": ceiling_summary(ceiling) if ceiling else None,
        "run": run_id,
    }
