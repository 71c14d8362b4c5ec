"""A drift check's record from its new judgments, with no store (the library's checks and an exported watch's use
it alike): the test's step over every anchor's history, and what it shows beside the test: how far the judge's
answers moved from the reference run's, its agreement with people then and now on the same items, and the model
versions it reported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..prompts import canonical_hash
from ..stats.eprocess import Wealth, step
from ..stats.shift import item_shift, shift_summary
from .compare import paired_difference

__all__ = ["AGREEMENT_RESAMPLES", "check_body", "figures", "watch_seed"]

AGREEMENT_RESAMPLES = 1000
MOVES_SHOWN = 10


def watch_seed(watch: Mapping[str, Any]) -> int:
    """The seed of a watch's random draws (the samples, the ties' uniform draws): from what was decided before any
    score was known (prompt, data, reference run ids, anchor ids), never from the scores, so the draws are
    independent of them as the test's validity needs."""
    decided = {k: watch[k] for k in ("prompt", "dataset", "runs", "items")}
    return int(canonical_hash(decided)[:15], 16)


def check_body(
    watch: Mapping[str, Any],
    checks: Sequence[Mapping[str, Any]],
    rows: Mapping[str, dict[str, Any]],
    reference: Mapping[str, dict[str, Any]],
    people: Mapping[str, float],
    groups: Mapping[str, Any],
) -> dict[str, Any]:
    """A check of the watch from its new judgments `rows` (by anchor): the test's step from the last check's
    wealth over every anchor's history, the verdict so far, and the figures against the first reference run's
    judgments, people's ratings and the anchors' groups."""
    scored = [i for i in watch["items"] if (rows.get(i) or {}).get("score") is not None]
    history = {i: list(v) for i, v in watch["reference"].items()}
    for check in checks:
        for item, score in check["scores"].items():
            history[item].append(float(score))
    seq = len(checks) + 1
    rng = np.random.default_rng([watch_seed(watch), seq, 1])  # the ties' draws
    wealth = Wealth.from_dict(checks[-1]["wealth"]) if checks else Wealth()
    after, test = step(wealth, [(history[i], float(rows[i]["score"])) for i in scored], rng)
    threshold = 1 / float(watch["alpha"])
    e_max = max([after.e_value, *(c["e_max"] for c in checks)])
    first = next((c["alarm_at"] for c in checks if c.get("alarm_at")), None)
    return {
        "watch": watch["id"],
        "check": seq,
        "items": [i for i in watch["items"] if i in rows],
        "scores": {i: float(rows[i]["score"]) for i in scored},
        "wealth": after.to_dict(),
        "e_value": after.e_value,
        "e_max": e_max,
        "threshold": threshold,
        "alarm_at": first or (seq if e_max >= threshold else None),
        "test": test,
        **figures(watch, reference, rows, people, groups),
    }


def figures(
    watch: Mapping[str, Any],
    reference: Mapping[str, dict[str, Any]],
    rows: Mapping[str, dict[str, Any]],
    people: Mapping[str, float],
    groups: Mapping[str, Any],
) -> dict[str, Any]:
    """The check's figures against the reference's judgments: item moves, agreement, model versions."""
    ids = [i for i in watch["items"] if i in rows and i in reference]
    shifts = {i: item_shift(reference[i], rows[i]) for i in ids}
    moved = sorted(
        (i for i in ids if shifts[i]["difference"] is not None), key=lambda i: -abs(shifts[i]["difference"])
    )[:MOVES_SHOWN]
    now = sorted({str(r["model_version"]) for r in rows.values() if r.get("model_version")})
    before = list(watch["model_versions"])
    return {
        "shift": {
            **shift_summary(list(shifts.values())),
            "unscored": sum(rows[i].get("score") is None for i in rows),
            "largest": [{"id": i, **shifts[i]} for i in moved],
        },
        "agreement": _agreement(ids, reference, rows, people, groups),
        "model_versions": {
            "reference": before,
            "now": now,
            "changed": bool(before and now and before != now),
        },
    }


def _agreement(
    ids: list[str],
    reference: Mapping[str, dict[str, Any]],
    rows: Mapping[str, dict[str, Any]],
    people: Mapping[str, float],
    groups: Mapping[str, Any],
) -> dict[str, Any] | None:
    """Spearman, Kendall and Pearson with people, the reference's and now, on the items both scored, with the
    paired difference's interval (groups resampled); None below 3 such items."""
    both = [
        i
        for i in ids
        if i in people and reference[i].get("score") is not None and rows[i].get("score") is not None
    ]
    if len(both) < 3:
        return None
    out = paired_difference(
        [float(reference[i]["score"]) for i in both],
        [float(rows[i]["score"]) for i in both],
        [float(people[i]) for i in both],
        [groups.get(i) or i for i in both],
        AGREEMENT_RESAMPLES,
    )
    out["resampled"] = "groups" if all(groups.get(i) for i in both) else "items (the anchors have no groups)"
    return out
