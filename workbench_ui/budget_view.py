"""The Agreement page's rating budget: how many more human ratings the run's agreement figure and its PPI estimate
need for a target interval width, with the asked chance (diagnostics.budget)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from geval_core.errors import GEvalError
from geval_core.records import Run
from workbench_ui import cached_reads, safe_text, sealing

K = "bd_"
FIGURES = ("spearman", "kendall", "pearson", "kappa_quadratic")


def panel(lib, run: Run, field: str | None) -> None:
    """An expander: target widths and the assurance; the plans, when asked for."""
    if not field:
        return
    box = st.expander("How many more ratings? (rating budget)", key=K + "open", on_change="rerun")
    if not box.open:
        return
    with box:
        st.caption(
            "From this run's scores and the ratings so far: the ratings needed for the interval of the "
            "agreement figure, and of the PPI estimate of the mean rating, to be at most the target wide, "
            "with the chance you ask for. In simulation on SummEval's expert ratings the planned number reached the "
            "width in about the asked share of repeats (a little less for PPI from a small pilot)."
        )
        c = st.columns(4)
        figure = c[0].selectbox("Figure", FIGURES, key=K + "figure")
        width = c[1].number_input("Its interval's width", 0.01, 2.0, 0.1, 0.01, key=K + "width")
        ppi_width = c[2].number_input("PPI interval's width", 0.01, 4.0, 0.2, 0.01, key=K + "ppi_width")
        assurance = c[3].number_input("Assurance", 0.5, 0.99, 0.8, 0.05, key=K + "assurance")
        asked = [
            run.id,
            cached_reads.run_state(run),
            field,
            figure,
            width,
            ppi_width,
            assurance,
            sealing.cache_key(),
        ]
        if st.button("Plan the ratings", key=K + "plan"):
            st.session_state[K + "planned"] = {
                "asked": asked,
                "out": plan(lib, run, field, figure, width, ppi_width, assurance),
            }
        planned = st.session_state.get(K + "planned")
        if planned and planned["asked"] == asked:  # a plan of other inputs is not shown as this one's
            show(planned["out"])


def plan(
    lib, run: Run, field: str, figure: str, width: float, ppi_width: float, assurance: float
) -> dict[str, Any]:
    """Both plans, or the reason there is none."""
    from geval_core.diagnostics.budget import run_budget

    store = sealing.scoped(cached_reads.CachedLibrary(lib))
    try:
        with st.spinner("Planning…"):
            return run_budget(
                store,
                run.id,
                field,
                float(width),
                float(ppi_width),
                figure,
                float(assurance),
                bootstrap=500,
            )
    except GEvalError as exc:
        return {"error": str(exc)}


def show(out: dict[str, Any]) -> None:
    """The plans as metrics, with what they start from and assume."""
    if "error" in out:
        st.warning(safe_text.md_escape(out["error"]))
        return
    st.caption(f"{out['rated']} of {out['judged']} judged items rated so far.")
    a, p = out.get("agreement"), out.get("ppi")
    if a:
        c = st.columns(3)
        unit = a["unit"]
        c[0].metric(
            f"{a['figure']} now",
            safe_text.fmt(a["estimate"]),
            help=f"interval width {safe_text.fmt(a['pilot_width'])} from {a['pilot_units']} {unit}",
        )
        c[1].metric(
            f"More {unit} to rate",
            "not reachable" if a["planned_units"] is None else a["further_units"],
            help=None
            if a["planned_units"] is None
            else (
                f"{a['planned_units']} {unit} in all"
                + (f", about {a['further_items']} more items" if unit == "groups" else "")
            ),
        )
        c[2].metric(
            f"For an even chance ({unit})", a["median_units"] if a["median_units"] is not None else "—"
        )
    if p:
        c = st.columns(3)
        c[0].metric(
            "PPI estimate now",
            safe_text.fmt(p["estimate"]),
            help=f"interval width {safe_text.fmt(p['pilot_width'])}",
        )
        c[1].metric(
            "More items to rate (PPI)",
            "not reachable" if p["planned_rated"] is None else p["further_rated"],
            help=None if p["planned_rated"] is None else f"{p['planned_rated']} rated in all",
        )
        c[2].metric("For an even chance (PPI)", p["median_rated"] if p["median_rated"] is not None else "—")
        if p["planned_rated"] is None:
            st.warning(
                safe_text.md_escape(
                    f"Rating all {p['judged']} judged items gives a PPI interval {safe_text.fmt(p['width_all_rated'])} "
                    "wide: judge more items"
                    + (
                        ""
                        if p["rated_with_more_judged"] is None
                        else f" (with many more, about {p['rated_with_more_judged']} rated would do)"
                    )
                )
            )
    st.caption(safe_text.md_escape(out["assumes"]))
