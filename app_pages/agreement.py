"""Agreement page: a run against human ratings (group- and dataset-level, bootstrap CIs), and run vs run."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from geval_core.records import Dataset, Run
from geval_core.types import Scale
from workbench_ui import (
    agree,
    archive_view,
    budget_view,
    cached_reads,
    charts,
    compare_view,
    diagnostics,
    people,
    raters_view,
    safe_text,
    sealing,
    start_path,
    state,
)

K = "ag_"


def readings(
    run: Run, field: str, scale: Scale, grouped: bool, bootstrap: int, every: bool = True
) -> dict[str, dict]:
    """Group-level (when the items have groups) and dataset-level, for weighted and top-token scores.

    The first is the headline and always gets its intervals; the others only when `every` is set: a
    dataset-level interval recomputes every figure per resample (a minute for 20,000 items)."""
    out: dict[str, Any] = {}
    for which, name in agree.SCORES.items():
        for level in (True, False) if grouped else (False,):
            draws = bootstrap if every or not out else 0
            out[f"{'group' if level else 'dataset'}-level, {name}"] = agree.agreement_for(
                run, field, which, level, scale, draws
            )
    return out


def headline(result: dict, title: str) -> None:
    """The main reading's figures as metrics."""
    st.caption(safe_text.md_escape(title))
    c = st.columns(6)
    for col, (key, label) in zip(
        c,
        [
            ("spearman", "Spearman ρ"),
            ("kendall", "Kendall τ-b"),
            ("pearson", "Pearson r"),
            ("kappa_quadratic", "κ (quadratic)"),
            ("tie_rate", "Tie rate (judge)"),
            ("items", "Items"),
        ],
        strict=True,
    ):
        col.metric(label, safe_text.fmt(result.get(key)))


def agreement_section(run: Run, prompt, dataset: Dataset) -> str | None:
    """Judge vs human on one run: figures with intervals, scatter, and the replies curve for sampling.

    Returns the human rating chosen (None when the dataset has none)."""
    humans = list(dataset.human)
    if not humans:
        st.info("This run's dataset has no human ratings: agreement needs them (compare runs below).")
        people.unsaved_notice(state.library(), dataset.id, prompt.name)
        return None
    items = cached_reads.dataset_items(dataset.id)
    default = cached_reads.chosen_human(humans, prompt)
    c1, c2 = st.columns(2)
    field = c1.selectbox(
        "Human rating",
        humans,
        index=humans.index(default) if default else 0,
        key=K + "field",
        help=people.RULE,
    )
    people.unsaved_notice(state.library(), dataset.id, field)
    bootstrap = int(
        c2.number_input(
            "Bootstrap resamples (95% intervals)",
            min_value=0,
            max_value=5000,
            value=1000,
            step=100,
            key=K + "boot",
        )
    )
    every = st.toggle(
        "Intervals for every reading",
        key=K + "every_ci",
        help="The headline reading always has its intervals; the other readings' intervals take "
        "longer (a dataset-level interval recomputes every figure per resample).",
    )
    grouped = any(i.group for i in items)
    scale = prompt.dimension.scale
    results = readings(run, field, scale, grouped, bootstrap, every)
    main = next(iter(results))
    headline(
        results[main],
        f"{main} (the paper's reading on SummEval is group-level: per document, averaged)"
        if grouped
        else main,
    )
    p = agree.paired(run, field)
    if grouped:
        compare_view.groups_note(results[main], p)
    else:
        st.caption(agree.NO_GROUPS)
    st.dataframe(agree.results_frame(results), hide_index=True)
    if bootstrap and not every and len(results) > 1:
        st.caption(
            'Intervals shown for the headline reading only: turn on "Intervals for every reading" '
            "for the others."
        )
    note = agree.resampled_note(results[main])
    if results[main].get("ci_warning") or results[main].get("ci_flag"):
        st.warning(safe_text.md_escape(note))
    elif note:
        st.caption(safe_text.md_escape(note))
    method = agree.method_note(results[main])
    if method:
        with st.expander("How the intervals are made"):
            st.caption(safe_text.md_escape(method))
    st.caption(safe_text.md_escape(results[main].get("note", "")))
    figure, shown, total = agree.scatter(run, field)
    st.plotly_chart(figure, key=K + "scatter")
    if shown < total:
        st.caption(
            f"The scatter shows {shown:,} of the {total:,} items with both ratings, chosen at random, "
            "so that the browser stays quick; every figure above uses all of them."
        )
    replies_curve(run, p, scale, grouped)
    return field


def replies_curve(run: Run, p: dict, scale: Scale, grouped: bool) -> None:
    """For sampling runs: agreement and ties when averaging the first k replies."""
    if run.judge.mode != "sampling" or max(map(len, p["replies"]), default=0) < 2:
        return
    from geval_core.stats import replies_curve as curve_of

    curve = curve_of(p["replies"], p["human"], scale, groups=p["groups"] if grouped else None)
    if not curve:
        return
    ks = [c["k"] for c in curve]
    st.plotly_chart(
        charts.curve_figure(
            ks,
            {
                "Spearman": [c["spearman"] for c in curve],
                "Kendall": [c["kendall"] for c in curve],
                "tie rate": [c["tie_rate"] for c in curve],
            },
            "Averaging k sampled replies",
        ),
        key=K + "curve",
    )
    st.dataframe(pd.DataFrame(curve), hide_index=True)


def compare_section(
    lib, run: Run, runs: list[Run], labels: dict[str, str], scale: Scale, field: str | None
) -> None:
    """Run A (above) vs run B on the same dataset: per-item differences, top movers, agreement of each."""
    st.header("Compare two runs")
    others = [r.id for r in runs if r.dataset_id == run.dataset_id and r.id != run.id]
    if not others:
        st.caption("No other run on this dataset version to compare with.")
        return
    other = lib.get_run(st.selectbox("Run B", others, format_func=labels.__getitem__, key=K + "other"))
    differ = agree.incomparable(run, other)
    if differ:
        st.warning(
            "Different judges: this difference is the judge's as well as the prompt's. They differ in: "
            + safe_text.md_escape("; ".join(differ))
        )
    diffs = agree.differences(run, other)
    if diffs.empty:
        st.info("No item has a score in both runs.")
        return
    from geval_core.stats import spearman

    c = st.columns(3)
    c[0].metric("Items in both", len(diffs))
    c[1].metric("Spearman between the runs", safe_text.fmt(spearman(diffs["score A"], diffs["score B"])))
    c[2].metric("Largest move", safe_text.fmt(float(diffs["A − B"].iloc[0])))
    st.caption("Items that moved most")
    st.dataframe(diffs.head(10), hide_index=True)
    st.plotly_chart(charts.difference_histogram(diffs["A − B"].tolist()), key=K + "diffs")
    with st.expander("Every item"):
        st.dataframe(diffs, hide_index=True, height=300)
    compare_view.item_side_by_side(run, other, labels, diffs["item"].tolist(), scale.points)
    if field:
        each = {
            f"A: {labels[run.id]}": agree.agreement_for(run, field, "score", False, scale, 0),
            f"B: {labels[other.id]}": agree.agreement_for(other, field, "score", False, scale, 0),
        }
        st.caption("Agreement of each run with the human ratings (dataset-level, weighted score)")
        st.dataframe(agree.results_frame(each), hide_index=True)
        compare_view.paired_change(run, other, field)


def main() -> None:
    """The Agreement page."""
    st.title("Agreement and comparison")
    lib = state.library()
    runs = archive_view.visible(lib, "run", lib.list_runs())
    if not runs:
        st.info("No runs yet: score a dataset on the Score page first.")
        return
    labels = {r.id: cached_reads.run_label(r) for r in runs}
    run = lib.get_run(st.selectbox("Run", list(labels), format_func=labels.__getitem__, key=K + "run"))
    prompt = lib.get_prompt(run.prompt_id)
    dataset = lib.get_dataset(run.dataset_id)
    sealing.choose(lib, run, prompt)  # every figure below: the dev side of a split dataset unless opened
    if not int(run.judged or 0):
        st.info("No item of this run is judged yet.")
        return
    if dataset.human:  # the Start page's "compare with people" step: done once this page shows a rated run
        state.remember(start_path.AGREEMENT_SEEN, run.id)
    field = agreement_section(run, prompt, dataset)
    raters_view.panel(run, prompt, field)
    diagnostics.panels(lib, run, field)
    budget_view.panel(lib, run, field)
    compare_section(lib, run, runs, labels, prompt.dimension.scale, field)


safe_text.guarded(main)
