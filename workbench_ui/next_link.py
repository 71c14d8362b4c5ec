"""The "Next:" link a page shows after a step of the path is done (a freeze, an import, a finished run): the Start
page's next step, one click away, so nobody has to go back to Start to learn what comes next."""

from __future__ import annotations

import streamlit as st

from workbench_ui import safe_text, start_path


def show(lib) -> None:
    """A link to the page of the path's next step not done yet (nothing once every step is done)."""
    steps = start_path.path_state(lib)
    upcoming = start_path.next_step(steps)
    if upcoming.done:
        return
    st.page_link(upcoming.page, label=safe_text.md_escape(f"Next: {upcoming.title} →"))
