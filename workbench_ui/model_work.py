"""Model work the pages ask for (steps written by a model, a designer model's suggested edits) done as tasks of the
library: the page says which model is working and for how long, and can cancel it; it never greys silently.

A task is keyed by what it is for (the form's content hash), so a reload finds it going or its result waiting.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import streamlit as st

from geval_core.types import JudgeSettings
from prompt_library import task_jobs
from workbench_ui import safe_text

REFRESH_S = 1.0


def start(lib, kind: str, key: str, spec: dict[str, Any], settings: JudgeSettings, calls: int = 1) -> None:
    """Start the model work (`calls` calls) as a task (the judge's settings go with the spec: the worker plans its
    server)."""
    task_jobs.start_task(lib, kind, key, {**spec, "settings": asdict(settings)}, calls)


def going(lib, kind: str, key: str) -> bool:
    """Whether the task is starting, running or stopping."""
    return task_jobs.task_state(lib, kind, key) in task_jobs.LIVE


def watch(lib, kind: str, key: str, what: str, cancel_key: str) -> None:
    """'Writing the steps with scripted:m · 12 s so far', redrawn every second, with Cancel; the whole page is drawn
    again once the task has ended."""
    found = task_jobs.task(lib, kind, key) or {}
    settings = (found.get("spec") or {}).get("settings") or {}
    model = f"{settings.get('provider')}:{settings.get('model')}"
    started = datetime.fromisoformat(found.get("started_at") or datetime.now(timezone.utc).isoformat())

    @st.fragment(run_every=REFRESH_S)
    def progress() -> None:
        now = task_jobs.task_state(lib, kind, key)
        if now not in task_jobs.LIVE:
            st.rerun()
        seconds = (datetime.now(timezone.utc) - started).total_seconds()
        done, total = (task_jobs.task(lib, kind, key) or {}).get("progress") or [0, 1]
        st.info(
            safe_text.md_escape(
                f"{what} with {model} · {seconds:.0f} s so far"
                + (f" · {done} of {total} done" if total > 1 else "")  # a single call has no count to show
                + (" · cancelling" if now == "stopping" else "")
            )
        )
        if now != "stopping" and st.button("Cancel", key=cancel_key):
            task_jobs.request_task_stop(lib, kind, key)

    progress()


def outcome(lib, kind: str, key: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the ended task's result, or None; why it ended without one, or None)."""
    found = task_jobs.task(lib, kind, key)
    if not found or not found.get("ended_at"):
        return None, None
    return found.get("result"), found.get("error")
