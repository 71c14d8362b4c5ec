"""The progress of a library task (a stability check, a rubric-form probe, a drift check) on its page: read from the
library every second while its worker goes, with its Stop; the whole page is drawn again when it ends."""

from __future__ import annotations

import streamlit as st

from prompt_library import task_jobs


def watch(lib, kind: str, key: str, unit: str, stop_label: str, stop_key: str) -> None:
    """`done / total {unit} · state` and a Stop button while the task of `kind` for `key` runs."""

    @st.fragment(run_every=1.0)
    def draw() -> None:
        now = task_jobs.task_state(lib, kind, key)
        if now not in task_jobs.LIVE:
            st.rerun()  # the whole page: the report (or why it ended) is drawn with the rest
        done, total = (task_jobs.task(lib, kind, key) or {}).get("progress") or [0, 1]
        st.progress(min(done / max(total, 1), 1.0), text=f"{done} / {total} {unit} · {now}")
        if now != "stopping" and st.button(stop_label, key=stop_key):
            task_jobs.request_task_stop(lib, kind, key)

    draw()
