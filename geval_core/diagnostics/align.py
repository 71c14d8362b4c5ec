"""Aligning a prompt with people without fooling yourself: disputed dev items, candidates compared on dev, and the
sealed test side used once per candidate, its interval widened for every candidate tried (Bonferroni; Holm for
the decisions).

Every figure here is computed on a scope from `run.splits.evaluation_ids`: the dev side by default, never an
item the prompt shows as an example.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from ..errors import InputError
from ..records import Run
from ..run.splits import evaluation_ids, get_split, sealed_uses
from ..stats.kappa import nearest_point
from .compare import compare_runs

__all__ = ["align_report", "disputed_items", "holm", "side_run"]


def disputed_items(
    store: Any, run_id: str, human: str, only: set[str] | None, limit: int = 30
) -> list[dict[str, Any]]:
    """The items of the run (in `only`) where judge and people differ most: |score - human| first, with the
    judge's distribution, every rater's rating and the scale point people gave (their mean, rounded)."""
    run = store.get_run(run_id)
    scale = store.get_prompt(run.prompt_id).dimension.scale
    people = store.human_means(run.dataset_id, human)
    items = {i.id: i for i in store.dataset_items(run.dataset_id)}
    rows = []
    for judged in store.judgments(run.id):
        item_id, score = judged["item_id"], judged["score"]
        if score is None or item_id not in people or (only is not None and item_id not in only):
            continue
        item = items.get(item_id)
        raters = {k: v for k, v in (item.human if item else {}).items() if k.startswith(human + ".")}
        point = nearest_point(people[item_id], scale)  # halves up, as every figure rounds
        rows.append(
            {
                "item_id": item_id,
                "score": score,
                "human": people[item_id],
                "gap": score - people[item_id],
                "point": point,
                "distribution": judged["distribution"],
                "raters": raters,
                "fields": item.fields if item else {},
            }
        )
    rows.sort(key=lambda r: (-abs(r["gap"]), r["item_id"]))
    return rows[:limit]


def side_run(
    store: Any, prompt_id: str, dataset_id: str, ids: AbstractSet[str] | None, judge: Any = None
) -> Run | None:
    """The newest finished run of the prompt on this dataset that judged every item of `ids` (None: any finished
    run); with `judge` (settings or a run's stored judge), only a run of that same judge (provider, model, server,
    decoding)."""
    from ..run.plan import judge_difference

    for run in store.list_runs(prompt=prompt_id, dataset=dataset_id):
        if run.status != "done" or (judge is not None and judge_difference(run.judge, judge)):
            continue
        if ids is None or ids <= {
            r["item_id"] for r in store.judgments(run.id) if r["score"] is not None or r["error"] is None
        }:
            return run
    return None


def holm(p_values: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values (each at most 1, never below an earlier one in the order)."""
    ordered = sorted(p_values.items(), key=lambda kv: kv[1])
    m, out, running = len(ordered), {}, 0.0
    for rank, (key, p) in enumerate(ordered):
        running = max(running, min(1.0, (m - rank) * p))
        out[key] = running
    return out


def _candidates(store: Any, split: dict[str, Any], base_id: str) -> list[str]:
    """The prompts evaluated on the split's test side, in the order first evaluated, without the base."""
    seen: dict[str, None] = {}
    for use in sealed_uses(store, split):
        seen.setdefault(use["prompt_id"], None)
    return [p for p in seen if p != base_id]


def align_report(
    store: Any,
    base: str,
    candidate: str,
    dataset: str,
    human: str,
    side: str = "test",
    resamples: int = 1000,
    figure: str = "spearman",
) -> dict[str, Any]:
    """Base vs candidate on one side of a split dataset: each figure's paired difference, its 95% interval and,
    on the test side, the interval widened for the m candidates evaluated there (level 1 - 0.05/m) with Holm's
    adjusted p-value of `figure` over those candidates."""
    base_prompt, cand_prompt = store.get_prompt(base), store.get_prompt(candidate)
    data = store.get_dataset(dataset)
    split = get_split(store, data.id)
    examples = base_prompt.dimension.example_ids | cand_prompt.dimension.example_ids
    ids, scope = evaluation_ids(store, data.id, "dev", examples)
    if side == "test":
        ids = set(split["test"]) - examples
        scope = {**scope, "side": "test"}
        evaluated = {u["prompt_id"] for u in sealed_uses(store, split)}
        for prompt in (base_prompt, cand_prompt):
            if prompt.id not in evaluated:
                raise InputError(
                    f"{prompt.label} has not been evaluated on the test side of {data.label}: "
                    f"`geval align test {prompt.label} --data {data.label}` does it, once, recorded",
                    field="prompt",
                )
    runs: dict[str, Any] = {"base": side_run(store, base_prompt.id, data.id, ids)}
    if runs["base"] is None:
        raise InputError(
            f"no finished run of {base_prompt.label} on the {side} side of {data.label}", field="run"
        )
    # The candidate's run of the base's judge when there is one: then the difference is the prompt's alone.
    runs["candidate"] = side_run(store, cand_prompt.id, data.id, ids, runs["base"].judge) or side_run(
        store, cand_prompt.id, data.id, ids
    )
    if runs["candidate"] is None:
        raise InputError(
            f"no finished run of {cand_prompt.label} on the {side} side of {data.label}", field="run"
        )
    plain = compare_runs(store, runs["base"].id, runs["candidate"].id, human, resamples, only=ids)
    out = {
        "base": base_prompt.label,
        "candidate": cand_prompt.label,
        "dataset": data.label,
        "side": side,
        "split": split["hash"],
        "human": human,
        "base_run": runs["base"].id,
        "candidate_run": runs["candidate"].id,
        "examples_left_out": scope["examples_left_out"],
        **plain,
    }
    if side != "test":
        return out
    others = _candidates(store, split, base_prompt.id)
    m = max(1, len(others))
    corrected = compare_runs(
        store, runs["base"].id, runs["candidate"].id, human, resamples, only=ids, level=1 - 0.05 / m
    )
    for name, fig in out["figures"].items():
        fig["corrected_interval"] = corrected["figures"][name]["interval"]
    p_values = {}
    for other in others:
        run = side_run(store, other, data.id, ids, runs["base"].judge)
        if run is not None:
            p = compare_runs(store, runs["base"].id, run.id, human, resamples, only=ids)["figures"][figure]
            if p["p_value"] is not None:
                p_values[other] = p["p_value"]
    adjusted = holm(p_values)
    out.update(
        candidates_evaluated=m,
        test_looks=len(sealed_uses(store, split)),
        corrected_level=1 - 0.05 / m,
        correction="Bonferroni over the candidates evaluated on this test side; Holm for the p-values",
        holm_p=adjusted.get(cand_prompt.id),
        holm_figure=figure,
    )
    return out
