"""The Score page's cascade section: on a calibration set both judges scored, what each threshold sends to the
strong judge against the cascade's agreement with people (with intervals); the chosen threshold frozen into a
cascade; and a dataset scored with it as two jobs: the cheap judge on every item, then the strong judge on the
items the cheap one was unsure of. Finished runs with the same prompt, data and settings are reused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from geval_core.records import Dataset, Run
from geval_core.run.plan import RunPlan
from workbench_ui import (
    archive_view,
    cached_reads,
    charts,
    guarantee_view,
    live,
    people,
    run_plans,
    safe_text,
    state,
)
from workbench_ui.score_parts import run_item_ids

K = "cs_"
SIGNAL_HELP = (
    "How the cheap judgment's unsureness is read: entropy or sd of its rating distribution, margin (one "
    "minus the top-two gap), valid_mass (one minus it), flip (the chance another ask gives another "
    "rating). Items without a cheap score always go to the strong judge."
)


def section(lib) -> None:
    """Calibrate and freeze a cascade, then score a dataset with one."""
    st.caption(
        "A cheap judge on every item, the strong judge only where the cheap one is unsure. Calibrate on a "
        "dataset with human ratings that both judges scored, pick a threshold, freeze it, then score."
    )
    calibrate(lib)
    st.divider()
    guarantee_view.calibrate(lib)
    st.divider()
    score(lib)


NEEDS = (
    "To calibrate, a dataset with human ratings scored by two prompts of one dimension, each pinned to its "
    "judge (the cheap one and the strong one), both runs finished on the same items: start them under New "
    "run above."
)


def calibration_runs(lib, datasets: dict[str, Dataset]) -> dict[str, list[Run]]:
    """Finished runs by dataset id (the Score page's runs on chosen items included), for datasets with human
    ratings where two prompts have finished runs on the same items."""
    humans = {d_id for d_id, d in datasets.items() if d.human}
    by_dataset: dict[str, list[Run]] = {}
    for run in lib.list_runs():
        if run.dataset_id in humans and live.finished(run) and run.status == "done":
            by_dataset.setdefault(run.dataset_id, []).append(run)
    return {d: runs for d, runs in by_dataset.items() if any(partners(runs, r) for r in runs)}


def partners(runs: list[Run], run: Run) -> list[Run]:
    """The runs of another prompt on the same items as `run`: what it can be calibrated against."""
    return [r for r in runs if r.prompt_id != run.prompt_id and run_item_ids(r) == run_item_ids(run)]


def calibrate(lib) -> None:
    """Two finished runs on one dataset, a human rating and a signal; the curve over thresholds; freeze."""
    from geval_core.diagnostics.cascade import SIGNALS, cascade_curve

    st.subheader("Calibrate a cascade")
    datasets = {d.id: d for d in lib.list_datasets()}
    usable = calibration_runs(lib, datasets)
    if not usable:
        st.info(NEEDS)
        return
    runs = {r.id: r for group in usable.values() for r in group}
    c1, c2, c3 = st.columns(3)
    dataset = c1.selectbox(
        "Calibration dataset", list(usable), format_func=lambda d: datasets[d].label, key=K + "dataset"
    )
    ids = [r.id for r in usable[dataset] if partners(usable[dataset], r)]
    cheap = c2.selectbox(
        "Cheap judge's run", ids, format_func=lambda r: cached_reads.run_title(runs[r]), key=K + "cheap"
    )
    others = [r.id for r in partners(usable[dataset], runs[cheap])]
    strong = c3.selectbox(
        "Strong judge's run", others, format_func=lambda r: cached_reads.run_title(runs[r]), key=K + "strong"
    )
    c4, c5 = st.columns(2)
    human = c4.selectbox("Human rating", list(datasets[dataset].human), key=K + "human", help=people.RULE)
    people.unsaved_notice(lib, dataset, human)
    signal = c5.selectbox("Unsureness signal", SIGNALS, key=K + "signal", help=SIGNAL_HELP)
    for role, run_id in (("cheap", cheap), ("strong", strong)):
        warn_other_judge(lib, role, runs[run_id])
    asked = [cheap, strong, human, signal]
    if st.button("Draw the curve", key=K + "curve"):
        with st.spinner("Drawing the curve: 500 resamples at each of up to 12 thresholds…"):
            # The page shows no interval for the agreement with the strong judge: not resampled, half the wait.
            curve = cascade_curve(
                cached_reads.CachedLibrary(lib), cheap, strong, human, signal, 11, 500, strong_intervals=False
            )
        st.session_state[K + "drawn"] = {"asked": asked, "curve": curve}
    drawn = st.session_state.get(K + "drawn")
    if (
        drawn and drawn["asked"] == asked
    ):  # a curve of other runs or another signal is not shown as this one's
        show_curve(drawn["curve"])
        freeze_form(lib, drawn["curve"], runs[cheap].prompt_id, runs[strong].prompt_id)


def threshold_text(curve: dict[str, Any], k: int) -> str:
    """A threshold as read: the first row sends every item on, whatever the unsureness."""
    return "every item" if k == 0 else f"{curve['curve'][k]['threshold']:.4f}"


def warn_other_judge(lib, role: str, run: Run) -> None:
    """Say so when a calibration run used another model than its prompt's own: a cascade scores with the
    prompts' own judges, so such a curve does not predict it."""
    own = lib.get_prompt(run.prompt_id).dimension.judge
    used = run.judge
    if (used.provider, used.model) != (own.provider, own.model):
        st.warning(
            safe_text.md_escape(
                f"The {role} run was scored by {used.provider}:{used.model}, not by its prompt's own "
                f"judge {own.provider}:{own.model}. A cascade scores with the prompts' own judges, so this curve may "
                "not predict it."
            )
        )


def curve_frame(curve: dict[str, Any]) -> pd.DataFrame:
    """One row per threshold: what it sends on and the agreement it reaches, with the 95% interval."""
    return pd.DataFrame(
        [
            {
                f"{curve['signal']} above": threshold_text(curve, k),
                "strong judge on": f"{row['routed']} ({row['routed_share']:.0%})",
                "Spearman with people": row["spearman"],
                "95% interval": safe_text.interval(row["interval"]),
                "Spearman with the strong judge": row["with_strong"],
            }
            for k, row in enumerate(curve["curve"])
        ]
    )


def show_curve(curve: dict[str, Any]) -> None:
    """The curve as a chart and a table."""
    st.caption(
        f"{curve['items']} items with both judges' scores and a human rating; intervals resample "
        f"{curve['resampled']}."
    )
    st.plotly_chart(charts.cascade_figure(curve["curve"]), key=K + "chart")
    st.dataframe(curve_frame(curve), hide_index=True, height=36 * (len(curve["curve"]) + 1) + 3)  # every row


def freeze_form(lib, curve: dict[str, Any], cheap_prompt: str, strong_prompt: str) -> None:
    """Pick a threshold off the curve, name the cascade, freeze it."""
    from geval_core.diagnostics.cascade import freeze_cascade

    rows = curve["curve"]
    c1, c2 = st.columns([3, 1])
    pick = c1.selectbox(
        "Threshold",
        range(len(rows)),
        key=K + "threshold",
        format_func=lambda k: (
            f"{threshold_text(curve, k)} · strong judge on {rows[k]['routed_share']:.0%} · Spearman "
            f"{safe_text.fmt(rows[k]['spearman'])} {safe_text.interval(rows[k]['interval'])}"
        ),
    )
    name = c2.text_input("Cascade name", value="cascade", key=K + "name")
    if st.button("Freeze the cascade", key=K + "freeze", disabled=not name.strip()):
        cascade, created = freeze_cascade(
            lib, name.strip(), cheap_prompt, strong_prompt, curve["signal"], rows[pick]["threshold"]
        )
        st.success(
            safe_text.md_escape(
                f"{'Frozen as' if created else 'Already frozen as'} {cascade['name']}@"
                f"{cascade['version']} ({cascade['id'][:12]})"
            )
        )


@dataclass(frozen=True)
class Plan:
    """A frozen cascade about to score a dataset: its two prompts and the server each side's judge answers at."""

    cascade: dict[str, Any]
    prompts: dict[str, Any]
    servers: dict[str, str]
    dataset: Dataset

    @property
    def going(self) -> list[str]:
        """What the session remembers while a click's cheap job runs: the strong job follows it by itself."""
        return [self.cascade["id"], self.dataset.id]

    def side(self, lib, role: str, ids: list[str] | None) -> RunPlan:
        """This side's run plan on `ids` (None: every item it may read): its prompt's own judge at its server."""
        from geval_core.diagnostics.cascade import plan_cascade_side

        return plan_cascade_side(lib, self.cascade, role, self.dataset.id, ids, self.servers)

    def run(self, lib, side: RunPlan) -> Run | None:
        """The side's run of that plan, when there is one (nothing is recorded by looking)."""
        ids = list(side.item_ids) if side.item_ids is not None else None
        return lib.find_run(side.prompt.id, self.dataset.id, side.settings, item_ids=ids)


def score(lib) -> None:
    """Score a dataset with a frozen cascade: its cheap run, then its strong run on the unsure items."""
    from geval_core.diagnostics.cascade import get_cascade, strong_items

    st.subheader("Score with a cascade")
    picked = archive_view.frozen_and_dataset(lib, "cascade", K + "use_")
    if picked is None:
        return
    cascade, dataset = get_cascade(lib, picked[0]), picked[1]
    prompts = {role: lib.get_prompt(cascade[role]) for role in ("cheap", "strong")}
    conn = state.sidebar().judge  # the sidebar's server serves a side whose judge speaks to the same provider
    servers = {
        role: conn.base_url
        for role, p in prompts.items()
        if conn.base_url and p.dimension.judge.provider == conn.provider
    }
    plan = Plan(cascade, prompts, servers, dataset)
    cheap = step(lib, plan, "cheap", None, f"{dataset.item_count} items")
    if cheap is None:
        return
    items = cached_reads.dataset_items(dataset.id)
    wanted = run_item_ids(cheap)
    items = items if wanted is None else [i for i in items if i.id in wanted]
    # Read on every rerun of the Score page: the cheap run's judgments come from the per-run cache.
    order = strong_items(cached_reads.CachedLibrary(lib), cascade, items, cheap.id)
    strong = None  # no item sent on: no strong run
    if order:
        strong = step(lib, plan, "strong", order, f"the {len(order)} items the cheap judge is unsure of")
        if strong is None:
            return
    st.session_state.pop(K + "going", None)
    show_result(lib, cascade, items, cheap.id, strong.id if strong else None)


def step(lib, plan: Plan, role: str, ids: list[str] | None, what: str) -> Run | None:
    """This side's finished run; None while it is not, with its progress or the button that starts it as a job.
    The strong side starts by itself after the cheap side the same click started."""
    from geval_core.providers.registry import check_judge

    side = plan.side(lib, role, ids)
    st.caption(safe_text.md_escape(f"The {role} judge: {side.judge.describe()}"))
    run = plan.run(lib, side)
    if run is not None and live.is_live(lib, run.id):
        st.caption(f"The {role} judge on {safe_text.md_escape(what)}")
        live.attach(lib, run.id, key=K + role)
        return None
    if run is not None and live.finished(run):
        return run
    if role == "cheap":  # its job was stopped, or never started: the strong job waits for a click again
        st.session_state.pop(K + "going", None)
    going = role == "strong" and st.session_state.get(K + "going") == plan.going
    label = safe_text.md_escape(
        f"Score with {plan.cascade['name']}@{plan.cascade['version']}: the {role} judge on {what}"
    )
    if going or st.button(label, key=K + "start_" + role):
        if role == "cheap":
            check_judge(plan.side(lib, "strong", None).settings)  # every key before any run is recorded
        run_plans.start(lib, side)
        if role == "cheap":  # the strong job follows this one by itself
            st.session_state[K + "going"] = plan.going
        else:  # started once: stopped later, it stays stopped
            st.session_state.pop(K + "going", None)
        st.rerun()
    return None


def show_result(lib, cascade, items, cheap_run: str, strong_run: str | None) -> None:
    """Who scored each item, and what the cascade spent and saved against the strong judge on every item."""
    from geval_core.diagnostics.cascade import cascade_result

    result = cascade_result(cached_reads.CachedLibrary(lib), cascade, items, cheap_run, strong_run)
    saved = result["spend"]["strong_tokens_saved_share"]
    c = st.columns(3)
    c[0].metric(
        "Strong judge on",
        f"{result['routed']} / {result['items']}",
        help=f"{result['routed_share']:.1%} of the items",
    )
    c[1].metric("Strong calls saved", result["spend"]["strong_calls_saved"])
    c[2].metric(
        "Strong tokens saved",
        "n/a" if saved is None else f"{saved:.1%}",
        help="Against the strong judge on every item, estimated from what it spent per item it scored.",
    )
    st.dataframe(pd.DataFrame(result["rows"]), hide_index=True, height=300)
    guarantee_view.report(lib, cascade, result, lib.get_run(cheap_run).dataset_id)
