"""Score the same items K times before freezing, to see how stable a prompt's ratings are.

A frozen prompt with a library dataset is run K times through the runner (stored runs, no judge cache);
a draft, or any prompt whose steps are regenerated each time, is judged in memory and nothing is stored.
The statistics are `stats.stability`; `stability_check` turns a report into a pre-freeze finding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from ..errors import GEvalError, JudgeError
from ..judgment import Judgment
from ..prompts import content_hash
from ..prompts.checks import Check
from ..prompts.inputs import require_inputs
from ..prompts.steps import generate_steps
from ..run import RunOptions
from ..run.one_item import CallPolicy, judge_item
from ..run.plan import RunScope, plan_run, plan_settings, record_run, start_run
from ..stats.repeatability import StabilityReport, stability
from ..store import Store
from ..types import Dimension, FrozenPrompt, Item, Judge, JudgeSettings

STEPS_TEMPERATURE = 0.7  # steps regenerated at temperature 0 would come out the same every time
RepeatDone = Callable[[int, int], None]  # (repeats done, repeats asked for), called in the caller's thread


@dataclass
class StabilityRun:
    """A stability report with how it was made: settings, warnings, stored runs, regenerated steps."""

    report: StabilityReport
    prompt: str
    mode: str
    temperature: float
    regenerate_steps: bool = False
    warnings: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)  # stored runs (frozen prompt, steps kept)
    steps: list[list[str]] = field(default_factory=list)  # the steps of each repeat, when regenerated
    failures: list[str] = field(default_factory=list)  # step generations that gave no steps

    def to_dict(self) -> dict[str, Any]:
        """The report's dict plus prompt, mode, temperature, regenerate_steps, warnings, run_ids, steps."""
        return {
            **self.report.to_dict(),
            "prompt": self.prompt,
            "mode": self.mode,
            "temperature": self.temperature,
            "regenerate_steps": self.regenerate_steps,
            "warnings": self.warnings,
            "run_ids": self.run_ids,
            "steps": self.steps,
            "failures": self.failures,
        }


def stability_run_from_dict(data: dict[str, Any]) -> StabilityRun:
    """The StabilityRun `to_dict` wrote (a stability job's stored result, read back by a page)."""
    from ..stats.repeatability import report_from_dict

    return StabilityRun(
        report_from_dict(data),
        data["prompt"],
        data["mode"],
        data["temperature"],
        data.get("regenerate_steps", False),
        list(data.get("warnings") or []),
        list(data.get("run_ids") or []),
        list(data.get("steps") or []),
        list(data.get("failures") or []),
    )


def draft_prompt(dimension: Dimension, name: str = "draft") -> FrozenPrompt:
    """An in-memory FrozenPrompt of a draft (version 0, never stored), so it can be rendered and judged."""
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return FrozenPrompt(content_hash(dimension), name, 0, dimension, created)


def repeat_warnings(settings: JudgeSettings, regenerate_steps: bool) -> list[str]:
    """What repeats in these settings can and cannot show."""
    if regenerate_steps:
        return []
    if settings.mode in ("logprobs", "auto"):
        return [
            "in logprobs mode the rating's probabilities are read before any sampling (the temperature does "
            "not change them), so repeats only measure server nondeterminism; --regenerate-steps measures "
            "how much the generated steps move the ratings"
        ]
    if settings.temperature == 0:
        return [
            "repeats at temperature 0 only measure server nondeterminism; use the temperature the prompt "
            "will run at (above 0) or --regenerate-steps"
        ]
    return []


def repeat_seeds(base: int | None, repeats: int) -> list[int | None]:
    """One seed per repeat: base, base+1, ... (a fixed seed would make the repeats copies); None stays None."""
    return [None if base is None else base + i for i in range(repeats)]


def judge_one(
    prompt: FrozenPrompt,
    item: Item,
    judge: Judge,
    settings: JudgeSettings,
    seed: int | None = None,
    max_attempts: int = 5,
    cancel: threading.Event | None = None,
    reducer: str = "mean",
) -> Judgment:
    """One item judged directly (no store): auto mode falls back to sampling; a failed call is an error judgment."""
    policy = CallPolicy(seed=seed, reducer=reducer, max_attempts=max_attempts, cancel=cancel)
    return judge_item(prompt, item, judge, settings, policy=policy, errors="judgment")


def judge_items(
    prompt: FrozenPrompt,
    items: Sequence[Item],
    judge: Judge,
    settings: JudgeSettings,
    seed: int | None = None,
    concurrency: int = 1,
    cancel: threading.Event | None = None,
    reducer: str = "mean",
) -> list[Judgment]:
    """Every item judged once in memory, in item order (calls in worker threads, results collected here)."""
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(
            pool.map(
                lambda item: judge_one(prompt, item, judge, settings, seed, cancel=cancel, reducer=reducer),
                items,
            )
        )


def _regenerated(
    prompt: FrozenPrompt, judge: Judge, settings: JudgeSettings, temperature: float, seed: int | None
) -> tuple[FrozenPrompt, list[str]]:
    """The prompt with freshly generated steps (in memory), and those steps."""
    steps, version = generate_steps(prompt.dimension, judge, settings, temperature=temperature, seed=seed)
    dimension = replace(prompt.dimension, steps=tuple(steps), steps_model=version)
    return draft_prompt(dimension, prompt.name), steps


def _stored_repeat(
    prompt: FrozenPrompt,
    items: Sequence[Item],
    judge: Judge,
    store: Store,
    dataset_id: str,
    settings: JudgeSettings,
    concurrency: int,
    cancel: threading.Event | None,
    label: str,
) -> tuple[str, list[dict[str, Any]]]:
    """One repeat as a stored run of the frozen prompt (planned like every run): (run id, its judgments)."""
    plan = plan_run(
        store,
        prompt,
        dataset_id,
        scope=RunScope(item_ids=tuple(i.id for i in items), new_run=True, marks={"stability": label}),
        concurrency=concurrency,
        options=RunOptions(use_cache=False),
        judge=plan_settings(settings, store),
    )
    plan = record_run(store, plan)
    assert plan.run_id is not None  # a recorded plan names its run
    summary = start_run(store, plan, judge, cancel=cancel)
    if summary.status != "done":
        raise JudgeError(
            f"{label}: run {plan.run_id} {summary.status}" + (f": {summary.error}" if summary.error else "")
        )
    return plan.run_id, store.judgments(plan.run_id)


def run_stability(
    prompt: FrozenPrompt,
    items: Sequence[Item],
    judge: Judge,
    repeats: int,
    *,
    settings: JudgeSettings | None = None,
    store: Store | None = None,
    dataset_id: str | None = None,
    regenerate_steps: bool = False,
    steps_temperature: float | None = None,
    seed: int | None = None,
    concurrency: int = 1,
    on_repeat: RepeatDone | None = None,
    cancel: threading.Event | None = None,
) -> StabilityRun:
    """Score `items` `repeats` times and report per-item flip rate and score spread.

    With `store` and `dataset_id` (a prompt frozen in that library) and the steps kept, each repeat is a
    stored run without the judge cache; otherwise items are judged in memory. Repeat i uses seed
    `seed`+i (default: the settings' seed; None stays unseeded). Regenerated steps are written at
    `steps_temperature` (default: the prompt's temperature when above 0, else 0.7).
    """
    if repeats < 2:
        raise GEvalError(f"a stability check needs at least 2 repeats, got {repeats}")
    settings = settings or prompt.dimension.judge
    require_inputs(prompt, items, "the data")  # before any judge call
    seeds = repeat_seeds(settings.seed if seed is None else seed, repeats)
    steps_t = (
        steps_temperature if steps_temperature is not None else (settings.temperature or STEPS_TEMPERATURE)
    )
    result = StabilityRun(
        StabilityReport(repeats),
        prompt.label,
        settings.mode,
        settings.temperature,
        regenerate_steps,
        repeat_warnings(settings, regenerate_steps),
    )
    lists: list[list[Any]] = []
    for i, run_seed in enumerate(seeds):
        label = f"stability repeat {i + 1} of {repeats}"
        use, run_settings = prompt, replace(settings, seed=run_seed)
        if regenerate_steps:
            try:
                use, steps = _regenerated(prompt, judge, settings, steps_t, run_seed)
            except JudgeError as exc:
                result.failures.append(f"repeat {i + 1}: {exc}")
                continue
            result.steps.append(steps)
        if store is not None and dataset_id is not None and not regenerate_steps:
            run_id, judged = _stored_repeat(
                use, items, judge, store, dataset_id, run_settings, concurrency, cancel, label
            )
            result.run_ids.append(run_id)
            lists.append(judged)
        else:
            lists.append(judge_items(use, items, judge, run_settings, concurrency=concurrency, cancel=cancel))
        if on_repeat is not None:
            on_repeat(i + 1, repeats)
    if len(lists) < 2:
        raise JudgeError(
            f"only {len(lists)} of {repeats} repeats could be scored: {'; '.join(result.failures)}"
        )
    result.report = stability(lists)
    return result


def dimension_stability(
    dimension: Dimension, items: Sequence[Item], judge: Judge, repeats: int = 3, **options: Any
) -> StabilityRun:
    """`run_stability` of a draft dimension in memory (the Design page's entry point); nothing is stored."""
    return run_stability(draft_prompt(dimension, dimension.name or "draft"), items, judge, repeats, **options)


def stability_check(report: StabilityReport | StabilityRun) -> Check:
    """The report as a pre-freeze finding: "warning" when ratings change or scores move, else "info"."""
    run = report if isinstance(report, StabilityRun) else None
    found = report.report if isinstance(report, StabilityRun) else report
    unstable = found.items_changed or found.items_moved_half_point
    message = found.summary()
    if run is not None and run.regenerate_steps:
        message += " with the steps regenerated each time"
    if unstable:
        message += (
            "; ratings that change between repeats are noise the frozen prompt will carry: "
            "make the anchors and steps more specific, or score with n > 1 replies"
        )
    return Check("warning" if unstable else "info", "stability", message)
