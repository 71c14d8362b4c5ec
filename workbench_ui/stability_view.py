"""The Design page's stability check: score a sample K times before freezing and show what moves."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from geval_core.prompts import content_hash
from geval_core.prompts.inputs import missing_inputs
from geval_core.types import Dimension
from workbench_ui import cached_reads, safe_text, sealing, state

KEY = "design_stability"


def panel(lib, dim: Dimension) -> None:
    """Choose a dataset, a sample size, K repeats; run; keep the report with the form it was made for."""
    with st.expander("Stability before freezing: do the ratings hold across repeats?"):
        datasets = [d for d in lib.list_datasets() if not missing_inputs(dim, d["fields"])]
        if not datasets:
            st.info("No dataset has every input of this dimension yet: add one on the Datasets page.")
            return
        labels = {f"{d['name']}@{d['version']}": d for d in datasets}
        c1, c2, c3 = st.columns(3)
        label = c1.selectbox("Sample from", list(labels), key=KEY + "_data")
        size = int(c2.number_input("Items", min_value=2, max_value=200, value=10, key=KEY + "_n"))
        repeats = int(c3.number_input("Repeats K", min_value=2, max_value=10, value=3, key=KEY + "_k"))
        regenerate = st.checkbox("Regenerate the steps for every repeat", key=KEY + "_regen")
        if st.button("Run the stability check", key=KEY + "_run"):
            items = sealing.dev_items(lib, labels[label]["id"], cached_reads.dataset_items(labels[label]["id"]))
            run(dim, items[:size], repeats, regenerate)
        show(dim)


def run(dim: Dimension, items: list, repeats: int, regenerate: bool) -> None:
    """Score the sample K times with the sidebar's judge and the form's decoding settings."""
    from geval_core.diagnostics.stability import dimension_stability

    settings = state.run_settings(dim.judge, use_sidebar=True)
    judge = state.make_judge(settings)
    bar = st.progress(0.0, text=f"0 / {repeats} repeats")
    result = dimension_stability(dim, items, judge, repeats, regenerate_steps=regenerate, settings=settings,
                                 on_repeat=lambda done, total: bar.progress(done / total, f"{done} / {total} repeats"))
    st.session_state[KEY] = {"form": content_hash(dim), "run": result}


def current_check(dim: Dimension):
    """The stability finding for this very form (None when none was run or the form changed since)."""
    from geval_core.diagnostics.stability import stability_check

    found = st.session_state.get(KEY)
    return stability_check(found["run"]) if found and found["form"] == content_hash(dim) else None


def show(dim: Dimension) -> None:
    """The last report of this form: its sentence, warnings and the per-item table."""
    found = st.session_state.get(KEY)
    if not found or found["form"] != content_hash(dim):
        return
    result = found["run"]
    for warning in result.warnings:
        st.caption(safe_text.md_escape(warning))
    rows = result.report.to_dict()["per_item"]
    st.dataframe(pd.DataFrame(rows)[[c for c in ("id", "ratings", "flip_rate", "sd", "range", "changed", "moved")
                                     if c in rows[0]]] if rows else pd.DataFrame(), hide_index=True)
