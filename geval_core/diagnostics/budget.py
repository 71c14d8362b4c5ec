"""A rating budget for a stored run: how many more human ratings its agreement figure and its PPI estimate need
for a target interval width (stats.budget, stats.budget_ppi), from the run's scores and the ratings so far."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..stats.budget import agreement_plan
from ..stats.budget_ppi import ppi_plan
from ..store import Store

__all__ = ["ASSUMES", "run_budget"]

ASSUMES = (
    "The plan assumes the further ratings are drawn like the ones so far (a random sample of the items, in "
    "new groups of the same size when the items come in groups), from the same judge and raters."
)


def _inputs(store: Store, run_id: str, human: str) -> dict[str, Any]:
    """The run's scored items: judge scores, people's ratings (None where not rated yet) and groups."""
    run = store.get_run(run_id)
    dataset = store.get_dataset(run.dataset_id)
    if human not in dataset.human:
        raise InputError(
            f"dataset {dataset.label} has no human rating {human!r} "
            f"(has: {', '.join(dataset.human) or 'none'})",
            field="human",
        )
    people = store.human_means(run.dataset_id, human)
    items = {i.id: i for i in store.dataset_items(run.dataset_id)}
    rows = [r for r in store.judgments(run.id) if r.get("score") is not None and r["item_id"] in items]
    groups = [items[r["item_id"]].group for r in rows]
    return {
        "run": run,
        "dataset": dataset,
        "judge": [float(r["score"]) for r in rows],
        "human": [people.get(r["item_id"]) for r in rows],
        "groups": groups if groups and all(g is not None for g in groups) else None,
        "scale": store.get_prompt(run.prompt_id).dimension.scale,
    }


def run_budget(
    store: Store,
    run_id: str,
    human: str,
    width: float | None = None,
    ppi_width: float | None = None,
    figure: str = "spearman",
    assurance: float = 0.8,
    pooled: bool = False,
    method: str = "ppi++",
    bootstrap: int = 1000,
) -> dict[str, Any]:
    """The plans for a run: the agreement figure's (`width`; group-level when the items have groups, unless
    `pooled`) and the PPI estimate's (`ppi_width`), with what they start from."""
    if width is None and ppi_width is None:
        raise InputError(
            "name a target width: for the agreement figure, the PPI estimate, or both", field="width"
        )
    got = _inputs(store, run_id, human)
    rated = [i for i, h in enumerate(got["human"]) if h is not None]
    out: dict[str, Any] = {
        "run": got["run"].id,
        "dataset": got["dataset"].label,
        "human": human,
        "judged": len(got["judge"]),
        "rated": len(rated),
        "assumes": ASSUMES,
    }
    if width is not None:
        judge, people = [got["judge"][i] for i in rated], [got["human"][i] for i in rated]
        groups = None if got["groups"] is None else [got["groups"][i] for i in rated]
        out["agreement"] = agreement_plan(
            judge,
            people,
            width,
            figure,
            assurance,
            groups=None if pooled else groups,
            clusters=groups if pooled else None,
            scale=got["scale"],
            bootstrap=bootstrap,
        )
    if ppi_width is not None:
        out["ppi"] = ppi_plan(got["judge"], got["human"], ppi_width, method, assurance, got["groups"])
    return out
