"""Score page: run a frozen prompt on a dataset live, then read every item's distribution."""

from __future__ import annotations

import streamlit as st

from geval_core.prompts.inputs import mismatch_message, missing_inputs
from geval_core.providers.registry import default_concurrency, provider_spec
from geval_core.records import Dataset, Run
from geval_core.run.options import RunOptions
from geval_core.run.plan import RunScope, plan_of_run, plan_run
from geval_core.types import bounds_of
from workbench_ui import (
    archive_view,
    cached_reads,
    cascade_view,
    judge_checks,
    live,
    next_link,
    panel_view,
    run_plans,
    safe_text,
    score_batch,
    score_parts,
    sealing,
    state,
)


def pick_items(lib, dataset: Dataset, prompt) -> tuple[list, str | None]:
    """The dataset's items (the dev side of a split dataset unless the test side is chosen): the first N of them
    (of chosen groups), or a seeded random sample; and the side."""
    items, side = sealing.side_items(
        lib, dataset.id, cached_reads.dataset_items(dataset.id), prompt.id, "score_side"
    )
    how = st.radio(
        "Which items",
        list(HOW),
        format_func=HOW.get,
        horizontal=True,
        key="score_how",
        help="A sample is a first look at a dataset spread over all of it, not only its beginning.",
    )
    if how == "sample":
        return sampled(lib, dataset, prompt, items, side), side
    groups = sorted({i.group for i in items if i.group})
    c1, c2 = st.columns(2)
    chosen = c2.multiselect("Only these groups (optional)", groups, key="score_groups") if groups else []
    if chosen:
        items = [i for i in items if i.group in set(chosen)]
    count = c1.number_input(
        "Items to score (the first N)",
        min_value=1,
        max_value=max(len(items), 1),
        value=len(items) or 1,
        step=1,
        key=f"score_n_{dataset.id}_{len(items)}",
    )
    return items[: int(count)], side


HOW = {"first": "the first N", "sample": "a random sample of N (seeded)"}


def sampled(lib, dataset: Dataset, prompt, items: list, side: str | None) -> list:
    """A seeded random sample of the items, drawn as `geval score --sample N --seed S` draws it."""
    from geval_core.run.plan import sample_items

    c1, c2 = st.columns(2)
    count = c1.number_input(
        "Items to score (about N: whole groups)",
        min_value=1,
        max_value=max(len(items), 1),
        value=min(len(items), 50) or 1,
        step=1,
        key=f"score_sample_n_{dataset.id}",
    )
    seed = c2.number_input(
        "Seed", min_value=0, value=0, step=1, key="score_seed", help="The same seed, the same items."
    )
    ids = set(sample_items(lib, prompt, dataset, int(count), int(seed), side))
    st.caption(
        "Drawn as `geval score --sample N --seed S` draws it: whole groups when the items have groups (at least N "
        "items, the last group whole), the prompt's example items left out, in dataset order."
    )
    return [i for i in items if i.id in ids]


def rate_limits() -> None:
    """Optional rpm / tpm limits for a low-tier key (0: none); the runner paces requests to them."""
    c1, c2 = st.columns(2)
    c1.number_input(
        "Requests per minute at most (0: no limit)", min_value=0, value=0, step=10, key="score_rpm"
    )
    c2.number_input(
        "Tokens per minute at most (0: no limit)",
        min_value=0,
        value=0,
        step=1000,
        key="score_tpm",
        help="Estimated from the rendered prompts, as the cost estimate is.",
    )


def new_run(lib) -> None:
    """Choose prompt, dataset, subset and judge; see the cost; start a live run."""
    prompts, datasets = lib.list_prompts(), archive_view.visible(lib, "dataset", lib.list_datasets())
    if not prompts or not datasets:
        st.info("Freeze a prompt on the Design page and add a dataset first.")
        return
    c1, c2 = st.columns(2)
    p_labels = {f"{p['name']}@{p['version']}": p for p in prompts}
    state.keep_choice("score_prompt", list(p_labels))  # the last choice, or the prompt just frozen
    prompt = lib.get_prompt(
        state.kept("score_prompt", c1.selectbox("Frozen prompt", list(p_labels), key="score_prompt"))
    )
    # Datasets that hold every input of the prompt come first; the others say what they lack.
    unfit = {d.id: missing_inputs(prompt, d.fields) for d in datasets}
    d_labels = {f"{d.name}@{d.version}": d for d in sorted(datasets, key=lambda d: bool(unfit[d.id]))}

    def label(key: str) -> str:
        return archive_view.fit_label(key, unfit[d_labels[key].id])

    state.keep_choice(
        "score_dataset", [k for k in d_labels if not unfit[d_labels[k].id]]
    )  # only one that fits
    # A dataset chosen for another prompt does not stay selected when it does not fit this one.
    chosen = st.session_state.get("score_dataset")
    if (
        st.session_state.get("score_dataset_for") != prompt.id
        and chosen in d_labels
        and unfit[d_labels[chosen].id]
    ):
        st.session_state["score_dataset"] = next(iter(d_labels))
    st.session_state["score_dataset_for"] = prompt.id
    dataset = d_labels[
        state.kept(
            "score_dataset", c2.selectbox("Dataset", list(d_labels), key="score_dataset", format_func=label)
        )
    ]
    problem = mismatch_message(prompt, dataset.fields, f"dataset {dataset.name}@{dataset.version}")
    if problem:
        st.error(safe_text.md_escape(problem))
        return
    items, side = pick_items(lib, dataset, prompt)
    planned = run_plans.choose_judge(lib, prompt, "score")
    settings = planned.settings
    ready = judge_checks.before_run(lib, prompt, settings)  # the judge's latest test and documented limits
    bounds = bounds_of(RunOptions, "concurrency")
    most = min(bounds.max, provider_spec(settings.provider).max_concurrency)
    concurrency = st.number_input(
        "Concurrent requests",
        min_value=bounds.min,
        max_value=most,
        step=1,
        value=default_concurrency(settings),
        key=f"score_concurrency_{settings.provider}",  # each judge starts at its own
        help=bounds.help,
    )
    plan = plan_run(
        lib,
        prompt,
        dataset,
        scope=RunScope(side=side, item_ids=tuple(i.id for i in items), new_run=True),
        concurrency=int(concurrency),
        judge=planned,
    )
    for warning in plan.warnings[len(planned.warnings) :]:  # overlong items, a lowered concurrency
        st.warning(safe_text.md_escape(warning))
    rate_limits()
    score_parts.cost_box(
        lib, prompt, items, settings, dataset.id, plan.options.concurrency
    )  # as the run sends
    score_batch.offer(lib, plan, items, ready)
    st.caption(safe_text.md_escape(plan.describe()))
    if st.button("Start run", type="primary", key="score_start", disabled=not items or not ready):
        run_id = run_plans.start(
            lib, plan
        )  # the key, the server and a test-side use are checked or recorded here
        st.session_state["score_run"] = run_id  # before the run picker is drawn: show the new run
        st.rerun()  # the run is listed below, attached to its worker


NEVER_SENT = "ContextLengthError"  # an item too long for the judge's context: a resume cannot send it either


def resume(lib, run: Run, prompt) -> None:
    """Resume a run that stopped before every item was judged, in a new worker (items too long for the judge's
    context are not offered: they were never sent and never can be)."""
    judged = cached_reads.judged_ids(run)  # per run state: reading 20,000 ids on every rerun took 0.5 s
    too_long = {
        r["item_id"] for r in cached_reads.judgments(run) if (r.get("error") or "").startswith(NEVER_SENT)
    }
    wanted = score_parts.run_item_ids(run)
    todo = [
        i
        for i in cached_reads.dataset_items(run.dataset_id)
        if (wanted is None or i.id in wanted) and i.id not in judged and i.id not in too_long
    ]
    if too_long:
        st.caption(
            f"{len(too_long)} item(s) are too long for the judge's context: never sent, not resumable."
        )
    if not todo or score_batch.pending(run):  # a batch still out: collecting it fills these items in
        return
    st.info(f"{len(todo)} item(s) of this run are not judged yet (run status: {run.status}).")
    st.caption(safe_text.md_escape(f"Scored by {run_plans.run_judge(run)}"))
    if st.button(f"Resume ({len(todo)} items)", key="score_resume"):
        plan = plan_of_run(
            lib, run.id, concurrency=(lib.job(run.id) or {}).get("options", {}).get("concurrency")
        )
        run_plans.start(lib, plan)  # refused here when the run's server is not the one its judge now reaches
        st.rerun()


def show_run(lib) -> None:
    """Pick a run and show its summary, its table and the selected item."""
    every = lib.list_runs()  # newest first; read after new_run, so a run it started is listed
    archive_view.panel(lib, "run", {r.id: cached_reads.run_label(r) for r in every})
    runs = archive_view.visible(lib, "run", every)
    if not runs:
        st.info("No runs yet: start one above.")
        return
    # The picker's labels leave out judged/status: a select box keeps showing the label it first drew for its
    # value, so "cancelled" stayed after a resume. Those two are drawn below it, fresh on every rerun.
    labels = {r.id: cached_reads.run_title(r) for r in runs}
    if st.session_state.get("score_run") not in labels:
        st.session_state["score_run"] = runs[0].id
    run_id = st.selectbox("Run", list(labels), format_func=labels.__getitem__, key="score_run")
    run = lib.get_run(run_id)
    score_batch.run_panel(lib, run)
    prompt = lib.get_prompt(run.prompt_id)
    if live.is_live(lib, run_id):  # its progress is the job's, redrawn every second: no second, older count
        live.attach(lib, run_id)  # the figures below are drawn once the worker has ended
        return
    st.caption(f"Judged {safe_text.md_escape(cached_reads.run_progress(run))}")
    live.ended(lib, run_id)
    resume(lib, run, prompt)
    rows = cached_reads.judgments(run)
    if not rows:
        st.info("No item of this run is judged yet.")
        return
    score_parts.summary(lib, run, prompt, rows)
    if run.status == "done":
        next_link.show(lib)
    score_parts.table_and_item(run, prompt, rows)
    score_parts.downloads(run, rows)


def main() -> None:
    """The Score page."""
    st.title("Score")
    lib = state.library()
    with st.expander("New run", expanded=not lib.list_runs()):
        new_run(lib)
    # A refused panel or cascade (other scales, too few items) is said in its section; the runs below still show.
    with st.expander("Score with a panel of judges"):
        safe_text.guarded(lambda: panel_view.section(lib))
    with st.expander("Score with a cascade: a cheap judge, the strong one where it is unsure"):
        safe_text.guarded(lambda: cascade_view.section(lib))
    show_run(lib)


safe_text.guarded(main)
