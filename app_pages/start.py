"""Start page: the path from a quality dimension to an exported judge, with this library's state on every step and
a button to the next one."""

from __future__ import annotations

import streamlit as st

from workbench_ui import safe_text, start_path, state


def main() -> None:
    """The Start page."""
    st.title("G-Eval Workbench")
    st.caption(
        "Design an LLM-as-a-judge prompt for one quality dimension, check it against people, export it."
    )
    lib = state.library()
    steps = start_path.path_state(lib)
    upcoming = start_path.next_step(steps)
    if upcoming.done:  # no stale "Next": every step is behind the person
        st.success(start_path.ALL_DONE)
    else:
        st.info(safe_text.md_escape(f"Next: {upcoming.title}. {upcoming.how}"))
        if st.button(f"Go to the next step: {upcoming.title}", type="primary", key="start_next"):
            st.switch_page(upcoming.page)
    for number, step in enumerate(steps, start=1):
        # Material icons, not emoji: headless browsers without an emoji font drew the marks as empty boxes.
        mark = start_path.mark(step, upcoming)
        c1, c2 = st.columns([5, 1])
        c1.markdown(
            f"{mark} **{number}. {safe_text.md_escape(step.title)}**  \n{safe_text.md_escape(step.state)}"
        )
        if c2.button("Open", key=f"start_open_{number}"):
            st.switch_page(step.page)


safe_text.guarded(main)
