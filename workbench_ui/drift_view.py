"""The Library page's drift watch of a prompt: freeze an anchor set from a finished run, check it again as a task of
the library (never in the page's script thread), and read the e-value's history and the verdict."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from geval_core.types import FrozenPrompt
from prompt_library import task_jobs
from workbench_ui import agree, cached_reads, run_plans, safe_text, task_progress

__all__ = ["section"]

KEY = "library_drift"
KIND = "drift"


def section(lib, prompt: FrozenPrompt) -> None:
    """The drift watch expander of one prompt version."""
    with st.expander("Drift watch: has the judge changed since a reference run?"):
        st.caption(
            "An anchor set of human-rated items frozen with a reference run of this version; each check "
            "re-scores it (never from the judge cache) and appends an unalterable record. The test's "
            "false-alarm rate holds however often you check (`geval drift` does the same)."
        )
        safe_text.guarded(lambda: freeze_form(lib, prompt))
        watches = _watches(lib, prompt)  # after the form: a watch frozen by this very click is listed
        if not watches:
            st.caption("No drift watch of this version yet.")
            return
        names = {f"{w['name']}@{w['version']}": w for w in watches}
        label = st.selectbox("Watch", list(names), key=f"{KEY}_watch_{prompt.id[:12]}")
        safe_text.guarded(lambda: watch_panel(lib, names[label]))


def _watches(lib, prompt: FrozenPrompt) -> list[dict[str, Any]]:
    """The latest version of every drift watch of this prompt version."""
    from geval_core.diagnostics.drift import KIND as RECORD
    from geval_core.diagnostics.drift import get_watch

    found = [get_watch(lib, key) for key in lib.record_keys(RECORD)]
    return [w for w in found if w["prompt"] == prompt.id]


def freeze_form(lib, prompt: FrozenPrompt) -> None:
    """Pick a finished run of this version on rated data, a human rating and a name; freeze the anchor set."""
    from geval_core.diagnostics.drift import freeze_watch

    runs = {r.id: (r, humans) for r, humans in agree.export_runs(lib, prompt.id)}
    if not runs:
        st.caption("To watch for drift, finish a run of this version on a dataset with human ratings first.")
        return
    c1, c2, c3 = st.columns(3)
    run_id = c1.selectbox(
        "Reference run",
        list(runs),
        format_func=lambda r: cached_reads.run_label(runs[r][0]),
        key=f"{KEY}_run_{prompt.id[:12]}",
    )
    run, humans = runs[run_id]
    default = cached_reads.chosen_human(humans, prompt)
    human = c2.selectbox(
        "Human rating", humans, index=humans.index(default) if default else 0, key=f"{KEY}_human_{run_id}"
    )
    name = c3.text_input("Watch name", value=prompt.name, key=f"{KEY}_name_{prompt.id[:12]}")
    if st.button("Freeze anchor set", key=f"{KEY}_freeze_{prompt.id[:12]}"):
        watch, created = freeze_watch(lib, name, prompt.id, run.dataset_id, [run_id], human)
        st.success(
            safe_text.md_escape(
                f"{'Froze' if created else 'Already frozen:'} {watch['name']}@"
                f"{watch['version']}: {len(watch['items'])} anchors"
                f"{' (dev side)' if watch['side'] else ''}."
            )
        )


def watch_panel(lib, watch: dict[str, Any]) -> None:
    """The watch's check (start, progress, outcome), then its history and verdict."""
    from geval_core.diagnostics.drift import pending_runs, record_check

    key = watch["id"]
    if task_jobs.task_state(lib, KIND, key) in task_jobs.LIVE:
        progress(lib, key)
    else:
        for run in pending_runs(lib, watch):  # a check whose worker ended while no page recorded it
            if run.status == "done":
                record_check(lib, watch, run.id)
        check_form(lib, watch)
    history(lib, watch)


def check_form(lib, watch: dict[str, Any]) -> None:
    """Sample size, the plan's line, and the button that starts the check as a task."""
    from geval_core.diagnostics.drift import plan_check

    found = task_jobs.task(lib, KIND, watch["id"])
    if found and found.get("ended_at") and found.get("error"):
        st.warning(safe_text.md_escape(f"The last check ended without a record: {found['error']}"))
    anchors = len(watch["items"])
    sample = int(
        st.number_input(
            "Anchors to re-score (all by default)",
            min_value=1,
            max_value=anchors,
            value=anchors,
            key=f"{KEY}_sample_{watch['id'][:12]}",
        )
    )
    plan = plan_check(lib, watch, None if sample >= anchors else sample)
    run_plans.show_plan(plan)
    if st.button("Run a check", key=f"{KEY}_check_{watch['id'][:12]}", disabled=bool(plan.problems)):
        spec = {
            "watch": f"{watch['name']}@{watch['version']}",
            "sample": None if sample >= anchors else sample,
        }
        task_jobs.start_task(lib, KIND, watch["id"], spec, plan.total)
        st.rerun()


def progress(lib, key: str) -> None:
    """The check's progress while its worker goes, and its Stop."""
    task_progress.watch(lib, KIND, key, "anchors re-scored", "Stop the check", f"{KEY}_stop_{key[:12]}")


def history(lib, watch: dict[str, Any]) -> None:
    """The e-value after every check beside the alarm line, the checks' figures, and the verdict."""
    from geval_core.diagnostics.drift import watch_report

    report = watch_report(lib, watch)
    versions = ", ".join(watch["model_versions"]) or "not reported"
    st.caption(
        safe_text.md_escape(
            f"{len(watch['items'])} anchors rated {watch['human']!r}, reference run "
            f"{', '.join(watch['runs'])}, model version {versions}, alpha {watch['alpha']:g}."
        )
    )
    checks = report["checks"]
    if not checks:
        st.caption("No check yet.")
        return
    rows = pd.DataFrame([_row(c) for c in checks])
    # On a log scale: a judge that changed sends the e-value up by orders of magnitude, and the alarm line stays seen.
    chart = pd.DataFrame(
        {
            "log10 e-value": np.log10(rows["e-value"].clip(lower=1e-12)),
            "alarm (log10 1/alpha)": np.log10(rows["alarm at"]),
        }
    ).set_index(rows["check"])
    st.line_chart(chart)
    st.dataframe(rows, hide_index=True)
    text = (
        f"Drift: the e-value reached {report['threshold']:g} at check {report['alarm_at']}; the judge changed. "
        "Freeze a new anchor set to watch the changed judge."
        if report["verdict"] == "drift"
        else f"No drift so far: e-value {report['e_value']:.3f} after {len(checks)} checks, below "
        f"{report['threshold']:g}."
    )
    (st.warning if report["verdict"] == "drift" else st.success)(safe_text.md_escape(text))


def _row(check: dict[str, Any]) -> dict[str, Any]:
    figure = ((check.get("agreement") or {}).get("figures") or {}).get("spearman") or {}
    return {
        "check": check["seq"],
        "at": check["at"],
        "items": len(check["items"]),
        "e-value": check["e_value"],
        "alarm at": check["threshold"],
        "mean TV": check["shift"]["mean_tv"],
        "top moved": check["shift"]["top_moved_share"],
        "Spearman now": figure.get("second"),
        "Spearman change": figure.get("difference"),
        "model version": ", ".join(check["model_versions"]["now"]) or "not reported",
    }
