"""The pages' side of `geval_core.run.plan`: the judge a page asks for (the prompt's pinned judge at a server, or
the sidebar's), the plan shown before a run starts, and the run recorded from it for a job of the library.

Every page that starts runs (Score, its panel and cascade sections, Align) goes through here, so a page says
which judge will score, at which server, before anything starts, and a run's server is part of its identity.
"""

from __future__ import annotations

import streamlit as st

from geval_core.records import Run
from geval_core.run.plan import (
    JudgeChoice,
    PlannedJudge,
    RunPlan,
    judge_label,
    plan_judge,
    record_run,
    takes_server,
)
from geval_core.types import FrozenPrompt
from workbench_ui import live, safe_text, state

WHERE = "the sidebar's server"


def sidebar_choice() -> JudgeChoice:
    """The sidebar's judge and server as the plan takes them (decoding stays the prompt's)."""
    conn = state.sidebar().judge
    # Always NAME:MODEL: `--judge NAME` alone would keep a prompt's own model of that provider.
    return JudgeChoice(f"{conn.provider}:{conn.model}", conn.base_url, where=WHERE)


def pinned_choice(prompt: FrozenPrompt, server: str | None = None) -> JudgeChoice:
    """The prompt's own judge, at `server`, else the sidebar's when the sidebar speaks to the same provider."""
    conn = state.sidebar().judge
    if server is None and conn.provider == prompt.dimension.judge.provider:
        server = conn.base_url
    return JudgeChoice(base_url=server, where="the server box" if server else WHERE)


def last_server(lib, prompt: FrozenPrompt) -> str:
    """The server the newest run of this prompt's own judge used ('' for none): the pinned judge's default box."""
    pinned = prompt.dimension.judge
    for run in lib.list_runs(prompt=prompt.id):
        judge = run.judge
        if judge.provider == pinned.provider and judge.model == pinned.model and judge.base_url:
            return str(judge.base_url)
    return ""


def server_box(lib, prompt: FrozenPrompt, key: str) -> str | None:
    """A box for the pinned judge's server when it takes one and the sidebar speaks to another provider."""
    pinned = prompt.dimension.judge
    if not takes_server(pinned.provider) or state.sidebar().judge.provider == pinned.provider:
        return None
    label = f"Server for {pinned.judge_id} (empty: the environment's, else the provider's own API)"
    value = st.text_input(
        label,
        value=last_server(lib, prompt),
        key=f"{key}_server_{prompt.id[:12]}",
        help="An OpenAI-compatible server's base URL, e.g. http://127.0.0.1:8080/v1. A prompt keeps "
        "no server: say here where its judge answers.",
    )
    return value.strip() or None


def choose_judge(lib, prompt: FrozenPrompt, key: str) -> PlannedJudge:
    """The pinned judge or the sidebar's, planned (server resolved, refusals raised) and shown as one line."""
    pinned = prompt.dimension.judge
    side = state.run_settings(pinned, use_sidebar=True)
    options = {
        "prompt": f"The prompt's pinned judge: {safe_text.judge_label(pinned)}",
        "sidebar": f"The sidebar's judge: {safe_text.judge_label(side)}",
    }
    pick = st.radio(
        "Judge",
        list(options),
        format_func=lambda o: safe_text.md_escape(options[o]),
        key=f"{key}_judge_source",
    )
    if pick == "sidebar":
        planned = plan_judge(pinned, sidebar_choice(), lib)
        if (side.provider, side.model) != (pinned.provider, pinned.model):
            st.caption(
                "A different judge than the one frozen with the prompt: its scores are not the frozen "
                "metric and are not comparable with runs of the pinned judge."
            )
    else:
        planned = plan_judge(pinned, pinned_choice(prompt, server_box(lib, prompt, key)), lib)
    show_judge(planned)
    return planned


def show_judge(planned: PlannedJudge) -> None:
    """The judge line every page shows before a run starts."""
    st.markdown(f"**Will score with** {safe_text.md_escape(planned.describe().removeprefix('judge: '))}")


def show_plan(plan: RunPlan) -> None:
    """What stops or weakens the planned run, and the one line saying what will happen."""
    for problem in plan.problems:
        st.error(safe_text.md_escape(problem))
    for warning in plan.warnings:
        st.warning(safe_text.md_escape(warning))
    st.caption(safe_text.md_escape(plan.describe()))


def start(lib, plan: RunPlan, concurrency: int | None = None) -> str:
    """Record the planned run (the checks that must pass first, a test-side use) and start its job; its id."""
    recorded = record_run(lib, plan)
    live.start(lib, recorded.recorded_id, concurrency or recorded.options.concurrency)
    return recorded.recorded_id


def run_judge(run: Run) -> str:
    """The judge a stored run used, as every run list and comparison names it."""
    return judge_label(run.judge)
