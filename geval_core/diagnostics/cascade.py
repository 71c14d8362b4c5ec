"""A cascade: a cheap judge on every item, the strong judge only where the cheap one is uncertain.

Uncertainty is read from the cheap judgment alone (its rating distribution's entropy or sd, one minus its
top-two margin, one minus its valid mass; an item without a cheap score always goes to the strong judge). On a
calibration set where both judged, `cascade_curve` gives, per threshold, the share sent to the strong judge and
the cascade's agreement with people and with the strong judge, with intervals that resample the data's groups.
The chosen threshold is frozen into a content-hashed cascade; `score_cascade` runs it and reports what it spent
and what it saved against the strong judge on every item.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import InputError, NotFoundError
from ..prompts import canonical_hash
from ..prompts.names import check_new_name
from ..run.options import RunOptions
from ..run.plan import JudgeChoice, RunPlan, RunScope, plan_run, record_run, start_run
from ..stats import agreement
from ..stats.confidence import confidence, share_at
from ..store import Store
from ..types import Judge, JudgeSettings

__all__ = [
    "SIGNALS",
    "cascade_curve",
    "cascade_result",
    "flip_chance",
    "freeze_cascade",
    "get_cascade",
    "routed",
    "score_cascade",
    "strong_items",
    "uncertainty",
]

SIGNALS = ("entropy", "sd", "margin", "valid_mass", "flip")
RESUMABLE = ("done", "running", "cancelled", "failed")


def uncertainty(judgment: dict[str, Any] | None, signal: str) -> float:
    """How unsure the cheap judgment is by `signal` (higher: less sure); infinite without a score."""
    if signal not in SIGNALS:
        raise InputError(f"the signal is one of {', '.join(SIGNALS)}, got {signal!r}", field="signal")
    if not judgment or judgment.get("score") is None:
        return float("inf")
    if signal == "valid_mass":
        mass = judgment.get("valid_mass")
        return 1.0 - float(mass if mass is not None else 1.0)
    if signal == "flip":
        return flip_chance(judgment)
    value = confidence(judgment.get("distribution"))[signal]
    if value is None:
        return float("inf")
    return 1.0 - value if signal == "margin" else value


def flip_chance(judgment: dict[str, Any]) -> float:
    """The chance that the cheap judge, asked again, gives another rating than its score rounds to (halves
    up): one minus the probability its distribution (or share of its sampled replies) puts on that rating.
    Read off the answer it already gave, so the stability of its rating costs no second call."""
    share = share_at(judgment.get("distribution"), math.floor(float(judgment["score"]) + 0.5))
    return float("inf") if share is None else 1.0 - share


def routed(cheap: Mapping[str, dict[str, Any] | None], signal: str, threshold: float) -> set[str]:
    """The items the strong judge takes: the cheap judgment's uncertainty above the threshold."""
    return {item_id for item_id, row in cheap.items() if uncertainty(row, signal) > threshold}


def _scores(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    return {row["item_id"]: row for row in store.judgments(run_id)}


def cascade_curve(
    store: Store,
    cheap_run: str,
    strong_run: str,
    human: str,
    signal: str,
    thresholds: int = 11,
    bootstrap: int = 500,
    only: set[str] | None = None,
    strong_intervals: bool = True,
) -> dict[str, Any]:
    """Per threshold (quantiles of the cheap judge's uncertainty): the share routed, the cascade's Spearman with
    people and with the strong judge, each with a 95% interval (groups resampled when the items have them; the
    strong judge's only with `strong_intervals`, half the resampling)."""
    runs = [store.get_run(cheap_run), store.get_run(strong_run)]
    if runs[0].dataset_id != runs[1].dataset_id:
        raise InputError("the calibration needs both judges on the same dataset version", field="run")
    items = [i for i in store.dataset_items(runs[0].dataset_id) if only is None or i.id in only]
    people = store.human_means(runs[0].dataset_id, human)
    cheap, strong = _scores(store, cheap_run), _scores(store, strong_run)
    both = [i for i in items if i.id in people and (strong.get(i.id) or {}).get("score") is not None]
    if len(both) < 3:
        raise InputError(
            f"only {len(both)} items have the strong judge's score and a human rating", field="run"
        )
    signals = np.array([uncertainty(cheap.get(i.id), signal) for i in both])
    finite = signals[np.isfinite(signals)]
    cuts = sorted(
        {float(q) for q in np.quantile(finite, np.linspace(0, 1, thresholds))} if len(finite) else set()
    )
    cuts = [cuts[0] - 1e-9, *cuts] if cuts else [0.0]  # the first: every item to the strong judge
    groups = [i.group for i in both]
    clusters = groups if all(g is not None for g in groups) else None
    rows = []
    for cut in cuts:
        send = {i.id for i, s in zip(both, signals, strict=True) if s > cut}
        scores = [strong[i.id]["score"] if i.id in send else cheap.get(i.id, {}).get("score") for i in both]
        with_people = agreement(scores, [people[i.id] for i in both], bootstrap=bootstrap, clusters=clusters)
        with_strong = agreement(
            scores,
            [strong[i.id]["score"] for i in both],
            bootstrap=bootstrap if strong_intervals else 0,
            clusters=clusters,
        )
        rows.append(
            {
                "threshold": cut,
                "routed": len(send),
                "routed_share": len(send) / len(both),
                "spearman": with_people.spearman,
                "interval": with_people.ci.get("spearman"),
                "with_strong": with_strong.spearman,
                "with_strong_interval": with_strong.ci.get("spearman"),
            }
        )
    return {
        "cheap_run": cheap_run,
        "strong_run": strong_run,
        "human": human,
        "signal": signal,
        "items": len(both),
        "resampled": "groups" if clusters else "items",
        "curve": rows,
    }


def freeze_cascade(
    store: Store,
    name: str,
    cheap: str,
    strong: str,
    signal: str,
    threshold: float,
    guarantee: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    """(the frozen cascade, created): cheap and strong prompt hashes, the signal and the threshold (and the
    guarantee it was chosen with, diagnostics.escalate), hashed."""
    cheap_p, strong_p = store.get_prompt(cheap), store.get_prompt(strong)
    if cheap_p.id == strong_p.id:
        raise InputError("the cheap and the strong judge are the same prompt", field="strong")
    if cheap_p.dimension.scale != strong_p.dimension.scale:
        raise InputError("the two judges rate on different scales", field="strong")
    uncertainty(None, signal)  # the signal's name is checked
    name = check_new_name(name, store.record_keys("cascade"), "cascade")
    body = {"cheap": cheap_p.id, "strong": strong_p.id, "signal": signal, "threshold": float(threshold)}
    if guarantee is not None:
        body["guarantee"] = guarantee
    record, created = store.freeze_record("cascade", name, {**body, "id": canonical_hash(body)})
    return _cascade(name, record), created


def _cascade(name: str, record: dict[str, Any]) -> dict[str, Any]:
    """A stored version as callers read it (name, version, created_at added), checked against its hash."""
    stored = {**record["body"], "name": name, "version": record["seq"], "created_at": record["created_at"]}
    body = {k: stored[k] for k in ("cheap", "strong", "signal", "threshold", "guarantee") if k in stored}
    if canonical_hash(body) != stored["id"]:
        raise InputError(
            f"cascade {name}@{record['seq']} does not match its hash: it was edited", field="cascade"
        )
    return stored


def get_cascade(store: Store, ref: str) -> dict[str, Any]:
    """A frozen cascade by name (latest) or name@version, checked against its hash."""
    name, _, version = ref.partition("@")
    found = [r for r in store.records("cascade", name) if not version or str(r["seq"]) == version]
    if not found:
        raise NotFoundError(f"no cascade {ref!r}; `geval cascade freeze` makes one")
    return _cascade(name, found[-1])


def strong_items(store: Store, cascade: dict[str, Any], items: list, cheap_run: str) -> list[str]:
    """The ids, in dataset order, of the items the cascade sends to the strong judge after its cheap run."""
    return _order(cascade, items, _scores(store, cheap_run))


def _order(cascade: dict[str, Any], items: list, cheap: dict[str, dict[str, Any]]) -> list[str]:
    send = routed({i.id: cheap.get(i.id) for i in items}, cascade["signal"], cascade["threshold"])
    return [i.id for i in items if i.id in send]


def cascade_result(
    store: Store, cascade: dict[str, Any], items: list, cheap_run: str, strong_run: str | None
) -> dict[str, Any]:
    """The cascade's row per item (its score, who gave it, the cheap score and uncertainty) and what it spent and
    saved, read from its cheap run and its strong run (None when no item was sent on)."""
    cheap = _scores(store, cheap_run)
    strong = _scores(store, strong_run) if strong_run else {}
    order = _order(cascade, items, cheap)
    send = set(order)
    rows = [
        {
            "id": i.id,
            "score": ((strong if i.id in send else cheap).get(i.id) or {}).get("score"),
            "by": "strong" if i.id in send else "cheap",
            "cheap_score": (cheap.get(i.id) or {}).get("score"),
            "uncertainty": _finite(uncertainty(cheap.get(i.id), cascade["signal"])),
            "group": i.group,
        }
        for i in items
    ]
    return {
        "cascade": f"{cascade['name']}@{cascade['version']}",
        "rows": rows,
        "cheap_run": cheap_run,
        "strong_run": strong_run,
        "items": len(items),
        "routed": len(order),
        "routed_share": len(order) / len(items) if items else 0.0,
        "spend": spend(store, cheap_run, strong_run, len(items), len(order)),
    }


def plan_cascade_side(
    store: Store,
    cascade: dict[str, Any],
    role: str,
    dataset_id: str,
    item_ids: list[str] | None = None,
    base_urls: dict[str, str] | None = None,
    options: RunOptions | None = None,
    concurrency: int | None = None,
) -> RunPlan:
    """The plan of one side of a cascade (cheap on every item, strong on the routed ones): the side's prompt with
    its own frozen judge, at the server named for the side, else the environment's."""
    prompt = store.get_prompt(cascade[role])
    choice = JudgeChoice(base_url=(base_urls or {}).get(role), where=f"--base-url {role}=")
    scope = RunScope(item_ids=None if item_ids is None else tuple(item_ids), reuse=RESUMABLE)
    return plan_run(store, prompt, dataset_id, choice, scope, options=options, concurrency=concurrency)


def score_cascade(
    store: Store,
    cascade: dict[str, Any],
    dataset_id: str,
    judge_for: Callable[[JudgeSettings], Judge] | None = None,
    options: RunOptions | None = None,
    base_urls: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The cheap judge on every item, the strong one on the uncertain ones; rows and what was spent and saved.
    A side that does not finish fails the cascade: `status` says so and its unscored rows carry the error."""
    from ..run.batch import run_items

    unknown = set(base_urls or {}) - {"cheap", "strong"}
    if unknown:
        raise InputError(
            f"--base-url takes cheap=URL or strong=URL, not {sorted(unknown)[0]}=", field="base-url"
        )
    cheap = record_run(
        store, plan_cascade_side(store, cascade, "cheap", dataset_id, None, base_urls, options)
    )
    assert cheap.run_id is not None  # a recorded plan names its run
    cheap_summary = start_run(store, cheap, judge_for(cheap.settings) if judge_for else None)
    items = run_items(store, dataset_id, cheap.item_ids)
    order = strong_items(store, cascade, items, cheap.run_id) if cheap_summary.status == "done" else []
    strong, strong_summary = None, None
    if order:
        strong = record_run(
            store, plan_cascade_side(store, cascade, "strong", dataset_id, order, base_urls, options)
        )
        strong_summary = start_run(store, strong, judge_for(strong.settings) if judge_for else None)
    result = cascade_result(store, cascade, items, cheap.run_id, strong.run_id if strong else None)
    failed = [
        (role, s)
        for role, s in (("cheap", cheap_summary), ("strong", strong_summary))
        if s is not None and s.status != "done"
    ]
    for row in result["rows"]:
        if row["score"] is None and failed:
            role, summary = failed[-1]
            row["error"] = f"not scored: the {role} judge's run {summary.run_id} {summary.status}" + (
                f" ({summary.error})" if summary.error else ""
            )
    return {
        **result,
        "status": "failed" if failed else "done",
        "failed": [
            {"side": role, "run": s.run_id, "status": s.status, "error": s.error} for role, s in failed
        ],
        "judges": {"cheap": cheap.judge.describe(), "strong": strong.judge.describe() if strong else None},
        "judge_calls": {
            "cheap": cheap_summary.judge_calls,
            "strong": strong_summary.judge_calls if strong_summary else 0,
        },
    }


def _finite(value: float) -> float | None:
    """None for an item with no cheap score (JSON has no infinity)."""
    return value if np.isfinite(value) else None


def spend(
    store: Store, cheap_run: str, strong_run: str | None, items: int, routed_items: int
) -> dict[str, Any]:
    """Tokens (and dollars where priced) spent by the cascade, and the strong judge on every item, estimated from
    what it spent per routed item."""

    def totals(run_id: str | None) -> dict[str, float]:
        if not run_id:
            return {"input_tokens": 0.0, "output_tokens": 0.0, "cost_usd": 0.0}
        run = store.get_run(run_id)
        return {
            "input_tokens": float(run.input_tokens or 0),
            "output_tokens": float(run.output_tokens or 0),
            "cost_usd": float(run.cost_usd or 0),
        }

    cheap, strong = totals(cheap_run), totals(strong_run)
    per_item = {k: v / routed_items for k, v in strong.items()} if routed_items else {}
    all_strong = {k: v * items for k, v in per_item.items()} if per_item else None
    spent = {k: cheap[k] + strong[k] for k in cheap}
    saved = None
    if all_strong:
        base = all_strong["input_tokens"] + all_strong["output_tokens"]
        used = strong["input_tokens"] + strong["output_tokens"]
        saved = 1 - used / base if base else None
    return {
        "cheap": cheap,
        "strong": strong,
        "spent": spent,
        "strong_on_every_item_estimated": all_strong,
        "strong_tokens_saved_share": saved,
        "strong_calls_saved": items - routed_items,
    }
