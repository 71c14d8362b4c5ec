"""The Score page's batch runs: send a run to the provider's batch engine (OpenAI Files + Batches, the Gemini
Batch API) at the batch discount, check its status, and collect its results into the run like a live run."""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from geval_core.errors import GEvalError
from geval_core.records import Run
from geval_core.run.plan import RunPlan
from geval_core.types import FrozenPrompt, JudgeSettings
from workbench_ui import safe_text, state

log = logging.getLogger("geval.app")
SAID = "score_batch_said"  # batch id (or "submit") -> (level, text, detail) of the last action
TOGGLE = "score_batch_on"


def batch_estimate(lib, prompt: FrozenPrompt, items: list, settings: JudgeSettings) -> dict[str, Any]:
    """Requests, tokens and USD of these items as a batch (None when unpriced), beside the live estimate."""
    from geval_core.run.batch import BATCH_DISCOUNT, batch_mode
    from geval_core.run.cost import estimate_cost

    est = estimate_cost(prompt, items, settings, store=lib)
    # A sampling batch sends n one-reply requests per item, each carrying the prompt; live sends one asking n.
    copies = settings.n if batch_mode(settings) == "sampling" else 1
    input_tokens, price = est["input_tokens"] * copies, est["price"]
    usd = (
        None
        if price is None
        else (
            (input_tokens * price["input"] + est["output_tokens"] * price["output"])
            / 1_000_000
            * BATCH_DISCOUNT
        )
    )
    return {
        "requests": len(items) * copies,
        "input_tokens": input_tokens,
        "usd": usd,
        "live_usd": est["usd"],
        "discount": BATCH_DISCOUNT,
    }


def _client(provider: str, base_url: str | None) -> Any:
    """The provider's SDK client, built before a run is recorded: a missing key then leaves no orphan run."""
    from geval_core.run.batch_engines import batch_client as engine_client

    return engine_client(provider, base_url)


def _say(where: str, level: str, text: str, detail: str | None = None) -> None:
    st.session_state.setdefault(SAID, {})[where] = (level, text, detail)


def _failed(where: str, what: str, exc: Exception) -> None:
    """An action's error, kept for display as plain text (never a traceback)."""
    if not isinstance(exc, GEvalError):
        log.exception("batch action failed")
    _say(where, "error", what, f"{type(exc).__name__}: {exc}")


def _show(where: str) -> None:
    found = st.session_state.get(SAID, {}).get(where)
    if not found:
        return
    level, text, detail = found
    {"error": st.error, "success": st.success}.get(level, st.info)(safe_text.md_escape(text))
    if detail:
        st.code(detail, language=None, wrap_lines=True)


def local_server(base_url: str | None) -> str | None:
    """The name of the known local server (a preset) at this address, None for any other."""
    from urllib.parse import urlsplit

    from geval_core.providers.capabilities import PRESETS

    if not base_url:
        return None
    where = urlsplit(base_url).netloc
    return next((p.name for p in PRESETS.values() if urlsplit(p.base_url).netloc == where), None)


def offer(lib, plan: RunPlan, items: list, ready: bool) -> None:
    """Send the planned run's items as a batch instead of live (OpenAI and Gemini judges): its cost, then Submit."""
    from geval_core.providers.registry import batch_engine

    prompt, settings = plan.prompt, plan.settings
    if batch_engine(settings.provider) is None:
        return
    known = local_server(settings.base_url)
    if known:  # llama.cpp, Ollama, LM Studio and vLLM's server answer chat completions, not the Batches API
        st.caption(
            safe_text.md_escape(f"No batch: {known} serves no Files and Batches APIs; it scores live.")
        )
        return
    if not st.toggle("Send as a batch instead (half price; results within 24 hours)", key=TOGGLE):
        return
    est = batch_estimate(lib, prompt, items, settings)
    c = st.columns(3)
    c[0].metric("Batch requests", est["requests"])
    c[1].metric("Batch cost (est.)", "unknown" if est["usd"] is None else f"${est['usd']:.4f}")
    c[2].metric("Live cost (est.)", "unknown" if est["live_usd"] is None else f"${est['live_usd']:.4f}")
    notes = [f"batch requests are billed at {est['discount']:.0%} of the live price"]
    if settings.mode == "auto":
        notes.append(
            "auto asks for log-probabilities: a batch cannot fall back, items without them get an error"
        )
    if settings.base_url:
        notes.append(f"sent to {settings.base_url}, which must serve the Files and Batches APIs")
    st.caption(safe_text.md_escape("; ".join(notes) + "."))
    if st.button("Submit batch", key="score_batch_submit", disabled=not items or not ready):
        submit(lib, plan)
    _show("submit")


def submit(lib, plan: RunPlan) -> None:
    """Record the planned run (a test-side use included) and submit its requests; the run is then the one shown
    below, with its status."""
    from geval_core.run.batch_engines import submit_planned

    try:
        client = _client(plan.settings.provider, plan.settings.base_url)
        result = submit_planned(lib, plan, client=client)
    except Exception as exc:
        _failed("submit", "The batch was not submitted.", exc)
        return
    st.session_state.get(SAID, {}).pop("submit", None)
    _say(
        result["batch_id"],
        "success",
        f"Submitted batch {result['batch_id']} ({result['requests']} requests): "
        f"{result['status']}. Check its status now and then; collect it when it has finished.",
    )
    st.session_state["score_run"] = result["run_id"]  # the run picker below opens the new run


def pending(run: Run) -> bool:
    """A batch run whose results are not all collected (a live resume would pay for its items twice)."""
    return bool(run.batch_id) and run.status == "running"


def _base_url(provider: str) -> str | None:
    """The sidebar's server for this provider, as live runs use it (a URL is never taken from the library)."""
    conn = state.sidebar().judge
    return conn.base_url if conn.provider == provider else None


def check(lib, batch_id: str, provider: str) -> None:
    """Button callback: the provider's status of the batch."""
    from geval_core.run.batch_engines import batch_status

    try:
        result = batch_status(lib, batch_id, client=_client(provider, _base_url(provider)))
    except Exception as exc:
        _failed(batch_id, "The status check failed.", exc)
        return
    counts = result.get("counts") or {}
    done = f" ({counts.get('completed', 0)} of {counts['total']} done)" if counts.get("total") else ""
    after = ": collect it" if result["done"] else ": check again later"
    _say(batch_id, "info", f"Batch {batch_id}: {result['status']}{done}{after}.")


def collect(lib, batch_id: str, provider: str) -> None:
    """Button callback: download the finished batch and score it into its run (idempotent)."""
    from geval_core.run.batch_engines import collect_remote

    try:
        result = collect_remote(lib, batch_id, client=_client(provider, _base_url(provider)))
    except Exception as exc:
        _failed(batch_id, "Collecting the batch failed.", exc)
        return
    if not result["collected"]:
        _say(batch_id, "info", f"Batch {batch_id} has not finished ({result['status']}): collect it later.")
        return
    s = result["summary"] or {"scored": 0, "failed": 0, "skipped": 0}
    _say(
        batch_id,
        "success",
        f"Collected batch {batch_id}: {s['scored']} scored, {s['failed']} errors, "
        f"{s['skipped']} collected before.",
    )


def run_panel(lib, run: Run) -> None:
    """For a batch run: which batch, Check status, Collect, and what the last of them said."""
    batch_id = run.batch_id
    if not batch_id:
        return
    provider = run.extra.get("batch_provider") or "openai"
    st.caption(
        safe_text.md_escape(
            f"Batch run: batch {batch_id} at {provider}, {run.extra.get('batch_requests')} "
            "requests; its results are collected into this run."
        )
    )
    c1, c2, _ = st.columns([1, 1, 3])
    c1.button("Check status", key="score_batch_check", on_click=check, args=(lib, batch_id, provider))
    c2.button(
        "Collect",
        key="score_batch_collect",
        on_click=collect,
        args=(lib, batch_id, provider),
        disabled=not pending(run),
        help="Downloads the results and scores them like a live run; collecting again skips what is stored.",
    )
    _show(batch_id)
