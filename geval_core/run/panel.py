"""Panels of judges: frozen, content-hashed sets of prompts of one dimension and scale with an aggregation
rule, scored as one run per member (a finished run of the same prompt, data and settings is reused, never
paid twice) and combined item by item; the members' agreement with each other is Krippendorff's alpha."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, NotFoundError
from ..prompts import canonical_hash
from ..prompts.names import check_new_name
from ..scoring.panel import RULES, panel_score
from ..stats.raters import alpha_intervals, krippendorff_alpha
from ..store import Store
from ..types import FrozenPrompt, Judge, JudgeSettings
from .options import RunOptions
from .plan import RESUMABLE, JudgeChoice, RunPlan, RunScope, plan_run, record_run, start_run

__all__ = ["Panel", "freeze_panel", "get_panel", "plan_panel", "score_panel"]


@dataclass(frozen=True)
class Panel:
    """A frozen panel: its members' prompt hashes (in order) and the rule that combines them."""

    id: str  # sha256 of the canonical JSON of (members, rule)
    name: str
    version: int
    members: tuple[str, ...]
    rule: str
    created_at: str

    @property
    def label(self) -> str:
        """name@version."""
        return f"{self.name}@{self.version}"


def freeze_panel(store: Store, name: str, members: list[FrozenPrompt], rule: str) -> tuple[Panel, bool]:
    """(the panel, created): members of one dimension and scale; the same content returns its version."""
    if rule not in RULES:
        raise InputError(f"rule must be one of {', '.join(RULES)}, got {rule!r}", field="rule")
    if len(members) < 2 or len({m.id for m in members}) != len(members):
        raise InputError("a panel needs at least two different frozen prompts", field="member")
    first = members[0].dimension
    for other in members[1:]:
        if other.dimension.scale != first.scale or other.dimension.name.casefold() != first.name.casefold():
            raise InputError(
                f"{other.label} rates {other.dimension.name} on {other.dimension.scale}, the panel "
                f"{first.name} on {first.scale}: members judge one dimension on one scale",
                field="member",
            )
    name = check_new_name(name, store.record_keys("panel"), "panel")
    ids = [m.id for m in members]
    body = {"id": canonical_hash({"members": ids, "rule": rule}), "members": ids, "rule": rule}
    record, created = store.freeze_record(
        "panel", name, body
    )  # a frozen record: each version a protected row
    return _panel(name, record), created


def _panel(name: str, record: dict[str, Any]) -> Panel:
    stored = record["body"]
    data = {"members": list(stored["members"]), "rule": stored["rule"]}
    if canonical_hash(data) != stored["id"]:
        raise InputError(
            f"panel {name}@{record['seq']} does not match its hash: it was edited", field="panel"
        )
    return Panel(
        stored["id"], name, record["seq"], tuple(stored["members"]), stored["rule"], record["created_at"]
    )


def get_panel(store: Store, ref: str) -> Panel:
    """A panel by name (the latest version) or name@version."""
    name, _, version = ref.partition("@")
    versions = store.records("panel", name)
    if not versions:
        raise NotFoundError(f"no panel named {name!r}; `geval panel freeze {name} --member ...` makes one")
    if version:
        found = [v for v in versions if str(v["seq"]) == version]
        if not found:
            raise NotFoundError(f"panel {name} has no version {version} (it has 1-{len(versions)})")
        return _panel(name, found[0])
    return _panel(name, versions[-1])


def plan_panel(
    store: Store,
    panel: Panel,
    dataset_id: str,
    base_urls: dict[str, str] | None = None,
    base_url: str | None = None,
    options: RunOptions | None = None,
    concurrency: int | None = None,
    side: str | None = None,
) -> list[RunPlan]:
    """One plan per member, all made before any member runs (a member whose server cannot be honoured stops
    the panel before anything is paid): its own frozen judge, at the server named for it (`base_urls`, by label
    or name), else at `base_url` (every member whose judge takes a server; one that takes none is refused), else
    the environment's; every member on the same side of a split."""
    plans = []
    for member in panel.members:
        prompt = store.get_prompt(member)
        named = (base_urls or {}).get(prompt.label) or (base_urls or {}).get(prompt.name)
        where = (
            f"--member-base-url for {prompt.label}" if named else f"--base-url (for member {prompt.label})"
        )
        choice = JudgeChoice(base_url=named or base_url, where=where)
        plans.append(
            plan_run(
                store,
                prompt,
                dataset_id,
                choice,
                RunScope(side=side, reuse=RESUMABLE),
                options=options,
                concurrency=concurrency,
            )
        )
    unknown = set(base_urls or {}) - {p.prompt.label for p in plans} - {p.prompt.name for p in plans}
    if unknown:
        raise InputError(
            f"--member-base-url names {sorted(unknown)[0]!r}, which is not a member of panel "
            f"{panel.label} ({', '.join(p.prompt.label for p in plans)})",
            field="member-base-url",
        )
    return plans


def score_panel(
    store: Store,
    panel: Panel,
    dataset_id: str,
    judge_for: Callable[[JudgeSettings], Judge] | None = None,
    base_urls: dict[str, str] | None = None,
    options: RunOptions | None = None,
    resamples: int = 1000,
    base_url: str | None = None,
    concurrency: int | None = None,
    side: str | None = None,
) -> dict[str, Any]:
    """Score every item with every member (reusing runs), then the panel: rows per item and the summary."""
    plans = [
        record_run(store, plan)
        for plan in plan_panel(store, panel, dataset_id, base_urls, base_url, options, concurrency, side)
    ]
    runs = []
    for plan in plans:
        summary = start_run(store, plan, judge_for(plan.settings) if judge_for else None)
        runs.append((plan, summary))
    members = [plan.prompt for plan in plans]
    return combine(store, panel, members, [plan.recorded_id for plan in plans], dataset_id, resamples) | {
        "member_runs": [
            {
                "prompt": p.prompt.label,
                "run": p.run_id,
                "judge_calls": s.judge_calls,
                "status": s.status,
                "judge": p.judge.describe(),
                "server": p.judge.server,
            }
            for p, s in runs
        ]
    }


def _ratings(distribution: dict | None) -> dict[int, float]:
    """A stored distribution (JSON keys are strings) keyed by rating."""
    return {int(k): float(v) for k, v in (distribution or {}).items()}


def combine(
    store: Store,
    panel: Panel,
    members: list[FrozenPrompt],
    run_ids: list[str],
    dataset_id: str,
    resamples: int = 1000,
) -> dict[str, Any]:
    """The panel's rows (item id, score, distribution, members' scores, spread) and the members' alpha."""
    scale = members[0].dimension.scale
    tables = [{row["item_id"]: row for row in store.judgments(run_id)} for run_id in run_ids]
    rows, matrix, groups = [], [], []
    for item in store.dataset_items(dataset_id):
        judged = [table.get(item.id) or {} for table in tables]
        scores = [j.get("score") for j in judged]
        combined = panel_score(
            scores,
            [_ratings(j.get("distribution")) for j in judged],
            scale,
            panel.rule,
            [j.get("valid_mass") for j in judged],
        )
        rows.append(
            {
                "id": item.id,
                "score": combined.score,
                "distribution": combined.distribution,
                "members": {m.label: s for m, s in zip(members, scores, strict=True)},
                "spread": combined.spread,
                "group": item.group,
            }
        )
        matrix.append([np.nan if s is None else float(s) for s in scores])
        groups.append(item.group)
    values = np.asarray(matrix, dtype=float)
    grouped = all(g is not None for g in groups)
    value = krippendorff_alpha(values, "interval")
    # The stats' own alpha bootstrap: groups resampled when the data has them, withheld with too few units.
    interval = alpha_intervals(
        values, resamples, metrics=("interval",), clusters=[str(g) for g in groups] if grouped else None
    )["interval"]
    return {
        "panel": panel.label,
        "panel_id": panel.id,
        "rule": panel.rule,
        "rows": rows,
        "alpha": {
            "value": value,
            "interval": interval,
            "resampled": "groups" if grouped else "items",
            "metric": "interval",
        },
    }
