"""Agreement page helpers: line up a run's scores with human ratings and lay out geval_core's figures."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import streamlit as st

from geval_core.judgment import single_rating
from geval_core.records import Run
from geval_core.types import Scale
from workbench_ui import cached_reads, charts, safe_text, sealing, state

SCORES = {"score": "weighted score", "single_rating": "top-token score"}
METRICS = {
    "spearman": "Spearman",
    "kendall": "Kendall τ-b",
    "pearson": "Pearson",
    "kappa_quadratic": "κ quadratic",
    "tie_rate": "tie rate (judge)",
    "human_tie_rate": "tie rate (human)",
}
SCATTER_POINTS = 5_000  # at most this many items drawn in the scatter (a random sample beyond)

# Said wherever a reading is offered for data without groups: which reading applies, and why the other is not there.
NO_GROUPS = (
    "This dataset does not give every item a group (no document column), so the reading that applies is "
    "dataset-level: all items pooled, items resampled for the intervals. The group-level reading (per document, "
    "then averaged: the paper's summary-level) needs a group on every item, so it is not offered."
)


def paired(run: Run, human_field: str | None, which: str = "score") -> dict[str, list]:
    """Per judged item, in dataset order: id, judge score, human rating (None if absent) and group
    (computed once per run_state: shared, never mutate it)."""
    scope = sealing.current()
    return cached_reads.per_run(
        run,
        "paired",
        lambda: _paired(run, human_field, which, scope),
        human_field,
        which,
        sealing.cache_key(),
    )


def _paired(run: Run, human_field: str | None, which: str, scope=None) -> dict[str, list]:
    items = cached_reads.items_by_id(run.dataset_id)
    rows = cached_reads.stored_judgments(run)
    if scope is not None and scope.ids is not None:  # a split's side without the example items: nothing else
        rows = [row for row in rows if row["item_id"] in scope.ids]
    matched = [items.get(row["item_id"]) for row in rows]
    score = single_rating if which == "single_rating" else (lambda row: row.get(which))
    return {
        "ids": [row["item_id"] for row in rows],
        "judge": [score(row) for row in rows],
        "human": [i.human.get(human_field) if i is not None and human_field else None for i in matched],
        "groups": [i.group if i is not None else None for i in matched],
        "replies": [row.get("replies") or [] for row in rows],
    }


@st.cache_data(show_spinner="Computing agreement…", max_entries=64)
def _agreement(
    path: str,
    run_id: str,
    version: tuple[int, int, str],
    human_field: str,
    which: str,
    grouped: bool,
    scale: tuple[int, int],
    bootstrap: int,
    seed: int,
    scope_key: str,
    _run: Run,
) -> dict[str, Any]:
    from geval_core.stats import agreement

    p = paired(_run, human_field, which)
    groups = p["groups"] if grouped else None
    # The dataset-level reading of grouped data resamples whole groups (items of a group are not independent).
    clusters = p["groups"] if not grouped and all(g is not None for g in p["groups"]) else None
    return agreement(
        p["judge"],
        p["human"],
        groups=groups,
        scale=Scale(*scale),
        bootstrap=bootstrap,
        seed=seed,
        clusters=clusters,
    ).to_dict()


def agreement_for(
    run: Run,
    human_field: str,
    which: str,
    grouped: bool,
    scale: Scale,
    bootstrap: int,
    seed: int = 0,
) -> dict[str, Any]:
    """geval_core.stats.agreement on a run (cached per cached_reads.run_state and options)."""
    return _agreement(
        os.path.abspath(state.sidebar().db_path),
        run.id,
        cached_reads.run_state(run),
        human_field,
        which,
        grouped,
        (scale.min, scale.max),
        bootstrap,
        seed,
        sealing.cache_key(),
        run,
    )


def scatter(run: Run, human_field: str, limit: int = SCATTER_POINTS) -> tuple[Any, int, int]:
    """The judge-vs-human scatter of a run, once per run_state: (figure, points drawn, points with both)."""
    return cached_reads.per_run(
        run, "scatter", lambda: _scatter(run, human_field, limit), human_field, limit, sealing.cache_key()
    )


def _scatter(run: Run, human_field: str, limit: int) -> tuple[Any, int, int]:
    import numpy as np

    p = paired(run, human_field)
    both = [
        n
        for n, (j, h) in enumerate(zip(p["judge"], p["human"], strict=True))
        if j is not None and h is not None
    ]
    shown = both
    if len(both) > limit:
        # Display only: a browser draws 20,000 points slowly and the page ships them on every rerun.
        rng = np.random.default_rng(0)
        shown = [both[n] for n in np.sort(rng.choice(len(both), size=limit, replace=False))]
    figure = charts.scatter_figure(
        [p["human"][n] for n in shown],
        [p["judge"][n] for n in shown],
        [p["ids"][n] for n in shown],
        f"human {human_field}",
        "judge weighted score",
        "Judge vs human",
    )
    return figure, len(shown), len(both)


def _cell(result: dict[str, Any], metric: str) -> str:
    value = result.get(metric)
    if value is None:
        return "—"
    ci = (result.get("ci") or {}).get(metric)
    if ci and ci[0] is not None and ci[1] is not None:
        return f"{value:.3f} {safe_text.interval(ci)}"
    if ci and result.get("ci_warning"):  # too few groups (or items): withheld, not a false promise
        return f"{value:.3f} (no CI: {result.get('ci_units')} {result.get('ci_resampled')})"
    undefined = (result.get("ci_undefined") or {}).get(metric)
    if ci and undefined:  # too many undefined resamples: an interval of the rest would mislead
        return f"{value:.3f} (no CI: {undefined} of {result.get('bootstrap')} resamples undefined)"
    return f"{value:.3f}"


def resampled_note(result: dict[str, Any]) -> str:
    """What the intervals resampled and how they were made, or why they are withheld ("" without them)."""
    if not result.get("bootstrap") or not result.get("ci"):
        return ""
    if result.get("ci_warning"):
        return f"Intervals withheld: {result['ci_warning'].removeprefix('no intervals: ')}."
    flag = f" Caution: {result['ci_flag']}." if result.get("ci_flag") else ""
    # Plain words here; the method's own description is one click away (method_note), not in the caution box.
    return (
        f"95% intervals: the figures recomputed on {result['bootstrap']} resamples of the "
        f"{result.get('ci_units')} {result.get('ci_resampled')}, each drawn whole, with replacement.{flag}"
    )


def method_note(result: dict[str, Any]) -> str:
    """How the intervals are made, in the statistician's words ("" without intervals)."""
    return str(result.get("ci_method") or "") if result.get("ci") else ""


def results_frame(results: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per reading/score: every metric with its 95% interval, items and groups."""
    rows = []
    for label, r in results.items():
        cells = {name: _cell(r, metric) for metric, name in METRICS.items()}
        rows.append(
            {
                "reading": label,
                **cells,
                "items": r.get("items"),
                "groups": r.get("groups"),
                "groups skipped": r.get("groups_skipped"),
                "missing": r.get("missing"),
                "resampled": f"{r.get('ci_units')} {r.get('ci_resampled')}" if r.get("ci") else "—",
            }
        )
    return pd.DataFrame(rows)


def differences(run_a: Run, run_b: Run) -> pd.DataFrame:
    """Items judged in both runs: score A, score B and A − B (run A above, as the paired change reads), largest
    moves first."""
    a = {r["item_id"]: r.get("score") for r in cached_reads.stored_judgments(run_a)}
    b = {r["item_id"]: r.get("score") for r in cached_reads.stored_judgments(run_b)}
    common = [i for i in a if i in b and a[i] is not None and b[i] is not None]
    frame = pd.DataFrame(
        {"item": common, "score A": [a[i] for i in common], "score B": [b[i] for i in common]}
    )
    frame["A − B"] = frame["score A"] - frame["score B"]
    order = frame["A − B"].abs().sort_values(ascending=False, kind="stable").index
    return frame.loc[order].reset_index(drop=True)


def incomparable(run_a: Run, run_b: Run) -> list[str]:
    """What differs between two runs' judges (`run.plan.judge_difference`: provider, model, server, decoding), and
    their reported model versions."""
    from geval_core.run.plan import judge_difference

    a, b = run_a.judge, run_b.judge
    found = [
        f"{'server' if k == 'base_url' else k}: {getattr(a, k)} vs {getattr(b, k)}"
        for k in judge_difference(a, b)
    ]
    va, vb = run_a.model_version, run_b.model_version
    if va and vb and va != vb:
        found.append(f"reported model version: {va} vs {vb}")
    return found


def export_runs(lib, prompt_id: str) -> list[tuple[Run, list[str]]]:
    """(run, its dataset's human ratings) of the finished ("done") runs of exactly this prompt version on a dataset
    with human ratings, newest first."""
    human = {d.id: d.human for d in lib.list_datasets()}  # one read, not one per run
    out = []
    for run in lib.list_runs(prompt=prompt_id):
        if run.prompt_id != prompt_id or run.status != "done":
            continue
        humans = list(human.get(run.dataset_id, []))
        if humans:
            out.append((run, humans))
    return out


@st.cache_data(show_spinner="Measuring agreement…", max_entries=32)
def _run_agreement(
    path: str, run_id: str, version: tuple[int, int, str], human_field: str, pooled: bool
) -> dict[str, Any]:
    from geval_core.stats import run_agreement

    return run_agreement(state.library(), run_id, human_field, pooled=pooled)


def export_agreement(run: Run, human_field: str, pooled: bool = False) -> dict[str, Any]:
    """prompt_library.run_agreement for a prompt export, the same function as `geval prompts export
    --agreement-run` (cached per cached_reads.run_state, rating and reading)."""
    return _run_agreement(
        os.path.abspath(state.sidebar().db_path), run.id, cached_reads.run_state(run), human_field, pooled
    )
