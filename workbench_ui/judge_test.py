"""The sidebar's "Test judge" button: the judge probe `geval probe` runs, for the sidebar's judge, kept in the
library like the CLI keeps it, and the latest result shown beneath (server text as plain text only)."""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from geval_core.diagnostics.judge_probe import latest_probe, probe_judge, save_probe
from geval_core.errors import GEvalError
from geval_core.providers.capabilities import probe_findings
from geval_core.providers.registry import find_spec
from geval_core.run.plan import plan_settings, takes_server
from geval_core.types import Dimension, FrozenPrompt, JudgeSettings, Scale
from workbench_ui import safe_text, state

log = logging.getLogger("geval.app")
SCALE_KEY, BUTTON_KEY, FAILED_KEY = "sb_probe_scale", "sb_test_judge", "sb_test_failed"
TIMEOUT_S = 30.0  # per call: a button should not hang for the runner's minute
# A 1-10 question checks whether "10" comes back as one token; 1-5 is the CLI's default question (cheaper).
SCALES = {5: "ratings 1-5", 10: "ratings 1-10 (is 10 one token?)"}
_QUESTION = (
    "Rate the fluency of this sentence on a scale of {{scale}}. Reply with the number only.\n\n{{sentence}}"
)


def probe_prompt(top: int) -> FrozenPrompt | None:
    """The question the probe asks: None for 1-5 (the CLI's own), a short 1-`top` question otherwise."""
    if top == 5:
        return None
    dim = Dimension(
        name="Fluency", definition="", scale=Scale(1, top), inputs=("sentence",), template=_QUESTION
    )
    return FrozenPrompt("probe", "probe", 0, dim, "")


def _yes(value: Any) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def single_token_text(result: dict[str, Any]) -> str:
    """'yes', 'unknown', or 'no: 10 comes back as "1", "0"' (the split ratings named)."""
    split = result.get("split_ratings") or []
    if not split:
        return _yes(result.get("single_token_ratings"))
    named = [
        f"{r} comes back as " + ", ".join(f'"{d}"' for d in r) if len(r) == 2 else f"{r} is split"
        for r in split
    ]
    return "no: " + "; ".join(named)


def fact_lines(result: dict[str, Any]) -> list[str]:
    """The probe's facts, one per line, for display as plain text."""
    latency, usd = result.get("latency_s"), result.get("usd_per_item")
    cap = result.get("top_logprobs_max")
    return [
        f"reachable: {_yes(result.get('reachable'))}",
        f"model version: {result.get('model_version') or 'unknown'}",
        f"log-probabilities: {_yes(result.get('logprobs'))}",
        f"top_logprobs max: {'unknown' if cap is None else cap}",
        f"single-token ratings: {single_token_text(result)}",
        f"n honoured: {_yes(result.get('n_honoured'))}",
        f"latency: {'unknown' if latency is None else f'{latency:.3f} s'}",
        f"cost per item: {'unpriced' if usd is None else f'${usd:.6f}'}",
        f"tested: {result.get('probed_at')}",
    ]


def _judge(settings: JudgeSettings):
    """The judge to probe: the cached one for an in-process judge (the model loads once), else a fresh client."""
    spec = find_spec(settings.provider)
    if spec is not None and not spec.takes_server:
        return state.make_judge(settings)
    from geval_core.providers import get_judge

    return get_judge(settings, timeout=TIMEOUT_S)


def run_test(settings: JudgeSettings, top: int) -> None:
    """Probe the judge and keep the result in the library; a failure to start is kept for display."""
    st.session_state.pop(FAILED_KEY, None)
    try:
        lib = state.library()
        result = probe_judge(_judge(settings), settings, probe_prompt(top), store=lib)
        save_probe(lib, settings, result)
    except GEvalError as exc:  # a missing key, a refused URL: said, never a traceback
        st.session_state[FAILED_KEY] = str(exc)
    except Exception as exc:
        log.exception("judge test failed")
        st.session_state[FAILED_KEY] = f"Unexpected error ({type(exc).__name__}): {exc}"


def show(settings: JudgeSettings, fresh: bool) -> None:
    """The latest probe of this judge on this server, with what it means for the default settings."""
    sb = st.sidebar
    failed = st.session_state.get(FAILED_KEY) if fresh else None
    if failed:
        sb.error("The judge test could not start:", icon="⚠️")
        sb.code(failed, language=None, wrap_lines=True)
    result = latest_probe(state.library(), settings)
    if result is None:
        if not failed:
            sb.caption(
                "Not tested yet "
                + ("on this server." if takes_server(settings.provider) else "in this library.")
            )
        return
    with sb.expander(
        f"Last test: {'reachable' if result.get('reachable') else 'NOT reachable'}", expanded=fresh
    ):
        st.code("\n".join(fact_lines(result)), language=None, wrap_lines=True)
        for finding in probe_findings(result, settings):
            st.warning(safe_text.md_escape(finding))
        if result.get("errors"):
            st.caption("What the judge answered:")
            st.code("\n".join(str(e) for e in result["errors"]), language=None, wrap_lines=True)


def panel(picked: state.SidebarChoice) -> None:
    """The Test judge button and the latest result, in the sidebar."""
    sb = st.sidebar
    top = sb.radio("Test with", list(SCALES), format_func=SCALES.get, key=SCALE_KEY, horizontal=True)
    clicked = sb.button(
        "Test judge",
        key=BUTTON_KEY,
        help="A few cheap requests: reachable, model version, log-probabilities and their cap, "
        "single-token ratings, n honoured, latency and cost. Kept in the library; the "
        "Design checks and the Score page read the latest test.",
    )
    try:  # the server a run will reach (the environment's when the sidebar names none): the test is kept under it
        judge = plan_settings(picked.judge, state.library()).settings
    except GEvalError as exc:
        sb.error(safe_text.md_escape(str(exc)))
        return
    if clicked:
        with st.spinner("Testing the judge…"):
            run_test(judge, int(top))
    show(judge, clicked)
