"""Bias probes of a stored run: verbosity, per-system offsets, and damaged copies scored by the runner.

The damaged copies are stored as a dataset version of their own (named DATASET~probe-KIND) and
scored in a run of the same prompt and judge settings, so the probe is inspectable like any run and
a repeated probe is answered from the judge cache.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..records import Dataset, Run
from ..stats.bias import length_bias, per_system, sensitivity
from ..stats.stored import item_value, run_items
from ..store import Store
from ..types import FrozenPrompt, Item

if TYPE_CHECKING:
    from ..run.plan import RunPlan
from .perturb import kind_for, perturb


def output_field(prompt: FrozenPrompt, field: str | None) -> str:
    """The input field holding the judged output: the given one, else the prompt's last input."""
    inputs = prompt.dimension.inputs
    if field is not None and field not in inputs:
        raise InputError(f"the prompt has no input {field!r} (inputs: {', '.join(inputs)})", field=field)
    return field or inputs[-1]


def default_human(dataset: Dataset, prompt: FrozenPrompt) -> str | None:
    """The dataset's human rating named like the prompt's dimension, if any."""
    names = {h.lower(): h for h in dataset.human}
    return names.get(prompt.dimension.name.lower())


def bias_report(
    library: Store,
    run_id: str,
    human: str | None = None,
    system_field: str | None = None,
    families: dict[str, str] | None = None,
    field: str | None = None,
) -> dict[str, Any]:
    """Verbosity (score vs length, partial on the human rating) and, with system_field, per-system offsets."""
    run, rows = run_items(library, run_id)
    prompt = library.get_prompt(run.prompt_id)
    field = output_field(prompt, field)
    human = human or default_human(library.get_dataset(run.dataset_id), prompt)
    scores = [row.get("score") for _, row in rows]
    lengths = [len(item.fields.get(field, "").split()) if item else 0 for item, _ in rows]
    ratings = [item.human.get(human) if item and human else None for item, _ in rows] if human else None
    out: dict[str, Any] = {
        "run": run.id,
        "field": field,
        "human": human,
        "judge_model": run.model_version or run.judge.model,
        **length_bias(scores, lengths, ratings),
    }
    if system_field:
        systems = [item_value(item, system_field) for item, _ in rows]
        if not any(systems):
            raise InputError(
                f"no item has an input field {system_field!r} (or use 'group')", field=system_field
            )
        out["systems"] = per_system(
            scores, ratings or [None] * len(rows), systems, out["judge_model"], families
        )
        out["family_warnings"] = [s["system"] for s in out["systems"] if s["same_family_as_judge"]]
    return out


def damaged_copies(
    items: list[Item], kind: str, field: str, limit: int, seed: int
) -> list[tuple[Item, Item]]:
    """Up to `limit` (original, damaged copy) pairs; items the kind cannot damage are passed over."""
    rng = random.Random(seed)
    order = items[:]
    rng.shuffle(order)
    pairs = []
    for k, item in enumerate(order):
        other = order[(k + 1) % len(order)].fields.get(field, "")
        text = perturb(kind, item.fields.get(field, ""), other, rng)
        if text is not None and text != item.fields.get(field):
            copy = Item(f"{item.id}~{kind}", {**item.fields, field: text}, {}, item.group)
            pairs.append((item, copy))
        if len(pairs) >= limit:
            break
    return pairs


def plan_perturbation(
    library: Store,
    run_id: str,
    kind: str | None = None,
    field: str | None = None,
    limit: int = 20,
    seed: int = 0,
) -> RunPlan:
    """The probe's run, planned and recorded: damaged copies of the run's scored items stored as a dataset version
    of their own, to be scored with the run's own judge and server (by `start_run`, or by a job of the library).
    The run carries what it probes (`probe`: the run, kind and field), so its result can be read at any time."""
    from ..run.plan import RunScope, plan_run, plan_settings, record_run

    run, rows = run_items(library, run_id)
    prompt = library.get_prompt(run.prompt_id)
    kind = kind or kind_for(prompt.dimension.name)
    if kind is None:
        raise InputError(
            f"no perturbation is known for the dimension {prompt.dimension.name!r}: "
            "give one (shuffle, words, swap, foreign)"
        )
    field = output_field(prompt, field)
    scored = {row["item_id"] for _, row in rows if row.get("score") is not None}
    items = [item for item, row in rows if item is not None and row["item_id"] in scored]
    pairs = damaged_copies(items, kind, field, limit, seed)
    if not pairs:
        raise InputError(f"no scored item of run {run.id} can be damaged by {kind!r} in its {field!r}")
    dataset = library.get_dataset(run.dataset_id)
    probe_data = library.import_items(f"{dataset.name}~probe-{kind}", [c for _, c in pairs], source="probe")
    settings = run.judge  # the probed run's own judge and server
    marks = {"probe": {"of": run.id, "kind": kind, "field": field}}
    return record_run(
        library,
        plan_run(
            library,
            prompt,
            probe_data["id"],
            scope=RunScope(new_run=True, marks=marks),
            judge=plan_settings(settings, library),
        ),
    )


def perturbation_result(library: Store, probe_run_id: str) -> dict[str, Any]:
    """How often the judge rated the damaged copies lower than the originals, read from a finished probe run."""
    probe = library.get_run(probe_run_id)
    of, kind, field = probe.extra["probe"]["of"], probe.extra["probe"]["kind"], probe.extra["probe"]["field"]
    scored = {row["item_id"]: row["score"] for row in library.judgments(of) if row.get("score") is not None}
    damaged = {row["item_id"]: row["score"] for row in library.judgments(probe_run_id)}
    suffix = f"~{kind}"
    pairs = [(item.id.removesuffix(suffix), item.id) for item in library.dataset_items(probe.dataset_id)]
    result = sensitivity([scored.get(o) for o, _ in pairs], [damaged.get(c) for _, c in pairs])
    examples = [{"id": o, "original": scored.get(o), "damaged": damaged.get(c)} for o, c in pairs[:5]]
    return {
        "run": of,
        "probe_run": probe_run_id,
        "kind": kind,
        "field": field,
        **result,
        "examples": examples,
    }


def probe_runs(library: Store, run_id: str) -> list[Run]:
    """The perturbation probes of a run, newest first."""
    return [r for r in library.list_runs() if (r.extra.get("probe") or {}).get("of") == run_id]


def perturbation_probe(
    library: Store,
    run_id: str,
    judge: Any = None,
    kind: str | None = None,
    field: str | None = None,
    limit: int = 20,
    seed: int = 0,
) -> dict[str, Any]:
    """Score damaged copies of a run's scored items and report how often the judge rates them lower."""
    from ..run.plan import start_run

    plan = plan_perturbation(library, run_id, kind, field, limit, seed)
    start_run(library, plan, judge)
    return perturbation_result(library, plan.recorded_id)
