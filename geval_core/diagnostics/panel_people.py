"""A panel and each of its members against people: every figure per judge, and the panel against its best member
as a paired difference on the same items (groups resampled for both at once)."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..stats.panel_errors import effective_judges
from .compare import FIGURES, _figure, paired_difference

__all__ = ["independence_text", "panel_against_people"]


def panel_against_people(
    store: Any, rows: list[dict[str, Any]], dataset_id: str, human: str, resamples: int = 1000
) -> dict[str, Any]:
    """Per member and the panel, Spearman / Kendall / Pearson with people on the items every one scored; the
    panel minus each member, and minus its best (by Spearman), with 95% intervals on the same items, groups
    resampled (withheld under 10 groups); and how many independent judges the members are worth
    (stats.panel_errors)."""
    import numpy as np

    people = store.human_means(dataset_id, human)
    kept = [
        r
        for r in rows
        if r["id"] in people and r["score"] is not None and all(s is not None for s in r["members"].values())
    ]
    if len(kept) < 3:
        raise InputError(
            f"only {len(kept)} items have every member's score, the panel's and a human rating {human!r}",
            field="human",
        )
    h = np.array([people[r["id"]] for r in kept], dtype=float)
    judges = {
        label: np.array([r["members"][label] for r in kept], dtype=float) for label in kept[0]["members"]
    }
    judges["panel"] = np.array([r["score"] for r in kept], dtype=float)
    figures = {who: {name: _figure(name, values, h) for name in FIGURES} for who, values in judges.items()}
    best = max((who for who in judges if who != "panel"), key=lambda who: figures[who]["spearman"])
    groups = [r.get("group") or r["id"] for r in kept]
    versus = {
        who: paired_difference(list(values), list(judges["panel"]), list(h), groups, resamples)
        for who, values in judges.items()
        if who != "panel"
    }
    members = {who: values for who, values in judges.items() if who != "panel"}
    return {
        "human": human,
        "items": len(kept),
        "figures": figures,
        "best_member": best,
        "panel_minus_best": versus[best],
        "panel_minus_each": versus,
        "independence": _independence(members, h, groups, resamples),
    }


def _independence(members: dict[str, Any], human: Any, groups: list[Any], resamples: int) -> dict[str, Any]:
    """The members' effective number of independent judges, or why there is none."""
    try:
        return effective_judges(members, human, groups, resamples)
    except InputError as exc:
        return {"withheld": str(exc)}


def independence_text(found: dict[str, Any]) -> str:
    """How many independent judges the members are worth, as one line (or why it is not said)."""
    if "withheld" in found:
        return f"effective independent judges: not computed ({found['withheld']})"
    ci, k_ci = found["mean_error_correlation_interval"], found["effective_judges_interval"]
    worth = found["effective_judges"]
    return (
        f"members' errors against people correlate {found['mean_error_correlation']:.3f} on average"
        + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
        + f": the {len(found['members'])} members are worth "
        + ("any number of (their errors cancel out)" if worth is None else f"{worth:.2f}")
        + " independent judges"
        + ("" if k_ci is None else f" [{_worth(k_ci[0])}, {_worth(k_ci[1])}]")
        + f" (participation ratio {found['participation_ratio']:.2f}; {found['units']} {found['resampled']})"
    )


def _worth(value: float | None) -> str:
    return "unbounded" if value is None else f"{value:.2f}"
