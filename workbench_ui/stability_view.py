"""The Design page's stability check: score a sample K times before freezing and show what moves."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from geval_core.prompts import content_hash
from geval_core.prompts.inputs import missing_inputs
from geval_core.run.plan import plan_judge
from geval_core.types import Dimension
from prompt_library import task_jobs
from workbench_ui import cached_reads, run_plans, safe_text, sealing, task_progress

KEY = "design_stability"


KIND = "stability"


def panel(lib, dim: Dimension) -> None:
    """Choose a dataset, a sample size, K repeats; run it as a task of the library; show the report of this form."""
    with st.expander("Stability before freezing: do the ratings hold across repeats?"):
        datasets = [d for d in lib.list_datasets() if not missing_inputs(dim, d.fields)]
        if not datasets:
            st.info("No dataset has every input of this dimension yet: add one on the Datasets page.")
            return
        labels = {f"{d.name}@{d.version}": d for d in datasets}
        c1, c2, c3 = st.columns(3)
        label = c1.selectbox("Sample from", list(labels), key=KEY + "_data")
        size = int(c2.number_input("Items", min_value=2, max_value=200, value=10, key=KEY + "_n"))
        repeats = int(c3.number_input("Repeats K", min_value=2, max_value=10, value=3, key=KEY + "_k"))
        regenerate = st.checkbox("Regenerate the steps for every repeat", key=KEY + "_regen")
        planned = plan_judge(
            dim.judge, run_plans.sidebar_choice(), lib
        )  # the sidebar's judge, the form's decoding
        run_plans.show_judge(planned)
        form = content_hash(dim)
        if task_jobs.task_state(lib, KIND, form) in task_jobs.LIVE:
            watch(lib, form)
            return
        if st.button("Run the stability check", key=KEY + "_run"):
            items = sealing.dev_items(lib, labels[label].id, cached_reads.dataset_items(labels[label].id))
            spec = {
                "dimension": dim.to_dict(),
                "dataset_id": labels[label].id,
                "item_ids": [i.id for i in items[:size]],
                "repeats": repeats,
                "regenerate": regenerate,
                "settings": asdict(planned.settings),
            }
            task_jobs.start_task(lib, KIND, form, spec, repeats)
            st.rerun()
        show(lib, dim)


def watch(lib, form: str) -> None:
    """The check's progress while its worker goes, and its Stop."""
    task_progress.watch(lib, KIND, form, "repeats scored", "Stop the stability check", KEY + "_stop")


def result_of(lib, dim: Dimension):
    """(the report of this very form's last check, or None; why the last check ended without one, or None)."""
    from geval_core.diagnostics.stability import stability_run_from_dict

    found = task_jobs.task(lib, KIND, content_hash(dim))
    if not found or not found.get("ended_at"):
        return None, None
    if found.get("result"):
        return stability_run_from_dict(found["result"]), None
    return None, found.get("error")


def current_check(lib, dim: Dimension):
    """The stability finding for this very form (None when none was run or the form changed since)."""
    from geval_core.diagnostics.stability import stability_check

    result = result_of(lib, dim)[0]
    return stability_check(result) if result is not None else None


def show(lib, dim: Dimension) -> None:
    """The last report of this form: its sentence, warnings and the per-item table."""
    result, error = result_of(lib, dim)
    if error:
        st.warning(
            safe_text.md_escape(f"The last stability check of this form ended without a report: {error}")
        )
    if result is None:
        return
    for warning in result.warnings:
        st.caption(safe_text.md_escape(warning))
    rows = result.report.to_dict()["per_item"]
    st.dataframe(
        pd.DataFrame(rows)[
            [c for c in ("id", "ratings", "flip_rate", "sd", "range", "changed", "moved") if c in rows[0]]
        ]
        if rows
        else pd.DataFrame(),
        hide_index=True,
    )
