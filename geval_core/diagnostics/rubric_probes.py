"""Rubric-form probes of a stored run: re-score a sample of its items with the rubric shown in another form (the
anchors in reverse order, the labels shifted, the scale reversed) and report how far scores and rankings move.

Each variant is a prompt of its own (its own content hash), frozen under the probed prompt's name with a
`.probe-VARIANT` suffix, so it is never a version of the user's prompt; its run carries what it probes
(`rubric_probe`: the run, the variant and the map of its ratings back), so its result can be read at any time. The
runs are planned by `plan_run` with the probed run's own judge and server, on the dev side of a split dataset, and a
repeated probe is answered from the judge cache.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import GEvalError, InputError
from ..judgment import Judgment
from ..prompts.rubric_forms import VARIANTS, RubricForm, derive, is_probe_name, probe_name
from ..records import Run
from ..stats.rubric_moves import score_moves, top_changes, top_rating
from ..store import Store
from ..types import Dimension, FrozenPrompt, Judge
from .bias_probes import default_human

if TYPE_CHECKING:
    from ..run.plan import RunPlan
    from ..run.session import Progress

__all__ = [
    "MARK",
    "VARIANTS",
    "is_probe_name",
    "plan_rubric_probe",
    "probe_name",
    "rubric_probe",
    "rubric_probe_runs",
    "rubric_result",
]

MARK = "rubric_probe"  # the run field naming what a rubric-form probe run probes
ItemsDone = Callable[[int, int], None]


class FreezingStore(Store, Protocol):
    """A store that can freeze a prompt (the library can; the Store protocol itself only reads prompts)."""

    def freeze(self, dimension: Dimension, name: str | None = None) -> Any:
        """Freeze a dimension under a name; identical content returns the existing version."""
        ...


def sample_ids(library: Store, run: Run, prompt: FrozenPrompt, sample: int, seed: int) -> list[str]:
    """Up to `sample` of the run's scored items on the dev side of a split (never an example item), drawn with
    `seed`, in dataset order."""
    from ..run.splits import evaluation_ids

    allowed, _ = evaluation_ids(library, run.dataset_id, "dev", prompt.dimension.example_ids)
    scored = [
        row["item_id"]
        for row in library.judgments(run.id)
        if row.get("score") is not None and (allowed is None or row["item_id"] in allowed)
    ]
    if not scored:
        raise InputError(
            f"run {run.id} has no scored item to probe"
            + (" on the dev side of its dataset's split" if allowed is not None else "")
        )
    picked = set(random.Random(seed).sample(scored, min(sample, len(scored))))
    return [i for i in scored if i in picked]


def plan_rubric_probe(
    library: FreezingStore, run_id: str, sample: int = 20, variants: Sequence[str] = VARIANTS, seed: int = 0
) -> list[RunPlan]:
    """One recorded run per variant, planned with the probed run's own judge and server on the same sampled items;
    every variant is derived before any is frozen, and planned before any run is recorded, so a form the prompt
    cannot take, or a judge that cannot score, records no run."""
    from ..run.plan import RunScope, plan_run, plan_settings, record_run

    run = library.get_run(run_id)
    if run.extra.get(MARK):
        raise InputError(
            f"run {run.id} is itself a rubric-form probe; probe the run it probes, {run.extra[MARK]['of']}"
        )
    prompt = library.get_prompt(run.prompt_id)
    forms = [derive(prompt.dimension, v) for v in dict.fromkeys(variants)]
    ids = tuple(sample_ids(library, run, prompt, sample, seed))
    judge = plan_settings(run.judge, library)  # the probed run's own judge
    plans = []
    for form in forms:
        frozen = library.freeze(form.dimension, name=probe_name(prompt.name, form.variant)).prompt
        marks = {
            MARK: {
                "of": run.id,
                "variant": form.variant,
                "sign": form.sign,
                "offset": form.offset,
                "mapping": form.mapping,
                "rewritten": form.rewritten,
                "seed": seed,
            }
        }
        plans.append(
            plan_run(
                library,
                frozen,
                run.dataset_id,
                judge=judge,
                scope=RunScope(item_ids=ids, new_run=True, marks=marks),
            )
        )
    return [record_run(library, plan) for plan in plans]


def rubric_probe_runs(library: Store, run_id: str) -> list[Run]:
    """The rubric-form probe runs of a run, newest first."""
    return [r for r in library.list_runs() if (r.extra.get(MARK) or {}).get("of") == run_id]


def _latest_done(library: Store, run_id: str) -> list[str]:
    """The newest finished probe run of each variant."""
    latest: dict[str, str] = {}
    for probe in rubric_probe_runs(library, run_id):
        if probe.status == "done":
            latest.setdefault(probe.extra[MARK]["variant"], probe.id)
    return [latest[v] for v in VARIANTS if v in latest]


def rubric_result(library: Store, run_id: str, probe_run_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Per variant and per item, how far the probe runs' scores (mapped back) moved from the run's own, read from
    the stored runs (default: the newest finished probe of each variant)."""
    run = library.get_run(run_id)
    prompt = library.get_prompt(run.prompt_id)
    human = default_human(library.get_dataset(run.dataset_id), prompt)
    probes = [
        library.get_run(p)
        for p in (probe_run_ids if probe_run_ids is not None else _latest_done(library, run.id))
    ]
    if not probes:
        raise InputError(
            f"run {run.id} has no finished rubric-form probe: `geval probe rubric {run.id}` runs one"
        )
    ids = list(dict.fromkeys(i for p in probes for i in p.item_ids or ()))
    original = _rows(library, run.id, ids)
    wanted = set(ids)
    items = {i.id: i for i in library.dataset_items(run.dataset_id) if i.id in wanted}
    ratings = [items[i].human.get(human) if human and i in items else None for i in ids]
    table: list[dict[str, Any]] = [
        {"id": i, "original": (original.get(i) or {}).get("score"), "human": r}
        for i, r in zip(ids, ratings, strict=True)
    ]
    variants = [
        _variant(library, probe, ids, original, ratings if human else None, table) for probe in probes
    ]
    return {
        "run": run.id,
        "prompt": run.prompt_label,
        "human": human,
        "sample": len(ids),
        "variants": variants,
        "per_item": table,
    }


def _rows(library: Store, run_id: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    wanted = set(ids)
    return {row["item_id"]: row for row in library.judgments(run_id) if row["item_id"] in wanted}


def _variant(
    library: Store,
    probe: Run,
    ids: list[str],
    original: dict[str, dict[str, Any]],
    ratings: list[float | None] | None,
    table: list[dict[str, Any]],
) -> dict[str, Any]:
    """One variant's figures; its mapped-back scores are added to the per-item table under the variant's name."""
    mark = probe.extra[MARK]
    form = RubricForm(mark["variant"], Dimension("", ""), int(mark["sign"]), int(mark["offset"]))
    rows = _rows(library, probe.id, ids)
    mapped = [_mapped(form, (rows.get(i) or {}).get("score")) for i in ids]
    tops = [
        _mapped(
            form, top_rating((rows.get(i) or {}).get("distribution"), (rows.get(i) or {}).get("top_rating"))
        )
        for i in ids
    ]
    first = [
        top_rating((original.get(i) or {}).get("distribution"), (original.get(i) or {}).get("top_rating"))
        for i in ids
    ]
    for row, value in zip(table, mapped, strict=True):
        row[form.variant] = value
    return {
        "variant": form.variant,
        "probe_run": probe.id,
        "probe_prompt": probe.prompt_label,
        "mapping": form.mapping,
        "rewritten": mark.get("rewritten", 0),
        "status": probe.status,
        "unscored": sum(1 for v in mapped if v is None),
        **score_moves([row["original"] for row in table], mapped, ratings),
        **top_changes(first, tops),
    }


def _mapped(form: RubricForm, value: float | None) -> float | None:
    return None if value is None else form.to_original(float(value))


def rubric_probe(
    library: FreezingStore,
    run_id: str,
    judge: Judge | None = None,
    sample: int = 20,
    variants: Sequence[str] = VARIANTS,
    seed: int = 0,
    *,
    on_plan: Callable[[RunPlan], None] | None = None,
    on_items: ItemsDone | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Plan, score and report a rubric-form probe of a run; `on_plan` sees each plan before anything is scored,
    `on_items(done, total)` the items scored over all variants."""
    from ..run.plan import start_run

    plans = plan_rubric_probe(library, run_id, sample, variants, seed)
    for plan in plans:
        if on_plan is not None:
            on_plan(plan)
    total = sum(plan.total for plan in plans)
    for k, plan in enumerate(plans):
        start_run(
            library,
            plan,
            judge,
            cancel=cancel,
            on_progress=_progress(on_items, sum(p.total for p in plans[:k]), total),
        )
        if cancel is not None and cancel.is_set():
            raise GEvalError("stopped before every variant was scored")
    return rubric_result(library, run_id, [plan.recorded_id for plan in plans])


def _progress(on_items: ItemsDone | None, before: int, total: int) -> Progress | None:
    """A run's progress callback reporting the items done over all the probe's runs."""
    if on_items is None:
        return None
    report = on_items

    def progress(done: int, _total: int, _judgment: Judgment) -> None:
        report(before + done, total)

    return progress
