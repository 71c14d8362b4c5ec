"""A run scored as a job of the library: started here, scored by a worker process, watched from any tab.

The page never scores in its own script thread: a reload, a second tab or a closed browser would cancel
it. `start` records the job and starts the worker (prompt_library.job_worker); `attach` draws the run's
progress from the library once a second while its worker lives, and Stop writes a stop request the worker
reads. When the worker has ended, the whole page is drawn again, with the run's summary.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import streamlit as st

from geval_core.records import Run
from prompt_library.job_worker import start_job
from prompt_library.jobs import CLEARED
from workbench_ui import cached_reads, safe_text

REFRESH_S = 1.0  # a page attached to a job reads its progress once a second
LIVE = ("starting", "running", "stopping")
LIVE_COLUMNS = ["item", "score", "top-token", "valid mass", "error"]  # ties are known once the run is over


def progress_text(done: int, total: int, elapsed: float) -> str:
    """'3 / 12 items · about 20 s left' (the rate of this job so far)."""
    text = f"{done} / {total} items"
    if 0 < done < total:
        left = elapsed / done * (total - done)
        text += f" · about {left:.0f} s left" if left < 120 else f" · about {left / 60:.0f} min left"
    return text


RATE_WINDOW_S = (
    30.0  # the ETA reads the rate of the items judged in this last stretch (a slow start, a model load,
)
# a busy spell that has passed no longer count)


def recent_progress_text(done: int, total: int, samples: list[tuple[float, int]]) -> str | None:
    """'3 / 12 items · about 20 s left' from the rate over the last RATE_WINDOW_S seconds of (time, done) samples
    (oldest first, the newest now); None while that window holds no progress."""
    if not samples:
        return None
    now = samples[-1][0]
    first = next((s for s in samples if now - s[0] <= RATE_WINDOW_S and s[1] < done), None)
    if first is None or now <= first[0]:
        return None
    return progress_text(done - first[1], total - first[1], now - first[0]).replace(
        f"{done - first[1]} / {total - first[1]} items", f"{done} / {total} items"
    )


def start(lib, run_id: str, concurrency: int) -> None:
    """Start the run's worker with this page's concurrency and rate limits."""
    start_job(
        lib,
        run_id,
        {
            "concurrency": int(concurrency),
            "rpm": st.session_state.get("score_rpm") or None,
            "tpm": st.session_state.get("score_tpm") or None,
        },
    )


def is_live(lib, run_id: str) -> bool:
    """Whether a worker is scoring (or about to score, or stopping) this run now."""
    return lib.job_state(run_id) in LIVE


def finished(run: Run) -> bool:
    """Whether a run is done with every one of its items judged."""
    return run.status == "done" and int(run.judged or 0) >= int(run.items_total or 0)


def attach(lib, run_id: str, key: str = "score") -> None:
    """Progress of the run's job, redrawn from the library every second until its worker ends.

    `key` names this view's widgets: one page can watch a run in two places (a panel member is also the newest
    run) or several runs at once, and Streamlit refuses two widgets with one key.
    """
    job = lib.job(run_id)
    started = datetime.fromisoformat(job["started_at"]).timestamp() if job else time.time()

    @st.fragment(run_every=REFRESH_S)
    def watch() -> None:
        state = lib.job_state(run_id)
        if state not in LIVE:
            st.rerun()  # the worker ended: the whole page, with the run's summary
        run = lib.get_run(run_id)
        done, total = int(run.judged or 0), int(run.items_total or 0)
        samples = st.session_state.setdefault(f"{key}_rate_{run_id}", [])
        samples.append((time.monotonic(), done))
        samples[:] = [s for s in samples if samples[-1][0] - s[0] <= 2 * RATE_WINDOW_S]
        if state == "starting" or not done:
            text = f"Loading the judge and sending the first requests… {done} / {total} items"
        else:
            text = recent_progress_text(done, total, samples) or progress_text(
                done, total, time.time() - started
            )
        st.progress(min(done / max(total, 1), 1.0), text=text)
        if state != "stopping" and st.button(
            "Stop run", key=f"{key}_stop", help="Stops after the calls in flight; resume later."
        ):
            state = "stopping" if lib.request_stop(run_id) else lib.job_state(run_id)
        if state == "stopping":
            st.info("Stopping: the worker finishes the calls in flight, then the run can be resumed.")
        st.caption(
            "This run is scored by a worker of the library: reloading or closing this tab does not stop "
            "it, and any tab shows the same run. Only Stop stops it."
        )
        rows = lib.recent_judgments(run_id, 50)
        if rows:
            st.dataframe(cached_reads.judgments_frame(rows)[LIVE_COLUMNS], hide_index=True, height=300)

    watch()


def ended(lib, run_id: str, key: str = "score") -> None:
    """How the run's last job ended: its session's figures, a failure's reason, or a worker that vanished."""
    state = lib.job_state(run_id)
    if state == "lost":
        lost(lib, run_id, key)
        return
    job = lib.job(run_id)
    if state != "ended" or job is None:
        return
    if job.get("error") == CLEARED:
        st.info("The lost job of this run was cleared. Items judged so far are saved; resume below.")
        return
    done: dict[str, Any] | None = job.get("summary")
    if done is None or done.get("status") == "failed":
        reason = (done or {}).get("error") or job.get("error") or "no reason was recorded"
        st.error(f"The run stopped: {safe_text.md_escape(reason)}")
        return
    if done.get("status") == "cancelled":
        st.warning("Run stopped. Items judged so far are saved; resume below.")
    st.caption(
        f"Last session of this run: {done['judged']} judged in {done['seconds']:.1f} s, "
        f"{done['cached']} from the cache, {done['judge_calls']} judge calls, status {done['status']}."
    )


def lost(lib, run_id: str, key: str = "score") -> None:
    """A job whose worker is gone (killed, its pid reused, the machine renamed): say so, offer to clear it."""
    job = lib.job(run_id) or {}
    where = (
        f"process {job.get('pid')} on {job.get('host')}" if job.get("pid") else "a worker that never started"
    )
    st.warning(
        f"The worker scoring this run ended without finishing it ({safe_text.md_escape(where)}: the "
        "process is gone and the run's lease was not renewed). Items judged so far are saved; resume below."
    )
    if st.button(
        "Clear the lost job",
        key=f"{key}_clear_job",
        help="Marks the job ended; the run keeps every item judged and can be resumed.",
    ):
        lib.clear_job(run_id)
        st.rerun()
