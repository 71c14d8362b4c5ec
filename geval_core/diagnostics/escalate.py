"""A cascade with a guarantee: the cheap judge keeps the items it is sure of, the rest escalate to the strong judge.

`calibrate_guarantee` chooses the threshold on a cheap run over human-rated items by fixed-sequence testing
(stats.guarantee): with probability at least 1 - delta over the draw of those items, the cheap judge agrees with
people (its score within `within` of their rating) on at least `target` of the items it keeps. `freeze_guaranteed`
freezes the cascade with the target, delta, the threshold and the calibration it came from; `guarantee_report`
says, for a cascade scored on new data, the share kept beside the calibration's, whether people agreed where they
rated, and what the guarantee does and does not cover.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InputError
from ..records import Run
from ..stats.guarantee import GRID_POINTS, MIN_KEPT, fixed_sequence
from ..store import Store
from ..types import Scale
from .cascade import freeze_cascade, uncertainty

__all__ = ["calibrate_guarantee", "covers", "freeze_guaranteed", "guarantee_report", "signal_upper"]

DOES_NOT_COVER = (
    "items drawn otherwise than the calibration items: another source, another period, another kind of output "
    "(a distribution shift), or a judge that changed under the same name",
    "any single item: it is a rate over the kept items, not a promise per item",
    "a small batch: on few kept items the observed rate can fall below the target by chance",
    "the items sent to the strong judge: its agreement is measured on the calibration items, not guaranteed",
    "other people than the calibration's raters, or another reading of agreement than the one frozen",
    "a threshold recalibrated again and again on the same items until one passes: 1 - delta holds for one calibration",
)


def signal_upper(signal: str, scale: Scale) -> float:
    """The largest uncertainty a signal can take on this scale: the top of the threshold grid."""
    uncertainty(None, signal)  # the signal's name is checked
    if signal == "entropy":
        return math.log2(scale.max - scale.min + 1)
    if signal == "sd":
        return (scale.max - scale.min) / 2
    return 1.0


def covers(guarantee: dict[str, Any]) -> str:
    """What the guarantee covers, in one sentence."""
    return (
        f"With probability at least {1 - guarantee['delta']:.0%} over the draw of the calibration items, the "
        f"cheap judge's score is within {guarantee['within']:g} of people's {guarantee['human']!r} rating on at "
        f"least {guarantee['target']:.0%} of the items it keeps, for items drawn like the "
        f"{guarantee['calibration']['items']} calibration items and scored by the same frozen cheap prompt and "
        "judge."
    )


def _calibration_rows(
    store: Store, run: Run, human: str
) -> tuple[list[str], list[dict[str, Any] | None], np.ndarray]:
    """(item ids, the run's judgment or None, people's rating) of every item of the run that people rated."""
    people = store.human_means(run.dataset_id, human)
    wanted = set(run.item_ids) if run.item_ids else None
    judged = {row["item_id"]: row for row in store.judgments(run.id)}
    ids = [
        i.id
        for i in store.dataset_items(run.dataset_id)
        if i.id in people and (wanted is None or i.id in wanted)
    ]
    return ids, [judged.get(i) for i in ids], np.array([people[i] for i in ids], dtype=float)


def _agrees(rows: list[dict[str, Any] | None], human: np.ndarray, within: float) -> np.ndarray:
    scores = np.array([np.nan if not r or r.get("score") is None else float(r["score"]) for r in rows])
    with np.errstate(invalid="ignore"):
        return np.abs(scores - human) <= within + 1e-9  # no score: never agrees (and is never kept)


def _check_judge(store: Store, run: Run) -> dict[str, Any]:
    """The calibration run's judge; InputError when it is not its prompt's own (the cascade would score with
    another judge than the one the guarantee was measured on)."""
    own = store.get_prompt(run.prompt_id).dimension.judge
    used = run.judge
    if (used.provider, used.model) != (own.provider, own.model):
        raise InputError(
            f"run {run.id} was scored by {used.provider}:{used.model}, not by its "
            f"prompt's own judge {own.provider}:{own.model}: a cascade scores with the prompt's own "
            "judge, so its guarantee must be measured with it",
            field="run",
        )
    return {
        "judge": f"{used.provider}:{used.model}",
        "model_version": run.model_version,
        "server": run.extra.get("server"),
    }


def calibrate_guarantee(
    store: Store,
    cheap_run: str,
    human: str,
    signal: str = "entropy",
    target: float = 0.8,
    delta: float = 0.1,
    within: float = 0.5,
    min_kept: int = MIN_KEPT,
    strong_run: str | None = None,
) -> dict[str, Any]:
    """The guaranteed threshold of a cheap run on the items people rated, the tests that chose it, and (with
    `strong_run`, the strong judge on the same items) what the strong judge does on the items sent on."""
    if within < 0:
        raise InputError(f"--within is a distance on the scale, 0 or more, got {within}", field="within")
    run = store.get_run(cheap_run)
    judge = _check_judge(store, run)
    scale = store.get_prompt(run.prompt_id).dimension.scale
    ids, rows, people = _calibration_rows(store, run, human)
    if not rows:
        raise InputError(f"no item of run {run.id} has a human rating {human!r}", field="human")
    u = np.array([uncertainty(r, signal) for r in rows])
    agree = _agrees(rows, people, within)
    g = fixed_sequence(u, agree, target, delta, signal_upper(signal, scale), GRID_POINTS, min_kept)
    out = {
        **g.to_dict(),
        "signal": signal,
        "within": within,
        "human": human,
        "calibration": {
            "run": run.id,
            "prompt": run.prompt_id,
            "dataset": run.dataset_id,
            "items": g.items,
            "scored": int(np.isfinite(u).sum()),
            **judge,
        },
        "overall_agreement": float(agree.mean()),
    }
    if strong_run:
        kept = u <= g.threshold if g.threshold is not None else np.zeros(len(u), dtype=bool)
        out["strong"] = _strong_side(store, run, strong_run, ids, people, kept, agree, within)
    return {**out, "covers": covers(out), "does_not_cover": list(DOES_NOT_COVER)}


def _strong_side(
    store: Store,
    cheap: Run,
    strong_run: str,
    ids: list[str],
    people: np.ndarray,
    kept: np.ndarray,
    cheap_agree: np.ndarray,
    within: float,
) -> dict[str, Any]:
    """The strong judge's agreement on the calibration items the threshold sends on, and the whole cascade's."""
    strong = store.get_run(strong_run)
    if strong.dataset_id != cheap.dataset_id:
        raise InputError(
            "the strong run is on another dataset version than the cheap run", field="strong-run"
        )
    judged = {row["item_id"]: row for row in store.judgments(strong.id)}
    strong_agree = _agrees([judged.get(i) for i in ids], people, within)
    sent = ~kept
    return {
        "run": strong.id,
        "sent": int(sent.sum()),
        "agreement_on_sent": float(strong_agree[sent].mean()) if sent.any() else None,
        "cascade_agreement": float(np.where(kept, cheap_agree, strong_agree).mean()),
        "guaranteed": False,
    }


def freeze_guaranteed(
    store: Store, name: str, calibration: dict[str, Any], strong: str
) -> tuple[dict[str, Any], bool]:
    """Freeze a cascade at a calibration's guaranteed threshold, with its target, delta and where it came from."""
    if calibration.get("threshold") is None:
        raise InputError(
            f"no threshold reaches {calibration['target']:.0%} agreement at delta "
            f"{calibration['delta']:g} on these {calibration['items']} items, so there is no guarantee "
            "to freeze: rate more calibration items, lower the target, raise delta or widen --within",
            field="target",
        )
    guarantee = {
        k: calibration[k] for k in ("target", "delta", "within", "human", "min_kept", "grid", "method")
    }
    guarantee["calibration"] = {
        **calibration["calibration"],
        "kept": calibration["kept"],
        "disagree": calibration["disagree"],
        "kept_share": calibration["kept_share"],
        "agreement": calibration["agreement"],
        "lower_bound": calibration["lower_bound"],
    }
    return freeze_cascade(
        store,
        name,
        calibration["calibration"]["prompt"],
        strong,
        calibration["signal"],
        calibration["threshold"],
        guarantee=guarantee,
    )


def guarantee_report(
    cascade: dict[str, Any], result: dict[str, Any], people: dict[str, float] | None = None
) -> dict[str, Any] | None:
    """For a guaranteed cascade scored on new data (`cascade_result`): the share kept beside the calibration's
    (a share far from it hints that the new items are not drawn like the calibration items), the agreement on the
    kept items where people rated them, and what the guarantee does and does not cover. None without a guarantee."""
    g = cascade.get("guarantee")
    if not g:
        return None
    rows = result["rows"]
    kept = [r for r in rows if r["by"] == "cheap"]
    n, share, cal = len(rows), len(kept) / len(rows) if rows else 0.0, g["calibration"]
    out: dict[str, Any] = {
        "target": g["target"],
        "delta": g["delta"],
        "within": g["within"],
        "threshold": cascade["threshold"],
        "items": n,
        "kept": len(kept),
        "kept_share": share,
        "calibration_kept_share": cal["kept_share"],
        "calibration_items": cal["items"],
        "shift_warning": _shift(share, n, cal["kept_share"], cal["items"]),
        "covers": covers(g),
        "does_not_cover": list(DOES_NOT_COVER),
    }
    rated = [r for r in kept if people and people.get(r["id"]) is not None and r.get("score") is not None]
    if rated and people:
        hits = sum(abs(float(r["score"]) - float(people[r["id"]])) <= g["within"] + 1e-9 for r in rated)
        out["rated_kept"], out["rated_kept_agreement"] = len(rated), hits / len(rated)
    return out


def _shift(share: float, n: int, calibrated: float, n_cal: int) -> str:
    """A caution when the kept share differs from the calibration's by more than chance would (3 standard errors):
    the cheap judge is surer or less sure than on the calibration items, so the new items may be drawn otherwise."""
    if not n or not n_cal:
        return ""
    pooled = (share * n + calibrated * n_cal) / (n + n_cal)
    se = math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / n + 1 / n_cal))
    if abs(share - calibrated) <= 3 * se:
        return ""
    return (
        f"the cheap judge kept {share:.0%} of these items against {calibrated:.0%} of the calibration items: "
        "more than chance explains, so these items may not be drawn like the calibration items, and the "
        "guarantee may not hold for them"
    )
