"""Agreement page panels for the judge diagnostics: calibration, PPI estimate, bias probes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from geval_core.errors import GEvalError
from geval_core.records import Run
from geval_core.run.plan import estimate_judges
from geval_core.stats.calibration import ece_context
from workbench_ui import cached_reads, live, rubric_view, run_plans, safe_text, sealing, state
from workbench_ui.charts import _LAYOUT, _safe

K = "dg_"
OPEN = K + "open_"  # the panels' expanders: dg_open_calibration, dg_open_estimate, dg_open_bias


def _compute(kind: str, lib, run_id: str, field: str, *args: Any) -> dict[str, Any]:
    """One diagnostic of a stored run (the statistics are imported when first needed)."""
    from geval_core.diagnostics.bias_probes import bias_report
    from geval_core.stats.stored import run_calibration, run_estimate, runs_difference

    if kind == "calibration":
        return run_calibration(lib, run_id, field)
    if kind == "estimate":
        return run_estimate(lib, run_id, field, args[0], rated=args[1])
    if kind == "difference":
        return runs_difference(lib, run_id, args[2], field, args[0], rated=args[1])
    return bias_report(lib, run_id, field, args[0])


@st.cache_data(show_spinner=False, max_entries=64)
def _cached(
    path: str, kind: str, run_id: str, version: tuple, field: str, args: tuple, scope_key: str
) -> dict[str, Any]:
    return _compute(kind, sealing.scoped(cached_reads.CachedLibrary(state.library())), run_id, field, *args)


def diagnostic(kind: str, run: Run, field: str, *args: Any) -> dict[str, Any]:
    """A diagnostic computed once per run state and inputs: a widget click elsewhere on the page costs nothing.

    The key holds the run's state (judged, errors, status), so a run that goes on is computed again;
    `args` that name another run carry that run's state too.
    """
    return _cached(
        cached_reads.library_path(),
        kind,
        run.id,
        cached_reads.run_state(run),
        field,
        args,
        sealing.cache_key(),
    )


def reliability_figure(bins: list[dict[str, Any]]) -> go.Figure:
    """Mean predicted probability against how often people gave the rating, per bin (size = count)."""
    fig = go.Figure(
        [
            go.Scatter(
                x=[0, 1],
                y=[0, 1],
                mode="lines",
                line={"dash": "dot", "color": "#999"},
                name="perfect calibration",
            ),
            go.Scatter(
                x=[b["predicted"] for b in bins],
                y=[b["observed"] for b in bins],
                mode="lines+markers",
                name="judge",
                marker={"size": [6 + 14 * (b["count"] / max(c["count"] for c in bins)) for b in bins]},
                text=[f"{b['count']} predictions" for b in bins],
            ),
        ]
    )
    fig.update_layout(
        title="Reliability: judge probability vs people",
        xaxis_title="judge's probability of a rating",
        yaxis_title="share of people giving it",
        **_LAYOUT,
    )
    # Both axes are probabilities: the whole 0-100 % range in the same steps, so the diagonal is the diagonal.
    for axis in (fig.update_xaxes, fig.update_yaxes):
        axis(range=[0, 1], dtick=0.1, tickformat=".0%")
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


def histogram_figure(
    points: Sequence[int], expected: Sequence[float], observed: Sequence[float]
) -> go.Figure:
    """Expected rating counts (sum of the judge's probabilities) beside the observed ones."""
    labels = [str(p) for p in points]
    fig = go.Figure(
        [
            go.Bar(x=labels, y=list(expected), name="expected (judge)"),
            go.Bar(x=labels, y=list(observed), name="observed (people)"),
        ]
    )
    fig.update_layout(title="Rating counts", barmode="group", xaxis_title="rating", **_LAYOUT)
    return fig


def estimate_figure(out: dict[str, Any], human: str) -> go.Figure:
    """The PPI estimate and the human-only mean with their intervals, and the judge-only mean."""
    rows = [
        ("PPI", out["estimate"], out["ci"]),
        ("human only", out["human_mean"], out.get("human_ci")),
        ("judge only", out["judge_mean"], None),
    ]
    fig = go.Figure(
        go.Scatter(
            x=[v for _, v, _ in rows],
            y=[n for n, _, _ in rows],
            mode="markers",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [(ci[1] - v) if ci else 0 for _, v, ci in rows],
                "arrayminus": [(v - ci[0]) if ci else 0 for _, v, ci in rows],
            },
        )
    )
    fig.update_layout(title=f"Mean human {_safe(human)}: estimates with 95% intervals", **_LAYOUT)
    return fig


def calibration_panel(lib, run: Run, field: str) -> None:
    """Reliability diagram, ECE and rating histograms of a run against one human rating."""
    out = diagnostic("calibration", run, field)
    c = st.columns(3)
    c[0].metric("ECE", safe_text.fmt(out["ece"]))
    c[1].metric("Items", out["items"])
    c[2].metric("Observed from", "raters' shares" if out["per_rater"] else "rounded means")
    context, caution = ece_context(out)
    if caution:  # the workbench's own words and figures: nothing of the user's to escape
        st.warning(f"ECE: {caution} ({context}).")
    elif context:
        st.caption(f"ECE of {context}.")
    st.caption(
        "Each (item, rating) pair is one prediction. Without per-rater ratings (NAME.0, NAME.1, …) the "
        "mean rating, rounded to the nearest point (halves up), is what people gave."
    )
    c1, c2 = st.columns(2)
    c1.plotly_chart(reliability_figure(out["bins"]), key=K + "rel")
    c2.plotly_chart(histogram_figure(out["points"], out["expected"], out["observed"]), key=K + "hist")
    st.dataframe(pd.DataFrame(out.get("score_bins", [])), hide_index=True)


def estimate_panel(lib, run: Run, field: str) -> None:
    """The PPI estimate of the mean human rating beside the judge-only and human-only means."""
    c1, c2 = st.columns(2)
    method = c1.selectbox("Method", ["ppi++", "classic"], key=K + "method")
    rated = (
        int(c2.number_input("Use only this many ratings (0 = all)", 0, 100_000, 0, key=K + "rated")) or None
    )
    out = diagnostic("estimate", run, field, method, rated)
    c = st.columns(4)
    c[0].metric("PPI estimate", safe_text.fmt(out["estimate"]))
    c[1].metric("95% interval", f"{out['ci'][0]:.3f} – {out['ci'][1]:.3f}" if out.get("ci") else "withheld")
    c[2].metric("Rated / total", f"{out['n_rated']} / {out['n_total']}")
    c[3].metric("λ", safe_text.fmt(out["lam"]))
    if out.get("warning"):
        st.warning(safe_text.md_escape(out["warning"].capitalize()))
    if out.get("groups"):
        st.caption(f"Items come in {out['groups']} groups: the interval's variance is clustered on them.")
    st.caption(safe_text.md_escape("Assumption: " + (out.get("assumption") or "")))
    st.plotly_chart(estimate_figure(out, field), key=K + "ppi")
    versus_section(lib, run, field, method, rated)


def versus_section(lib, run: Run, field: str, method: str, rated: int | None) -> None:
    """The difference of this run's estimate and another run's on different items (e.g. another system)."""
    others = {
        r.id: r
        for r in lib.list_runs()
        if r.id != run.id and r.dataset_id != run.dataset_id and int(r.judged or 0)
    }
    if not others:
        return
    pick = st.selectbox(
        "Difference with another run (different items, e.g. another system's outputs)",
        [None, *others],
        key=K + "versus",
        format_func=lambda i: "none" if i is None else cached_reads.run_label(others[i]),
    )
    if pick is None:
        return
    other = others[pick]
    d = diagnostic("difference", run, field, method, rated, pick, cached_reads.run_state(other))["difference"]
    st.metric(
        "This run minus the other: mean human rating",
        safe_text.fmt(d["estimate"]),
        help="PPI estimates of both runs; their variances add (independent items)",
    )
    where = (
        f"95% interval [{safe_text.fmt(d['ci'][0])}, {safe_text.fmt(d['ci'][1])}]"
        if d.get("ci")
        else f"no interval ({d.get('warning') or 'withheld'})"
    )
    st.caption(
        safe_text.md_escape(
            f"{where}; judge-only difference {safe_text.fmt(d['judge_mean'])}, "
            f"human-only {safe_text.fmt(d['human_mean'])}"
        )
    )
    judges = estimate_judges(run, other)
    st.caption(safe_text.md_escape(f"Judges: this run {judges['a']}; the other {judges['b']}."))
    if judges["note"]:
        st.warning(safe_text.md_escape(judges["note"]))


def bias_panel(lib, run: Run, field: str) -> None:
    """Verbosity, per-system offsets, and the perturbation and rubric-form probes run on request."""
    fields = sorted({*lib.get_prompt(run.prompt_id).dimension.inputs, "group"})
    system = st.selectbox("System field (optional)", ["(none)", *fields], key=K + "sys")
    out = diagnostic("bias", run, field, None if system == "(none)" else system)
    c = st.columns(2)
    c[0].metric("Spearman(score, length)", safe_text.fmt(out["length_spearman"]))
    c[1].metric("… partial on the human rating", safe_text.fmt(out.get("length_partial_spearman")))
    if out.get("systems"):
        st.dataframe(pd.DataFrame(out["systems"]), hide_index=True)
    limit = int(st.number_input("Damaged copies to score", 1, 500, 20, key=K + "limit"))
    probe_section(lib, run, limit)
    rubric_view.section(lib, run)


def probe_section(lib, run: Run, limit: int) -> None:
    """The perturbation probe as a job of the library: started here, scored by a worker (a reload or another tab
    leaves it running), its result read from its stored run whenever the page is drawn."""
    from geval_core.diagnostics.bias_probes import perturbation_result, plan_perturbation, probe_runs

    probes = probe_runs(lib, run.id)
    latest = probes[0] if probes else None
    if latest is not None and live.is_live(lib, latest.id):
        st.caption("The perturbation probe is scoring the damaged copies:")
        live.attach(lib, latest.id, key=K + "probe_")
        return
    if st.button("Run perturbation probe (costs judge calls)", key=K + "probe"):
        plan = plan_perturbation(lib, run.id, limit=limit)
        st.caption(safe_text.md_escape(plan.describe()))
        live.start(lib, plan.recorded_id, plan.options.concurrency)
        st.rerun()
    if latest is None or latest.status != "done":
        if latest is not None:
            st.caption(safe_text.md_escape(f"The last probe's run {latest.id} is {latest.status}."))
        return
    p = perturbation_result(lib, latest.id)
    st.metric(
        f"Sensitivity ({p['kind']})",
        safe_text.fmt(p["sensitivity"]),
        help="Share of damaged copies the judge rated lower than the original",
    )
    st.caption(
        safe_text.md_escape(
            f"95% interval [{safe_text.fmt(p['ci'][0])}, {safe_text.fmt(p['ci'][1])}] "
            f"over {p['pairs']} copies; mean drop {safe_text.fmt(p['mean_drop'])}; "
            f"probe run {latest.id} by {run_plans.run_judge(latest)}"
        )
    )


def panels(lib, run: Run, field: str | None) -> None:
    """The diagnostics section of the Agreement page (each panel's input errors shown as text)."""
    if not field:
        return
    st.header("Judge diagnostics")
    for name, title, panel in (
        ("calibration", "Calibration", calibration_panel),
        ("estimate", "Corrected estimate (PPI)", estimate_panel),
        ("bias", "Bias probes", bias_panel),
    ):
        # Computed when opened, not on every first render: for 20,000 items the three panels took a third
        # of the Agreement page (an expander that tracks its state reruns the page when it opens).
        box = st.expander(title, key=OPEN + name, on_change="rerun")
        if not box.open:
            continue
        with box:
            try:
                panel(lib, run, field)
            except GEvalError as exc:
                st.warning(safe_text.md_escape(str(exc)))
