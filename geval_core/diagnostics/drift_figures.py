"""What a drift check shows beside its test: how far the judge's answers on the anchors moved from the reference
run's, its agreement with people then and now on the same items, and the model versions it reported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..run.splits import sealed_view
from ..stats.shift import item_shift, shift_summary
from ..store import Store
from .compare import paired_difference

__all__ = ["AGREEMENT_RESAMPLES", "check_figures"]

AGREEMENT_RESAMPLES = 1000
MOVES_SHOWN = 10


def check_figures(store: Store, watch: Mapping[str, Any], rows: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The check's figures against the watch's first reference run: item moves, agreement, model versions."""
    reference = {r["item_id"]: r for r in store.judgments(watch["runs"][0]) if r["item_id"] in rows}
    ids = [i for i in watch["items"] if i in rows and i in reference]
    shifts = {i: item_shift(reference[i], rows[i]) for i in ids}
    moved = sorted((i for i in ids if shifts[i]["difference"] is not None),
                   key=lambda i: -abs(shifts[i]["difference"]))[:MOVES_SHOWN]
    now = sorted({str(r["model_version"]) for r in rows.values() if r.get("model_version")})
    before = list(watch["model_versions"])
    return {"shift": {**shift_summary(list(shifts.values())), "unscored": sum(rows[i].get("score") is None
                                                                              for i in rows),
                      "largest": [{"id": i, **shifts[i]} for i in moved]},
            "agreement": _agreement(store, watch, ids, reference, rows),
            "model_versions": {"reference": before, "now": now, "changed": bool(before and now and before != now)}}


def _agreement(store: Store, watch: Mapping[str, Any], ids: list[str], reference: Mapping[str, dict[str, Any]],
               rows: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Spearman, Kendall and Pearson with people, the reference's and now, on the items both scored, with the
    paired difference's interval (groups resampled); None below 3 such items."""
    view, _ = sealed_view(store, watch["dataset"])  # the dev side of a split dataset, as the anchors are
    people = view.human_means(watch["dataset"], watch["human"])
    groups = {i.id: i.group for i in view.dataset_items(watch["dataset"])}
    both = [i for i in ids if i in people and reference[i].get("score") is not None and rows[i].get("score") is not None]
    if len(both) < 3:
        return None
    out = paired_difference([float(reference[i]["score"]) for i in both], [float(rows[i]["score"]) for i in both],
                            [float(people[i]) for i in both], [groups.get(i) or i for i in both], AGREEMENT_RESAMPLES)
    out["resampled"] = "groups" if all(groups.get(i) for i in both) else "items (the anchors have no groups)"
    return out
