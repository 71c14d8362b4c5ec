"""A live scoring run drawn while it happens: progress bar, items appearing, stop by any click.

run_scoring is called in the script's own thread (Streamlit elements and the SQLite writes both
belong to it); its worker threads only call the judge. A click on Stop (or on any widget) makes
Streamlit stop this script run and, with fast reruns (the default), start the next run at once in
another thread. Two things then end the scoring cleanly:
- the stop signal is raised inside the next element update, i.e. inside our progress callback: we
  catch it, set the cancel event, and re-raise it once run_scoring has returned;
- the next run calls `stop_previous()`, which sets the same cancel event (the old run may be
  waiting on a slow judge call, far from its next element update) and waits until the old run has
  written what finished and recorded its status, so the page it draws is consistent.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import streamlit as st

from geval_core.judgment import Judgment
from geval_core.types import FrozenPrompt, Item, JudgeSettings
from workbench_ui import cached_reads

REFRESH_S = 0.5  # redraw the table at most twice a second: 1,600 redraws would dominate the run
STOP_WAIT_S = 30.0  # the runner drops calls still running 2 s after cancel; this is a safety bound

# session id -> (run id, cancel event, finished event) of the run its script is scoring.
_ACTIVE: dict[str, tuple[str, threading.Event, threading.Event]] = {}
_LOCK = threading.Lock()


def _session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else "bare"


def stop_previous() -> str | None:
    """Cancel this session's run still scoring in a stopped script thread; wait until it has finished."""
    with _LOCK:
        found = _ACTIVE.get(_session_id())
    if found is None:
        return None
    run_id, cancel, finished = found
    cancel.set()
    with st.spinner("Stopping the run: finishing the items in flight…"):
        finished.wait(STOP_WAIT_S)
    return run_id


def progress_text(done: int, total: int, elapsed: float) -> str:
    """'3 / 12 items · about 20 s left' (the rate so far, this session's items only)."""
    text = f"{done} / {total} items"
    if 0 < done < total:
        left = elapsed / done * (total - done)
        text += f" · about {left:.0f} s left" if left < 120 else f" · about {left / 60:.0f} min left"
    return text


def run_live(lib, prompt: FrozenPrompt, items: list[Item], judge, settings: JudgeSettings, run_id: str,
             concurrency: int) -> Any:
    """Score items into run_id with this judge, drawing progress; returns the runner's summary."""
    from geval_core.run import RunOptions, run_scoring

    cancel = threading.Event()
    st.button("Stop run", key="score_stop", help="Stops after the items in flight; resume later.")
    # The local model loads on the first call (~25 s on two cores): say so instead of a silent "0 / N".
    bar = st.progress(0.0, text=f"Loading the judge and sending the first requests… 0 / {len(items)} items")
    started = time.monotonic()
    table = st.empty()
    rows: list[dict[str, Any]] = []
    signal: list[BaseException] = []
    last = [0.0]

    def on_progress(done: int, total: int, judgment: Judgment) -> None:
        if signal:
            return
        rows.append(judgment.to_dict())
        try:
            bar.progress(min(done / max(total, 1), 1.0), text=progress_text(done, total, time.monotonic() - started))
            now = time.monotonic()
            if now - last[0] >= REFRESH_S or done >= total:
                last[0] = now
                table.dataframe(cached_reads.judgments_frame(rows[::-1]), hide_index=True, height=300)
        except BaseException as exc:  # Streamlit's rerun/stop signal (or Ctrl-C): stop cleanly first
            signal.append(exc)
            cancel.set()

    finished = threading.Event()
    with _LOCK:
        _ACTIVE[_session_id()] = (run_id, cancel, finished)
    try:
        summary = run_scoring(prompt, items, judge, lib, run_id,
                              RunOptions(settings=settings, concurrency=concurrency,
                                         rpm=st.session_state.get("score_rpm") or None,
                                         tpm=st.session_state.get("score_tpm") or None),
                              on_progress=on_progress, cancel=cancel)
    finally:
        finished.set()
        with _LOCK:
            if _ACTIVE.get(_session_id(), (None,))[0] == run_id:
                del _ACTIVE[_session_id()]
    if signal:
        raise signal[0]
    return summary
