"""Drift watch: has the judge changed under the same name since a reference run of a prompt on human-rated items?

`freeze_watch` freezes an anchor set: the items of a finished reference run that people rated (the dev side of a
split dataset; never an example item of the prompt), their reference scores, the judge that gave them and the model
version it reported. `drift_check` re-scores the anchors (or a seeded sample of them) through the one plan, with the
reference run's judge and server unless told otherwise and never from the judge cache, and appends an unalterable
check to the watch: per-item moves, agreement with people then and now, model versions, and the anytime-valid test
(stats.eprocess), whose e-value carries over from check to check. The verdict: drift once the e-value has reached
1/alpha, at any check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from ..errors import InputError, JudgeError, NotFoundError
from ..prompts import canonical_hash
from ..prompts.names import check_new_name
from ..records import Dataset, Run
from ..run.options import RunOptions
from ..run.plan import (
    JudgeChoice,
    RunPlan,
    RunScope,
    different_judges_note,
    judge_difference,
    plan_run,
    plan_settings,
    record_run,
    start_run,
)
from ..run.splits import sealed_run, sealed_view
from ..stats.eprocess import ALPHA, Wealth
from ..store import Store
from ..types import FrozenPrompt, Judge, JudgeSettings
from .drift_figures import check_body, watch_seed

__all__ = [
    "KIND",
    "CHECK_KIND",
    "drift_check",
    "freeze_watch",
    "get_watch",
    "pending_runs",
    "plan_check",
    "check_task",
    "record_check",
    "repeat_reference",
    "run_check",
    "watch_checks",
    "watch_report",
]

KIND, CHECK_KIND = "drift", "drift-check"
MIN_ANCHORS = 5
WATCH_FIELDS = (
    "prompt",
    "dataset",
    "human",
    "runs",
    "items",
    "reference",
    "judge",
    "model_versions",
    "alpha",
    "side",
    "split",
)


def _human_field(dataset: Dataset, wanted: str | None, dimension: str) -> str:
    """The human rating the anchors are read against: the one named, else the prompt's dimension's (any case), else
    the only one."""
    names = list(dataset.human)
    if wanted is not None:
        if wanted not in names:
            raise InputError(
                f"dataset {dataset.label} has no human rating {wanted!r} (has: {', '.join(names) or 'none'})",
                field="human",
            )
        return wanted
    named = [n for n in names if n.lower() == dimension.lower()]
    if named:
        return named[0]
    if len(names) == 1:
        return names[0]
    if not names:
        raise InputError(
            f"dataset {dataset.label} has no human ratings: an anchor set needs people's ratings "
            "(import a version of it with them)",
            field="human",
        )
    raise InputError(
        f"dataset {dataset.label} has several human ratings ({', '.join(names)}): name one with --human",
        field="human",
    )


def _reference_runs(store: Store, prompt_id: str, dataset_id: str, run_ids: list[str]) -> list[Run]:
    """The reference runs, each finished, of this prompt on this dataset version, all by one judge."""
    if not run_ids:
        raise InputError("an anchor set needs a reference run: name a finished run with --run", field="run")
    runs = [store.get_run(r) for r in run_ids]
    for run in runs:
        if run.prompt_id != prompt_id or run.dataset_id != dataset_id:
            raise InputError(f"run {run.id} is not a run of this prompt on this dataset version", field="run")
        if run.status != "done":
            raise InputError(
                f"run {run.id} is {run.status}, not finished: finish it (`geval score --run "
                f"{run.id}`) before it can be a reference",
                field="run",
            )
        differ = judge_difference(runs[0].judge, run.judge)
        if differ:
            raise InputError(
                f"runs {runs[0].id} and {run.id} were scored by different judges "
                f"({', '.join(differ)}): a reference is one judge",
                field="run",
            )
    return runs


def freeze_watch(
    store: Store,
    name: str,
    prompt_ref: str,
    dataset_ref: str,
    run_ids: list[str],
    human: str | None = None,
    alpha: float = ALPHA,
    repeat: bool = False,
    judge: Judge | None = None,
    on_plan: Callable[[RunPlan], None] | None = None,
) -> tuple[dict[str, Any], bool]:
    """(the watch, created): the anchor set of `prompt_ref` on `dataset_ref` from its finished reference run(s),
    frozen and hashed under `name` (a new version when the body differs); `repeat` first scores the anchors once
    more with the reference's judge (`repeat_reference`; `on_plan` shows its plan first), as a second reference run."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha is the false-alarm rate, between 0 and 1, got {alpha}", field="alpha")
    prompt, dataset = store.get_prompt(prompt_ref), store.get_dataset(dataset_ref)
    field = _human_field(dataset, human, prompt.dimension.name)
    runs = _reference_runs(store, prompt.id, dataset.id, run_ids)
    items, scores, scope = _anchors(store, prompt, dataset, runs, field)
    if repeat:
        runs = _reference_runs(
            store,
            prompt.id,
            dataset.id,
            [*run_ids, repeat_reference(store, runs[0].id, items, judge, on_plan=on_plan)],
        )
        items, scores, scope = _anchors(store, prompt, dataset, runs, field)
    reference = {
        i: [float(s[i]["score"]) for s in scores if (s.get(i) or {}).get("score") is not None] for i in items
    }
    versions = sorted(
        {str(s[i]["model_version"]) for s in scores for i in items if (s.get(i) or {}).get("model_version")}
    )
    body = {
        "prompt": prompt.id,
        "dataset": dataset.id,
        "human": field,
        "runs": [r.id for r in runs],
        "items": items,
        "reference": reference,
        "judge": asdict(runs[0].judge),
        "model_versions": versions,
        "alpha": float(alpha),
        "side": scope["side"],
        "split": scope["split"],
    }
    name = check_new_name(name, store.record_keys(KIND), "drift watch")
    record, created = store.freeze_record(KIND, name, {**body, "id": canonical_hash(body)})
    return _watch(name, record), created


def _anchors(
    store: Store, prompt: FrozenPrompt, dataset: Dataset, runs: list[Run], field: str
) -> tuple[list[str], list[dict[str, dict[str, Any]]], dict[str, Any]]:
    """(the anchor ids in dataset order, each run's judgments by item, the seal's scope): the first run's scored
    items that people rated, on the dev side of a split dataset, never an example item of the prompt."""
    view, scope = sealed_run(store, runs[0])  # the dev side of a split dataset: the seal decides
    people = view.human_means(dataset.id, field)
    examples = set(prompt.dimension.example_ids)
    scores = [{r["item_id"]: r for r in view.judgments(run.id)} for run in runs]
    items = [
        i.id
        for i in view.dataset_items(dataset.id)
        if i.id in people and i.id not in examples and (scores[0].get(i.id) or {}).get("score") is not None
    ]
    if len(items) < MIN_ANCHORS:
        raise InputError(
            f"only {len(items)} items of run {runs[0].id} have a score and a human rating {field!r}"
            f"{' on the dev side' if scope['side'] else ''}: an anchor set needs at least "
            f"{MIN_ANCHORS}",
            field="run",
        )
    return items, scores, scope


def _watch(name: str, record: dict[str, Any]) -> dict[str, Any]:
    """A stored version as callers read it (name, version, created_at added), checked against its hash."""
    stored = {**record["body"], "name": name, "version": record["seq"], "created_at": record["created_at"]}
    if canonical_hash({k: stored[k] for k in WATCH_FIELDS}) != stored["id"]:
        raise InputError(
            f"drift watch {name}@{record['seq']} does not match its hash: it was edited", field="watch"
        )
    return stored


def get_watch(store: Store, ref: str) -> dict[str, Any]:
    """A frozen drift watch by name (latest version) or name@version, checked against its hash."""
    name, _, version = ref.partition("@")
    found = [r for r in store.records(KIND, name) if not version or str(r["seq"]) == version]
    if not found:
        known = ", ".join(store.record_keys(KIND)) or "none"
        raise NotFoundError(f"no drift watch {ref!r} (watches: {known}); `geval drift freeze` makes one")
    return _watch(name, found[-1])


def watch_checks(store: Store, watch: dict[str, Any]) -> list[dict[str, Any]]:
    """The watch's checks, oldest first, each with its number (`seq`), time and row hash."""
    return [
        {**r["body"], "seq": r["seq"], "at": r["created_at"], "row_hash": r["row_hash"]}
        for r in store.records(CHECK_KIND, watch["id"])
    ]


def sample_ids(watch: dict[str, Any], check: int, sample: int | None, seed: int | None = None) -> list[str]:
    """The anchors a check re-scores, in anchor order: all, or `sample` of them drawn by a seed fixed by the watch
    (never by a score) and the check's number."""
    items = list(watch["items"])
    if sample is None or sample >= len(items):
        return items
    if sample < 1:
        raise InputError(f"--sample is how many anchors to re-score, 1 or more, got {sample}", field="sample")
    rng = np.random.default_rng([watch_seed(watch), check, seed or 0])
    chosen = set(rng.choice(len(items), size=sample, replace=False).tolist())
    return [item for k, item in enumerate(items) if k in chosen]


def plan_check(
    store: Store,
    watch: dict[str, Any],
    sample: int | None = None,
    choice: JudgeChoice | None = None,
    seed: int | None = None,
    concurrency: int | None = None,
) -> RunPlan:
    """The plan of the next check's run: the anchors (or a sample), a new run never answered from the cache, with
    the reference's judge and server unless `choice` names another."""
    check = len(watch_checks(store, watch)) + 1
    ids = sample_ids(watch, check, sample, seed)
    prompt = store.get_prompt(watch["prompt"])
    planned = (
        None
        if choice is not None and choice.names_anything
        else plan_settings(JudgeSettings(**watch["judge"]), store)
    )
    marks = {
        "drift": {"watch": watch["id"], "name": watch["name"], "version": watch["version"], "check": check}
    }
    return plan_run(
        store,
        prompt,
        watch["dataset"],
        choice,
        RunScope(item_ids=tuple(ids), new_run=True, marks=marks),
        concurrency=concurrency,
        options=RunOptions(use_cache=False),
        judge=planned,
    )


def record_check(store: Store, watch: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Append the check of a finished run of the watch's anchors: the test's step and the figures; the record."""
    run = store.get_run(run_id)
    if run.prompt_id != watch["prompt"] or run.dataset_id != watch["dataset"]:
        raise InputError(f"run {run.id} is not a run of the watch's prompt on its anchor set", field="run")
    if run.status != "done":
        raise JudgeError(
            f"the check's run {run.id} ended {run.status}: nothing was recorded; resume it with "
            f"`geval score --run {run.id}` or check again"
        )
    checks = watch_checks(store, watch)
    if any(c["run"] == run.id for c in checks):
        raise InputError(f"run {run.id} is recorded as a check of this watch already", field="run")
    rows = {r["item_id"]: r for r in store.judgments(run.id) if r["item_id"] in watch["reference"]}
    view, _ = sealed_view(store, watch["dataset"])  # the dev side of a split dataset, as the anchors are
    reference = {r["item_id"]: r for r in store.judgments(watch["runs"][0]) if r["item_id"] in rows}
    people = view.human_means(watch["dataset"], watch["human"])
    groups = {i.id: i.group for i in view.dataset_items(watch["dataset"])}
    body = {
        "run": run.id,
        "judge": run.plan.get("judge"),
        "other_judge": different_judges_note(watch["judge"], run.judge),
        **check_body(watch, checks, rows, reference, people, groups),
    }
    record, _ = store.freeze_record(CHECK_KIND, watch["id"], body, once=False)
    return {
        **record["body"],
        "seq": record["seq"],
        "at": record["created_at"],
        "row_hash": record["row_hash"],
    }


def pending_runs(store: Store, watch: dict[str, Any]) -> list[Run]:
    """Runs planned for this watch's checks that are not recorded as checks yet, oldest first (a page's check
    whose worker finished while no page was open)."""
    recorded = {c["run"] for c in watch_checks(store, watch)}
    runs = [
        r
        for r in store.list_runs(dataset=watch["dataset"])
        if (r.extra.get("drift") or {}).get("watch") == watch["id"] and r.id not in recorded
    ]
    return sorted(runs, key=lambda r: r.created_at)


def repeat_reference(
    store: Store,
    run_id: str,
    item_ids: list[str],
    judge: Judge | None = None,
    cancel: threading.Event | None = None,
    on_plan: Callable[[RunPlan], None] | None = None,
) -> str:
    """A second reference run: the items of finished run `run_id` scored again by its own judge and server, never
    from the cache, so the first check already knows how much the judge varies by itself; its run id."""
    run = store.get_run(run_id)
    prompt = store.get_prompt(run.prompt_id)
    planned = plan_settings(run.judge, store)
    scope = RunScope(item_ids=tuple(item_ids), new_run=True, marks={"drift_reference": run.id})
    plan = record_run(
        store,
        plan_run(
            store, prompt, run.dataset_id, None, scope, options=RunOptions(use_cache=False), judge=planned
        ),
    )
    if on_plan is not None:
        on_plan(plan)
    summary = start_run(store, plan, judge, cancel=cancel)
    if summary.status != "done":
        raise JudgeError(
            f"the repeat of run {run.id} ended {summary.status}"
            + (f" ({summary.error})" if summary.error else "")
            + ": nothing was frozen; freeze again"
        )
    return plan.recorded_id


def run_check(
    store: Store,
    watch: dict[str, Any],
    plan: RunPlan,
    judge: Judge | None = None,
    cancel: threading.Event | None = None,
    on_progress: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """Record and score the planned check's run (the one way into the runner), then append the check."""
    plan = record_run(store, plan)
    summary = start_run(store, plan, judge, cancel=cancel, on_progress=on_progress)
    if summary.status != "done":
        raise JudgeError(
            f"the check's run {plan.recorded_id} {summary.status}"
            + (f" ({summary.error})" if summary.error else "")
            + ": nothing was recorded; check again"
        )
    return record_check(store, watch, plan.recorded_id)


def drift_check(
    store: Store,
    ref: str,
    sample: int | None = None,
    judge: str | None = None,
    base_url: str | None = None,
    seed: int | None = None,
    judge_for: Judge | None = None,
) -> dict[str, Any]:
    """Python API: re-score watch `ref`'s anchors (or `sample` of them) and append the check; the watch's report
    with this check last (`verdict`: "drift" or "no drift")."""
    watch = get_watch(store, ref)
    choice = JudgeChoice(judge=judge, base_url=base_url, where="base_url=")
    run_check(store, watch, plan_check(store, watch, sample, choice, seed), judge_for)
    return watch_report(store, watch)


def watch_report(store: Store, watch: dict[str, Any]) -> dict[str, Any]:
    """The watch, its checks and the verdict so far: drift once any check's e-value reached 1/alpha."""
    checks = watch_checks(store, watch)
    alarm = next((c["alarm_at"] for c in checks if c.get("alarm_at")), None)
    summary = {
        k: watch[k]
        for k in (
            "name",
            "version",
            "id",
            "prompt",
            "dataset",
            "human",
            "runs",
            "model_versions",
            "alpha",
            "side",
            "created_at",
        )
    }
    return {
        "watch": {**summary, "anchors": len(watch["items"])},
        "checks": checks,
        "verdict": "drift" if alarm else "no drift",
        "alarm_at": alarm,
        "e_value": checks[-1]["e_value"] if checks else Wealth().e_value,
        "threshold": 1 / float(watch["alpha"]),
    }


def check_task(
    store: Store, spec: dict[str, Any], progress: Callable[[int, int], None], cancel: threading.Event
) -> dict[str, Any]:
    """A page's check as a task of the library (prompt_library.task_worker): spec {watch: name@version, sample,
    base_url}; the check as recorded."""
    watch = get_watch(store, spec["watch"])
    choice = JudgeChoice(base_url=spec.get("base_url"), where="the sidebar")
    plan = plan_check(store, watch, spec.get("sample"), choice)
    total = plan.total

    def done(count: int, *_: Any) -> None:
        progress(count, total)

    return run_check(store, watch, plan, cancel=cancel, on_progress=done)
