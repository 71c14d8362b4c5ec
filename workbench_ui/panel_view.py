"""The Score page's panel section: freeze a panel of judges, score a dataset with it (one worker per member, each
member's run reused when it exists), and read the panel's judgment per item beside each member's, the members'
alpha with its interval and the items they disagree on most."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from geval_core.records import Dataset
from workbench_ui import archive_view, cached_reads, live, people, run_plans, safe_text, state

K = "pn_"
RESUMABLE = ("done", "running", "cancelled", "failed")


def freeze_form(lib) -> None:
    """Two or more frozen prompts of one dimension and scale, a rule and a name."""
    from geval_core.run.panel import freeze_panel
    from geval_core.scoring.panel import RULES

    labels = [f"{p['name']}@{p['version']}" for p in lib.list_prompts()]
    c1, c2, c3 = st.columns([3, 1, 1])
    members = c1.multiselect("Members: two or more prompts of one dimension", labels, key=K + "members")
    rule = c2.selectbox(
        "Rule",
        RULES,
        index=RULES.index("pooled"),
        key=K + "rule",
        help="mean of the weighted scores; pooled: Eq. 1 over the average distribution; median.",
    )
    name = c3.text_input("Panel name", value="panel", key=K + "name")
    if st.button("Freeze the panel", key=K + "freeze", disabled=len(members) < 2 or not name.strip()):
        panel, created = freeze_panel(lib, name.strip(), [lib.get_prompt(m) for m in members], rule)
        st.success(
            safe_text.md_escape(
                f"{'Frozen as' if created else 'Already frozen as'} {panel.label} ({panel.id[:12]})"
            )
        )


def member_runs(lib, panel, dataset_id: str) -> list[dict[str, Any]]:
    """Each member planned (its pinned judge, at the sidebar's server when the sidebar speaks to its provider, else
    the environment's) with its newest run of that plan, None when it has none yet (nothing is recorded by
    looking)."""
    from geval_core.run.panel import plan_panel

    conn = state.sidebar().judge
    servers = {
        member: conn.base_url
        for member in panel.members
        if conn.base_url and lib.get_prompt(member).dimension.judge.provider == conn.provider
    }
    runs = []
    for plan in plan_panel(lib, panel, dataset_id, servers):
        ids = list(plan.item_ids) if plan.item_ids is not None else None
        runs.append(
            {
                "prompt": plan.prompt,
                "plan": plan,
                "run": lib.find_run(plan.prompt.id, dataset_id, plan.settings, item_ids=ids),
            }
        )
    return runs


def section(lib) -> None:
    """Freeze or pick a panel, score a dataset with it, and show the panel's table."""
    from geval_core.run.panel import get_panel

    freeze_form(lib)
    picked = archive_view.frozen_and_dataset(lib, "panel", K)
    if picked is None:
        return
    panel, dataset = get_panel(lib, picked[0]), picked[1]
    runs = member_runs(lib, panel, dataset.id)
    for member in runs:
        st.caption(safe_text.md_escape(f"Member {member['prompt'].label}: {member['plan'].judge.describe()}"))
    going = [r for r in runs if r["run"] and live.is_live(lib, r["run"].id)]
    if going:
        for member in going:  # side by side, each with its own Stop
            st.caption(f"Member {safe_text.md_escape(member['prompt'].label)}")
            live.attach(lib, member["run"].id, key=K + member["run"].id)
        return
    unfinished = [r for r in runs if r["run"] is None or not live.finished(r["run"])]
    if unfinished:
        if st.button(
            safe_text.md_escape(f"Score with {panel.label} ({len(unfinished)} member run(s) to do)"),
            key=K + "score",
        ):
            from geval_core.providers.registry import check_judge

            for member in unfinished:
                check_judge(member["plan"].settings)  # every key before any run is recorded
            for member in unfinished:  # one worker per member: they run side by side
                run_plans.start(lib, member["plan"])
            st.rerun()
        return
    show(lib, panel, runs, dataset)


def against_people(lib, rows: list[dict[str, Any]], dataset: Dataset, prompt) -> None:
    """Each member and the panel against the people's rating of the dimension (when the dataset has it): the
    figures, and the panel minus its best member with a paired interval."""
    from geval_core.diagnostics.panel_people import panel_against_people
    from geval_core.errors import InputError

    humans = list(dataset.human)
    if not humans:
        st.caption("This dataset has no human ratings: the panel is not compared with people.")
        people.unsaved_notice(lib, dataset.id, prompt.name)
        return
    default = prompt.dimension.name.lower()
    human = st.selectbox(
        "Against people's rating",
        humans,
        index=humans.index(default) if default in humans else 0,
        key=K + "human",
        help=people.RULE,
    )
    people.unsaved_notice(lib, dataset.id, human)
    try:
        found = panel_against_people(lib, rows, dataset.id, human, 500)
    except InputError as exc:
        st.caption(safe_text.md_escape(str(exc)))
        return
    st.subheader(f"The panel and its members against people ({found['items']} items)")
    st.dataframe(
        pd.DataFrame(
            [
                {"judge": who, **{k: round(v, 3) if v is not None else None for k, v in figs.items()}}
                for who, figs in found["figures"].items()
            ]
        ),
        hide_index=True,
    )
    best = found["panel_minus_best"]["figures"]["spearman"]
    interval = best.get("interval")
    st.caption(
        safe_text.md_escape(
            f"Panel minus its best member ({found['best_member']}), Spearman: {best['difference']:+.3f}, "
            + (
                "no interval (too few groups)"
                if interval is None
                else f"95% interval {interval[0]:+.3f} to {interval[1]:+.3f}"
            )
        )
    )
    if found.get("independence"):
        from geval_core.diagnostics.panel_people import independence_text

        st.caption(safe_text.md_escape(independence_text(found["independence"]).capitalize()))


def show(lib, panel, runs: list[dict[str, Any]], dataset: Dataset) -> None:
    """The panel's rows, the members' alpha with its interval, and the items the members disagree on most."""
    from geval_core.run.panel import combine

    prompts, run_ids = [r["prompt"] for r in runs], [r["run"].id for r in runs]
    # Every rerun of the Score page draws this section: combined once per state of the members' runs (seconds at
    # 20,000 items), read through the per-run caches.
    result = cached_reads.per_run(
        runs[0]["run"],
        "panel",
        lambda: combine(cached_reads.CachedLibrary(lib), panel, prompts, run_ids, dataset.id, 500),
        panel.id,
        tuple(run_ids),
        tuple(cached_reads.run_state(r["run"]) for r in runs),
    )
    alpha = result["alpha"]
    low, high = alpha["interval"]
    c = st.columns(3)
    c[0].metric(
        "Members' alpha (interval level)",
        safe_text.fmt(alpha["value"]),
        help="Krippendorff's alpha of the members' weighted scores, read on an interval scale",
    )
    c[1].metric("Rule", panel.rule)
    c[2].metric("Items", len(result["rows"]))
    st.caption(
        "Members' alpha: "
        + (
            "no 95% interval (too few groups to resample)"
            if low is None
            else f"95% interval {low:.3f} to {high:.3f} ({alpha['resampled']} resampled)"
        )
    )
    against_people(lib, result["rows"], dataset, prompts[0])
    frame = pd.DataFrame(
        [
            {"item": r["id"], "panel": r["score"], **r["members"], "spread": r["spread"]}
            for r in result["rows"]
        ]
    )
    st.caption("Each member's weighted score beside the panel's; spread is the largest minus the smallest.")
    st.dataframe(frame, hide_index=True, height=300)
    st.subheader("Where the members disagree most (a review queue)")
    st.dataframe(frame.sort_values("spread", ascending=False).head(20), hide_index=True)
