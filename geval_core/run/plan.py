"""One plan for every run: which judge answers, at which server, on which items of which side of a split,
checked before anything is recorded or sent. Every front end (the CLI, the app's job worker, the notebook API,
panels, cascades, align, the stability and perturbation checks) calls `plan_run` (or `plan_of_run` to resume a
stored run), shows `RunPlan.describe()`, and scores through `start_run`, the one way into the runner.

The server that will answer is decided here once: the one the caller named (a flag, the sidebar, an argument),
else the one the environment names (OPENAI_BASE_URL, ...), else the provider's own API. It is stored in the run's
judge settings, so it is part of the run's identity: the same command against another server is another run, and
a run is never resumed against a server other than the one that answered it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ConfigError, InputError
from ..prompts.inputs import require_inputs
from ..records import Dataset, Run
from ..store import Store
from ..types import FrozenPrompt, Item, Judge, JudgeSettings
from ..urls import check_base_url, shown_url
from .calls import probe_key, server_id
from .feed import StreamedItems
from .options import RunOptions, RunSummary
from .pacing import Gate
from .session import Progress

__all__ = [
    "RESUMABLE",
    "JudgeChoice",
    "PlannedJudge",
    "RunPlan",
    "RunScope",
    "estimate_judges",
    "plan_judge",
    "sample_items",
    "plan_of_run",
    "plan_settings",
    "plan_run",
    "record_run",
    "start_run",
]

# A run with the same prompt, data, judge, server and items is continued (or reported) rather than repeated.
RESUMABLE = ("running", "cancelled", "failed", "done")
# What differs between two judges: a difference between their runs is the judge's as well as the prompt's.
JUDGE_FIELDS = (
    "provider",
    "model",
    "base_url",
    "mode",
    "n",
    "temperature",
    "top_logprobs",
    "max_tokens",
    "seed",
    "reasoning_effort",
    "valid_mass_floor",
)


@dataclass(frozen=True)
class JudgeChoice:
    """What the caller asked of the judge; None keeps the prompt's frozen setting.

    `where` names the place the server came from in messages ("--base-url", "base_url=", "the sidebar").
    `api_key`: whether the caller hands a key over (a judge that takes none refuses it rather than drop it).
    """

    judge: str | None = None  # "openai:MODEL", "local", "local:/models/judge.gguf"
    base_url: str | None = None
    mode: str | None = None
    n: int | None = None
    temperature: float | None = None
    where: str = "--base-url"
    api_key: bool = False

    @property
    def names_anything(self) -> bool:
        """Whether the caller asked for anything beyond the prompt's own judge."""
        return any(v is not None for v in (self.judge, self.base_url, self.mode, self.n, self.temperature))


@dataclass(frozen=True)
class PlannedJudge:
    """The judge a run will use: its settings (the server in `base_url`), where the server came from, warnings."""

    settings: JudgeSettings
    server_from: str  # "given" | an environment variable's name | "default"
    warnings: tuple[str, ...] = ()
    model_version: str | None = None  # as last probed on this server; None: never probed
    probed: bool = False

    @property
    def server(self) -> str:
        """Who answers, as judgments record it: scheme://host[:port]/path, or the provider's name."""
        return server_id(self.settings.base_url, self.settings.provider)

    def describe(self) -> str:
        """ "judge: openai:gpt-4o at http://127.0.0.1:8080/v1 (from OPENAI_BASE_URL; model version ... as last
        probed)": the line every front end shows before a run starts."""
        return f"judge: {judge_label(self.settings)}{self._origin()}"

    def _origin(self) -> str:
        parts = [f"from {self.server_from}"] if self.server_from not in ("given", "default") else []
        if self.probed:
            parts.append(f"model version {self.model_version or 'not reported'} as last probed")
        elif takes_server(self.settings.provider):
            parts.append("never probed on this server")
        return f" ({'; '.join(parts)})" if parts else ""


def judge_label(settings: JudgeSettings) -> str:
    """provider:model at the server (or in process): how every page and command names a run's judge."""
    from ..providers.registry import find_spec

    spec = find_spec(settings.provider)
    if settings.base_url:
        where = f"at {shown_url(settings.base_url)}"
    elif spec is not None and not spec.takes_server:
        where = "in process"
    else:
        where = f"at {spec.label if spec else settings.provider}'s own API"
    mode = (
        "" if settings.mode == "logprobs" else f", {settings.mode} n={settings.n} t={settings.temperature:g}"
    )
    return f"{settings.judge_id} {where}{mode}"


def takes_server(provider: str) -> bool:
    """Whether the provider's judge sends requests to a server one can name (False: it runs in process)."""
    from ..providers.registry import find_spec

    spec = find_spec(provider)
    return spec is not None and spec.takes_server


def judge_difference(
    first: Mapping[str, Any] | JudgeSettings, second: Mapping[str, Any] | JudgeSettings
) -> list[str]:
    """The judge settings in which two runs differ (provider, model, server, decoding); empty: the same judge."""
    a, b = (_as_dict(x) for x in (first, second))
    return [name for name in JUDGE_FIELDS if _norm(name, a.get(name)) != _norm(name, b.get(name))]


def _as_dict(value: Mapping[str, Any] | JudgeSettings) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(value) if isinstance(value, JudgeSettings) else {**asdict(JudgeSettings()), **dict(value)}


def _norm(name: str, value: Any) -> Any:
    return server_id(value, "") if name == "base_url" else value


def different_judges_note(
    first: Mapping[str, Any] | JudgeSettings, second: Mapping[str, Any] | JudgeSettings
) -> str | None:
    """The caution every comparison of two runs carries when their judges differ; None for the same judge."""
    differ = judge_difference(first, second)
    if not differ:
        return None
    names = ", ".join("server" if d == "base_url" else d for d in differ)
    return (
        f"different judges ({names}): {judge_label(_settings(first))} vs {judge_label(_settings(second))}; "
        "this difference is the judge's as well as the prompt's"
    )


def estimate_judges(first: Run, second: Run) -> dict[str, Any]:
    """The judges of two runs whose PPI estimates of the people's mean are compared, and what their difference
    means there: {"a", "b" (labels), "differ" (settings), "note" (None for one judge)}."""
    a, b = (judge_label(run.judge) for run in (first, second))
    differ = judge_difference(first.judge, second.judge)
    note = (
        None
        if not differ
        else (
            f"different judges ({', '.join('server' if d == 'base_url' else d for d in differ)}): {a} vs {b}. Each "
            "estimate is of the people's mean rating, corrected by its own rated items, so the difference stays the "
            "systems'; the judge-only difference is the judges' as well, and a weaker judge widens its run's interval"
        )
    )
    return {"a": a, "b": b, "differ": differ, "note": note}


def _settings(value: Mapping[str, Any] | JudgeSettings) -> JudgeSettings:
    return value if isinstance(value, JudgeSettings) else JudgeSettings(**_as_dict(value))


def plan_judge(
    frozen: JudgeSettings, choice: JudgeChoice | None = None, store: Store | None = None
) -> PlannedJudge:
    """The judge a run will use: the prompt's frozen settings with the caller's choices, the server resolved
    (named, else the environment's, else the provider's own), refused when a choice cannot be honoured."""
    from ..providers.registry import provider_spec

    choice = choice or JudgeChoice()
    changes = _judge_changes(frozen, choice)
    spec = provider_spec(changes.get("provider", frozen.provider))
    if choice.api_key and not spec.key_variables:
        raise ConfigError(
            f"the {spec.name} judge takes no key: the key given would go nowhere; leave it out, or "
            "name a judge that takes one"
        )
    base_url, server_from = _server(spec, choice)
    try:
        settings = replace(frozen, **changes, base_url=base_url)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    changed = [
        f"{name} {getattr(frozen, name)!r} -> {getattr(settings, name)!r}"
        for name in ("provider", "model", "mode", "n", "temperature")
        if getattr(settings, name) != getattr(frozen, name)
    ]
    warnings = (
        ()
        if not changed
        else (
            "overriding the prompt's frozen judge settings: "
            + ", ".join(changed)
            + ". Scores of this run are not "
            "comparable item by item with runs of the prompt's own settings; the run records what was used.",
        )
    )
    probe = _last_probe(store, settings)
    return PlannedJudge(
        settings, server_from, warnings, (probe or {}).get("model_version"), probe is not None
    )


def plan_settings(settings: JudgeSettings, store: Store | None = None) -> PlannedJudge:
    """The plan of judge settings decided already (a stability repeat's, a cascade side's): their server kept,
    else the environment's, else the provider's own."""
    return plan_judge(settings, JudgeChoice(base_url=settings.base_url, where="the judge's server"), store)


def _judge_changes(frozen: JudgeSettings, choice: JudgeChoice) -> dict[str, Any]:
    """The settings the caller changed: the judge (provider and model), mode, n, temperature."""
    changes: dict[str, Any] = {}
    if choice.judge is not None:
        from ..providers.registry import pinned_model, provider_spec

        provider, model = parse_judge(choice.judge)
        changes["provider"] = provider
        # `--judge NAME` alone (a provider that needs no model): the frozen model when it is that provider's.
        same = frozen.model if frozen.provider == provider else provider_spec(provider).default_model
        changes["model"] = pinned_model(provider, model) or same
    changes.update(
        {
            k: v
            for k, v in (("mode", choice.mode), ("n", choice.n), ("temperature", choice.temperature))
            if v is not None
        }
    )
    return changes


def parse_judge(ref: str) -> tuple[str, str | None]:
    """'openai:gpt-4o' -> ('openai', 'gpt-4o'); 'local' -> ('local', None); ConfigError for anything else."""
    from ..providers.registry import judge_parts

    return judge_parts(ref)


def _server(spec: Any, choice: JudgeChoice) -> tuple[str | None, str]:
    """(the base URL the judge will send to, where it came from): named, else the environment's, else None."""
    from ..providers.registry import key_variable

    if choice.base_url is not None and choice.base_url.strip():
        if not spec.takes_server:
            raise ConfigError(
                f"{choice.where} names a server, but the {spec.name} judge runs {_runs_where(spec)} and sends no "
                "request anywhere: to score at that server, name a judge that speaks to it too (for an "
                'OpenAI-compatible server: --judge openai:MODEL, or judge="openai:MODEL" in Python), or leave '
                "the server out"
            )
        return check_base_url(choice.base_url, key_variable(spec.name)), "given"
    for variable in spec.base_url_variables:
        value = os.environ.get(variable, "").strip()
        if value:
            return check_base_url(value, key_variable(spec.name)), variable
    return None, "default"


def _runs_where(spec: Any) -> str:
    return "in this process" if spec.name == "local" else "at its own service"


def _last_probe(store: Store | None, settings: JudgeSettings) -> dict[str, Any] | None:
    if store is None:
        return None
    history = store.get_setting(probe_key(settings)) or []
    return history[-1] if history else None


@dataclass(frozen=True)
class RunScope:
    """Which items, and which run: a side of a split, chosen ids, a run to resume, or always a new run.

    side None: the dev side of a split dataset (the test side is sealed), every item otherwise. `marks` are
    fields stored on the run (a stability repeat's label, who started it).
    """

    side: str | None = None
    item_ids: tuple[str, ...] | None = None
    run_id: str | None = None
    new_run: bool = False
    reuse: tuple[str, ...] = RESUMABLE
    marks: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunPlan:
    """Everything decided before a run: prompt, judge and server, dataset version, side and items, the checks'
    verdicts and the run options. `run_id` is set once the run is recorded (or found)."""

    prompt: FrozenPrompt
    judge: PlannedJudge
    dataset: Dataset
    scope: RunScope
    item_ids: tuple[str, ...] | None  # None: every item of the dataset version
    side: str | None
    split: Mapping[str, Any] | None
    options: RunOptions
    problems: tuple[str, ...] = ()  # why the judge cannot score at all in these settings (nothing starts)
    warnings: tuple[str, ...] = ()
    run_id: str | None = None
    judged_before: int = 0

    @property
    def settings(self) -> JudgeSettings:
        """The judge settings the run uses (the server included)."""
        return self.judge.settings

    @property
    def recorded_id(self) -> str:
        """The run's id once the plan is recorded (`record_run`); ConfigError before."""
        if self.run_id is None:
            raise ConfigError("this run is planned but not recorded yet: record_run(store, plan) records it")
        return self.run_id

    @property
    def total(self) -> int:
        """How many items the run covers."""
        return len(self.item_ids) if self.item_ids is not None else int(self.dataset.item_count)

    def describe(self) -> str:
        """What will happen, as one line: judge and server, prompt, data, side, items."""
        side = f", {self.side} side" if self.side else ""
        return (
            f"{self.judge.describe()}; prompt {self.prompt.label}; data {self.dataset.label}{side}, "
            f"{self.total} items"
        )

    def record(self) -> dict[str, Any]:
        """What the run keeps of its plan (beside its judge settings): where the server came from, the side."""
        return {
            "server": self.judge.server,
            "server_from": self.judge.server_from,
            "side": self.side,
            "split": (self.split or {}).get("hash"),
            "judge": self.judge.describe(),
        }

    def require_ready(self) -> None:
        """ConfigError when the judge cannot score in these settings (before anything is recorded or sent)."""
        if self.problems:
            raise ConfigError("; ".join(self.problems))

    def items(self, store: Store, on_batch: Any = None) -> StreamedItems:
        """The run's items read a batch at a time from the dataset version (its chosen ids only)."""
        stream: Iterable[Item] = store.iter_dataset_items(self.dataset.id)
        if self.item_ids is not None:
            stream = _only(stream, frozenset(self.item_ids))
        return StreamedItems(stream, self.total, self.judged_before, on_batch=on_batch)


def _only(items: Iterable[Item], wanted: frozenset[str]) -> Iterator[Item]:
    """The items whose id is wanted, in dataset order (one set lookup each)."""
    return (item for item in items if item.id in wanted)


def plan_run(
    store: Store,
    prompt: FrozenPrompt,
    dataset: str | Dataset,
    choice: JudgeChoice | None = None,
    scope: RunScope | None = None,
    *,
    concurrency: int | None = None,
    options: RunOptions | None = None,
    judge: PlannedJudge | None = None,
) -> RunPlan:
    """The plan of a run of `prompt` on a dataset version: judge and server, side and items, checks, options."""
    scope = scope or RunScope()
    data = store.get_dataset(dataset) if isinstance(dataset, str) else dataset
    planned = judge or plan_judge(prompt.dimension.judge, choice, store)
    item_ids, side, split = _scope_items(store, prompt, data, scope)
    return _assemble(store, prompt, planned, data, scope, item_ids, side, split, concurrency, options)


def _assemble(
    store: Store,
    prompt: FrozenPrompt,
    planned: PlannedJudge,
    data: Dataset,
    scope: RunScope,
    item_ids: tuple[str, ...] | None,
    side: str | None,
    split: Mapping[str, Any] | None,
    concurrency: int | None,
    options: RunOptions | None,
) -> RunPlan:
    """The plan from its decided parts: the run options and the checks' verdicts added."""
    run_options, lowered = _options(planned.settings, concurrency, options)
    problems, warnings = _checks(store, prompt, planned.settings, data, item_ids)
    return RunPlan(
        prompt,
        planned,
        data,
        scope,
        item_ids,
        side,
        split,
        run_options,
        tuple(problems),
        (*planned.warnings, *lowered, *warnings),
        scope.run_id,
    )


def _scope_items(
    store: Store, prompt: FrozenPrompt, data: Dataset, scope: RunScope
) -> tuple[tuple[str, ...] | None, str | None, Mapping[str, Any] | None]:
    """(the item ids, the side, the split): the seal decides here, not in each front end."""
    from .splits import get_split, has_split

    if not has_split(store, data.id):
        if scope.side == "test":
            raise InputError(
                f"dataset {data.label} has no split, so no test side: `geval split` makes one",
                field="side",
            )
        return _unique(scope.item_ids), None, None
    split = get_split(store, data.id)
    side = scope.side or "dev"
    sides = {"dev": set(split["dev"]), "test": set(split["test"])}
    if side not in sides:
        raise InputError(f"the side is dev or test, got {side!r}", field="side")
    if scope.item_ids is None:
        examples = prompt.dimension.example_ids
        return tuple(i for i in split[side] if i not in examples), side, split
    outside = [i for i in scope.item_ids if i not in sides[side]]
    if outside:
        raise InputError(
            f"{len(outside)} of the items asked for (e.g. {outside[0]!r}) are not on the {side} side "
            f"of dataset {data.label}'s split: the test side is sealed and scored only when asked "
            "for (its use is recorded)",
            field="items",
        )
    return _unique(scope.item_ids), side, split


def sample_items(
    store: Store,
    prompt: FrozenPrompt,
    dataset: str | Dataset,
    count: int,
    seed: int = 0,
    side: str | None = None,
) -> tuple[str, ...]:
    """The ids of a random sample of the items a run would score (the side of a split the seal allows, the prompt's
    example items left out), drawn with `seed`, in dataset order: whole groups when the items have groups (their
    figures are read per group: at least `count` items, the last group whole), else `count` items."""
    import random

    data = store.get_dataset(dataset) if isinstance(dataset, str) else dataset
    eligible, _, _ = _scope_items(store, prompt, data, RunScope(side=side))
    wanted = None if eligible is None else frozenset(eligible)
    order: list[str] = []
    groups: dict[str, list[str]] = {}
    for item in store.iter_dataset_items(data.id):
        if wanted is None or item.id in wanted:
            order.append(item.id)
            groups.setdefault(item.group or item.id, []).append(item.id)
    rng = random.Random(seed)
    if len(groups) == len(order):  # no groups: items
        chosen = set(rng.sample(order, min(count, len(order))))
    else:
        chosen = set()
        for group in rng.sample(list(groups), len(groups)):
            if len(chosen) >= count:
                break
            chosen.update(groups[group])
    return tuple(i for i in order if i in chosen)


def _unique(ids: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return None if ids is None else tuple(dict.fromkeys(ids))


def _options(
    settings: JudgeSettings, concurrency: int | None, options: RunOptions | None
) -> tuple[RunOptions, tuple[str, ...]]:
    """The run options with the judge's settings and the calls in flight its provider allows."""
    from ..providers.registry import allowed_concurrency, default_concurrency

    workers, lowered = allowed_concurrency(settings, concurrency or default_concurrency(settings))
    return replace(options or RunOptions(), settings=settings, concurrency=workers), (
        lowered,
    ) if lowered else ()


def _checks(
    store: Store,
    prompt: FrozenPrompt,
    settings: JudgeSettings,
    data: Dataset,
    item_ids: tuple[str, ...] | None,
) -> tuple[list[str], list[str]]:
    """(what stops the run, what weakens it): the inputs, the judge's limits and last probe, overlong items."""
    from ..providers.capabilities import preflight
    from .one_item import length_budget, overlong_warning

    lacking = store.first_item_without(data.id, prompt.dimension.inputs)
    if lacking is not None:
        require_inputs(prompt, [lacking], f"dataset {data.label}")
    problems = preflight(settings, _last_probe(store, settings))
    warnings = []
    budget = length_budget(prompt, settings)
    if budget is not None:
        window, uses, chars = budget
        over = store.item_ids_over(data.id, uses, chars)
        if item_ids is not None:
            wanted = set(item_ids)
            over = [i for i in over if i in wanted]
        total = len(item_ids) if item_ids is not None else int(data.item_count)
        too_long = overlong_warning(window, over, total)
        if too_long:
            warnings.append(too_long)
    return problems, warnings


def record_run(store: Store, plan: RunPlan, *, key_needed: bool = True) -> RunPlan:
    """The plan with its run: found (same prompt, data, judge, server and items) or created, after the checks
    that must pass before anything is recorded (the judge can score, its key is set unless `key_needed` is
    False: a batch file its user uploads); a use of the sealed test side is recorded here."""
    from ..providers.registry import check_judge

    plan.require_ready()
    if key_needed:
        check_judge(plan.settings)  # a run without a key would stay "running" for good
    if plan.run_id is not None:
        _same_server(store, plan.run_id, plan.judge)
        return replace(plan, judged_before=store.judged_count(plan.run_id))
    ids = list(plan.item_ids) if plan.item_ids is not None else None
    if plan.scope.new_run:
        run_id = store.create_run(plan.prompt.id, plan.dataset.id, plan.settings, item_ids=ids)
    else:
        run_id, _ = store.find_or_create_run(
            plan.prompt.id, plan.dataset.id, plan.settings, plan.scope.reuse, item_ids=ids
        )
    store.set_run_fields(run_id, plan=plan.record(), **dict(plan.scope.marks))
    if plan.side == "test" and plan.split is not None:
        from .splits import record_test_use

        record_test_use(store, dict(plan.split), plan.prompt.id, run_id)
    return replace(plan, run_id=run_id, judged_before=store.judged_count(run_id))


def _same_server(store: Store, run_id: str, judge: PlannedJudge) -> None:
    """Refuse to resume a run against a server other than the one that answered it."""
    others = sorted(s for s in store.run_servers(run_id) if s and s != judge.server)
    if others:
        raise ConfigError(
            f"run {run_id} was answered by {others[0]}, and its judge now resolves to {judge.server}"
            f"{'' if judge.server_from in ('given', 'default') else ' (from ' + judge.server_from + ')'}: "
            "a run never mixes servers; point the judge back at that server to resume it, or start "
            "another run"
        )


def plan_of_run(
    store: Store,
    run_id: str,
    choice: JudgeChoice | None = None,
    *,
    concurrency: int | None = None,
    options: RunOptions | None = None,
) -> RunPlan:
    """The plan to resume a stored run with its own judge, server and items; a `choice` that names another judge
    or server than the run's is refused (a run keeps one judge)."""
    run = store.get_run(run_id)
    prompt = store.get_prompt(run.prompt_id)
    stored = run.judge
    # A run recorded before its server was takes the environment's, checked against its judgments when recorded.
    planned = plan_judge(stored, JudgeChoice(base_url=stored.base_url, where="the run's server"), store)
    if choice is not None and choice.names_anything:
        wanted = plan_judge(prompt.dimension.judge, choice, store).settings
        differ = judge_difference(planned.settings, wanted)
        if differ:
            raise ConfigError(
                f"run {run.id} is scored by {judge_label(planned.settings)}; this command names "
                f"{judge_label(wanted)} ({', '.join(differ)} differ): a run keeps one judge, so "
                "leave out the run id to start another"
            )
    ids = run.item_ids
    side, split = _stored_side(store, run.dataset_id, ids)
    return _assemble(
        store,
        prompt,
        planned,
        store.get_dataset(run.dataset_id),
        RunScope(item_ids=ids, run_id=run.id),
        ids,
        side,
        split,
        concurrency,
        options,
    )


def _stored_side(
    store: Store, dataset_id: str, ids: tuple[str, ...] | None
) -> tuple[str | None, Mapping[str, Any] | None]:
    """The side a stored run is on: test when it reaches a test item (its use was recorded when it began)."""
    from .splits import get_split, has_split

    if not has_split(store, dataset_id):
        return None, None
    split = get_split(store, dataset_id)
    test = set(split["test"])
    return ("test" if ids is None or any(i in test for i in ids) else "dev"), split


def start_run(
    store: Store,
    plan: RunPlan,
    judge: Judge | None = None,
    *,
    items: Any = None,
    on_progress: Progress | None = None,
    cancel: threading.Event | None = None,
    gate: Gate | None = None,
    timeout: float = 60.0,
) -> RunSummary:
    """Score the plan's items not judged yet: the one way into the runner. The run is recorded first when the
    plan has none yet; the judge is made at its first request (a run answered from the cache needs no SDK)."""
    from ..providers import get_judge
    from ..providers.on_demand import JudgeOnDemand
    from .runner import run_scoring

    if plan.run_id is None:
        plan = record_run(store, plan)
    run_id = plan.recorded_id
    if store.get_run(run_id).status != "running":  # a resumed run says it runs while it does
        store.set_run_fields(run_id, status="running")
    settings = plan.settings
    judge = judge or JudgeOnDemand(settings.provider, lambda: get_judge(settings, timeout=timeout))
    return run_scoring(
        plan.prompt,
        items if items is not None else plan.items(store),
        judge,
        store,
        run_id,
        plan.options,
        on_progress=on_progress,
        cancel=cancel,
        gate=gate,
    )
