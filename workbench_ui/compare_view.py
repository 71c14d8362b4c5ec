"""Agreement page parts: how many groups the headline used, and one item's distributions in two runs."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

import streamlit as st

from geval_core.records import Run
from workbench_ui import cached_reads, charts, safe_text, sealing

TINY_GROUP = 3  # below this median size a per-group correlation is mostly undefined or ±1


def group_sizes(paired: dict[str, list]) -> list[int]:
    """Items per group among those with both a judge score and a human rating."""
    counts = Counter(
        g
        for g, j, h in zip(paired["groups"], paired["judge"], paired["human"], strict=True)
        if g is not None and j is not None and h is not None
    )
    return sorted(counts.values())


def groups_note(result: dict[str, Any], paired: dict[str, list]) -> None:
    """Groups used and skipped and the median group size beside a group-level headline; a warning when tiny."""
    sizes = group_sizes(paired)
    if not sizes:
        return
    median = statistics.median(sizes)
    used, skipped = result.get("groups") or 0, result.get("groups_skipped") or 0
    st.caption(
        f"Group-level reading: {used} of {used + skipped} groups used ({skipped} skipped: constant or "
        f"fewer than 2 items); median group size {median:g} items."
    )
    if median < TINY_GROUP:
        st.warning(
            f"The groups are tiny (median {median:g} items): a correlation within one or two items is "
            "undefined or ±1, so the group-level figures and their intervals swing widely. Read the "
            "dataset-level row in the table too."
        )


def item_side_by_side(
    run_a: Run,
    run_b: Run,
    labels: dict[str, str],
    ids: list[str],
    points: tuple[int, ...] | list[int],
) -> None:
    """Pick an item scored in both runs and see each run's rating distribution next to the other."""
    if not ids:
        return
    st.caption("One item in both runs: the probability each judge put on every rating")
    item_id = st.selectbox("Item", ids, key="ag_compare_item")
    left, right = st.columns(2)
    for column, run, name in ((left, run_a, "A"), (right, run_b, "B")):
        row = next((r for r in cached_reads.stored_judgments(run) if r["item_id"] == item_id), None)
        with column:
            st.caption(safe_text.md_escape(f"{name}: {labels[run.id]}"))
            if row is None:
                st.info("Not judged in this run.")
                continue
            st.metric(f"Weighted score ({name})", safe_text.fmt(row.get("score")))
            fig = charts.distribution_figure(
                row.get("distribution") or {}, row.get("valid_mass"), points, f"Run {name}"
            )
            st.plotly_chart(fig, key=f"ag_compare_chart_{name}")


def paired_change(run_a: Run, run_b: Run, field: str) -> None:
    """Run A minus run B in agreement with people, paired on the same items, with 95% intervals (groups resampled):
    did A improve on B? The same figures as `geval compare B A --human FIELD`."""
    from geval_core.errors import GEvalError

    try:
        report = _paired_change(
            cached_reads.library_path(),
            run_a.id,
            cached_reads.run_state(run_a),
            run_b.id,
            cached_reads.run_state(run_b),
            field,
            sealing.cache_key(),
        )
    except GEvalError as exc:
        st.caption(safe_text.md_escape(f"No paired change: {exc}"))
        return
    from workbench_ui.align_view import comparison_table

    table = comparison_table(report).rename(
        columns={"base": "run B", "candidate": "run A (above)", "difference": "A − B"}
    )
    resampled = "documents" if report.get("resampled") == "groups" else report.get("resampled", "items")
    st.caption(
        safe_text.md_escape(
            f"Change in agreement with people, run A (above) minus run B, on the {report.get('items', 'same')} items "
            f"both scored, 95% intervals with the {resampled} resampled: an interval above 0 says A agrees better."
        )
    )
    st.dataframe(table, hide_index=True)


@st.cache_data(show_spinner="Comparing the two runs…", max_entries=32)
def _paired_change(
    path: str, run_a: str, state_a: tuple, run_b: str, state_b: tuple, field: str, scope_key: str
) -> dict[str, Any]:
    from geval_core.diagnostics.compare import compare_runs
    from workbench_ui import state

    return compare_runs(
        sealing.scoped(cached_reads.CachedLibrary(state.library())), run_b, run_a, field, 1000
    )
