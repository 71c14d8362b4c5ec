"""The Agreement page's rubric-form probe: re-score a sample of the run with the rubric shown in another form (the
anchors in reverse order, the labels shifted, the scale reversed) and show how far scores and rankings move.

The probe is a task of the library (kind "rubric", keyed by the run): a worker process plans one run per form
through the one plan and scores it, so a reload or another tab finds it going; the report is read from the stored
probe runs whenever the page is drawn, so a probe started with `geval probe rubric` shows here too.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from geval_core.diagnostics.rubric_probes import MARK, VARIANTS, rubric_probe_runs, rubric_result
from geval_core.errors import GEvalError
from geval_core.prompts.rubric_forms import derive
from geval_core.records import Run
from geval_core.run.plan import plan_settings
from prompt_library import task_jobs
from workbench_ui import cached_reads, run_plans, safe_text, task_progress

KIND = "rubric"
K = "rb_"
FORMS = {
    "reverse-anchors": "anchors in reverse order",
    "shift-labels": "labels shifted (1-5 shown as 0-4)",
    "reverse-scale": "scale reversed (1 is best)",
}
COLUMNS = {
    "variant": "form",
    "mapping": "mapped back",
    "items": "items",
    "mean_abs_change": "mean |change|",
    "mean_signed_change": "mean change",
    "spearman": "Spearman vs original",
    "kendall": "Kendall vs original",
    "top_changed_share": "top rating changed",
    "human_spearman_original": "Spearman with people (original)",
    "human_spearman_variant": "Spearman with people (this form)",
    "unscored": "no score",
}


def section(lib, run: Run) -> None:
    """The rubric-form probe of a run: its settings and start button, its progress, its last report."""
    st.subheader("Rubric-form probe")
    st.caption(
        "Does the rating follow the descriptions or their form? A sample of this run's items is scored again "
        "with the rubric's anchors in reverse order, its labels shifted and its scale reversed; each form's "
        "ratings are mapped back onto the original scale (Eq. 1 over the form's own scale, then mapped)."
    )
    if run.extra.get(MARK):
        st.caption(
            safe_text.md_escape(f"This run is itself a rubric-form probe of run {run.extra[MARK]['of']}.")
        )
        return
    if task_jobs.task_state(lib, KIND, run.id) in task_jobs.LIVE:
        watch(lib, run.id)
        return
    start_form(lib, run)
    show(lib, run)


def start_form(lib, run: Run) -> None:
    """The sample, the forms and the seed; the judge that will answer; the button that starts the task."""
    c1, c2, c3 = st.columns([1, 3, 1])
    sample = int(c1.number_input("Items to re-score", 1, 500, 20, key=K + "sample"))
    forms = c2.multiselect(
        "Forms",
        list(VARIANTS),
        default=list(VARIANTS),
        key=K + "forms",
        format_func=lambda v: f"{v}: {FORMS[v]}",
    )
    seed = int(c3.number_input("Seed", 0, 1_000_000, 0, key=K + "seed"))
    run_plans.show_judge(plan_settings(run.judge, lib))  # the probed run's own judge
    if st.button("Run rubric-form probe (costs judge calls)", key=K + "run", disabled=not forms):
        prompt = lib.get_prompt(run.prompt_id)
        for form in forms:  # a prompt whose rubric cannot take a form says so here, before a worker starts
            derive(prompt.dimension, form)
        spec = {"run_id": run.id, "sample": sample, "variants": forms, "seed": seed}
        task_jobs.start_task(lib, KIND, run.id, spec, sample * len(forms))
        st.rerun()


def watch(lib, run_id: str) -> None:
    """The probe's progress while its worker goes, and its Stop."""
    task_progress.watch(
        lib, KIND, run_id, "items scored over the forms", "Stop the rubric-form probe", K + "stop"
    )


@st.cache_data(show_spinner=False, max_entries=32)
def _result(path: str, run_id: str, probes: tuple[tuple[str, tuple[int, int, str]], ...]) -> dict[str, Any]:
    from workbench_ui import state

    return rubric_result(state.library(), run_id)


def show(lib, run: Run) -> None:
    """Why the last probe ended without a report, and the report of the newest finished probe of each form."""
    found = task_jobs.task(lib, KIND, run.id) or {}
    if found.get("ended_at") and found.get("error"):
        st.warning(
            safe_text.md_escape(f"The last rubric-form probe ended without a report: {found['error']}")
        )
    probes = rubric_probe_runs(lib, run.id)
    if not any(p.status == "done" for p in probes):
        return
    try:
        out = _result(str(lib.path), run.id, tuple((p.id, cached_reads.run_state(p)) for p in probes))
    except GEvalError as exc:
        st.warning(safe_text.md_escape(str(exc)))
        return
    rows = [{COLUMNS[k]: v.get(k) for k in COLUMNS} for v in out["variants"]]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    human = (
        f"people's rating {out['human']!r}" if out["human"] else "no human rating named like the dimension"
    )
    judges = "; ".join(
        f"{v['variant']}: run {v['probe_run']} by {run_plans.run_judge(lib.get_run(v['probe_run']))}"
        for v in out["variants"]
    )
    st.caption(
        safe_text.md_escape(
            f"{out['sample']} items; {human}. Changes are the form's score minus the "
            f"original's, on the original scale. {judges}."
        )
    )
    if st.toggle("Per item: the original score, the people's rating and each form's score", key=K + "items"):
        st.dataframe(pd.DataFrame(out["per_item"]), hide_index=True)
