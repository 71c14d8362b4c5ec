"""The review queue: which items a person should rate next, so the next human minutes change the most.

Two orders, both from one run's judgments:
- "uncertain": the judge's least certain items first (highest standard deviation of its rating
  distribution, then entropy); items it could not score at all come first of all.
- "disagree": items that people have rated, largest |judge score - human mean| first, then the
  unrated ones in the "uncertain" order (rating them is what lets disagreement be seen).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..stats.confidence import confidence

ORDERS = {
    "uncertain": "the judge's least certain items first",
    "disagree": "largest judge-human disagreement first, then the least certain",
}


def _uncertainty(row: Mapping[str, Any] | None) -> tuple[float, float]:
    """Sort key: larger is less certain; an unscored item is the least certain of all."""
    if row is None or row.get("score") is None:
        return (float("inf"), float("inf"))
    c = confidence(row.get("distribution"))
    return (c["sd"] if c["sd"] is not None else float("inf"), c["entropy"] or 0.0)


def review_queue(
    item_ids: Sequence[str],
    judgments: Mapping[str, Mapping[str, Any]],
    human: Mapping[str, float | None] | None = None,
    order: str = "uncertain",
) -> list[dict[str, Any]]:
    """Every item in queue order: {item, reason, judge, human, gap, sd, entropy, margin}."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    human = human or {}
    rows: list[dict[str, Any]] = []
    for n, item_id in enumerate(item_ids):
        row = judgments.get(item_id)
        score, rated = (row or {}).get("score"), human.get(item_id)
        gap = abs(score - rated) if score is not None and rated is not None else None
        c = confidence((row or {}).get("distribution"))
        rows.append(
            {
                "item": item_id,
                "judge": score,
                "human": rated,
                "gap": gap,
                **c,
                "_key": _key(order, gap, _uncertainty(row), n),
            }
        )
    rows.sort(key=lambda r: r["_key"])
    for r in rows:
        r["reason"] = _reason(r)
        del r["_key"]
    return rows


def _key(order: str, gap: float | None, uncertainty: tuple[float, float], n: int) -> tuple:
    if order == "disagree" and gap is not None:
        return (0, -gap, n)
    return (1, -uncertainty[0], -uncertainty[1], n)


def _reason(row: dict[str, Any]) -> str:
    if row["judge"] is None:
        return "the judge gave no score"
    if row["gap"] is not None:
        return f"judge {row['judge']:.2f} vs people {row['human']:.2f}"
    return f"judge spread: sd {row['sd']:.2f}, entropy {row['entropy']:.2f} bits"


def next_item(order: Sequence[str], acts: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Where a rater resumes: the first item in `order` they have not acted on, else the first they skipped."""
    fresh = next((i for i in order if i not in acts), None)
    if fresh is not None:
        return fresh
    return next((i for i in order if acts[i].get("status") == "skipped"), None)


def progress(order: Sequence[str], acts: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Counts of one rater's current acts over the items in `order`: rated, cannot_judge, skipped, left."""
    out = {"rated": 0, "cannot_judge": 0, "skipped": 0}
    for item_id in order:
        if item_id in acts:
            out[acts[item_id]["status"]] += 1
    out["left"] = len(order) - sum(out.values())
    out["total"] = len(order)
    return out
