"""Safe display helpers: untrusted text is shown as text, errors as readable messages."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

import streamlit as st

from geval_core.errors import GEvalError

log = logging.getLogger("geval.app")
# Characters with a meaning in Streamlit's Markdown (CommonMark, GFM tables, :colour[] and :emoji:
# directives, $LaTeX$, HTML): backslash-escaped, the text renders literally.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:&])")


def md_escape(text: object) -> str:
    """Backslash-escape Markdown's special characters so Streamlit renders the text literally."""
    return _SPECIAL.sub(r"\\\1", str(text))


def show_error(exc: BaseException) -> None:
    """One readable message for an error, never a traceback on the page."""
    if isinstance(exc, GEvalError):
        st.error(md_escape(exc), icon="⚠️")
    else:
        # Unexpected: the traceback goes to the server log only.
        log.exception("unexpected error on a page", exc_info=exc)
        st.error(f"Unexpected error ({type(exc).__name__}): {md_escape(exc)}", icon="⚠️")


def guarded(page: Callable[[], None]) -> None:
    """Run a page body; a GEvalError or any other Exception becomes a message.

    Streamlit's own rerun/stop signals derive from BaseException, not Exception, so they pass.
    """
    try:
        page()
    except Exception as exc:
        show_error(exc)


def show_text(label: str, text: object) -> None:
    """A field of an item: the label is ours, the text is untrusted and shown verbatim."""
    st.caption(md_escape(label))
    st.code(str(text) if text is not None else "", language=None, wrap_lines=True)


def fmt(value: object, digits: int = 3) -> str:
    """A number for display; '—' for None."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def interval(bounds: Sequence[float | None] | None, digits: int = 3) -> str:
    """'[0.412, 0.655]' for a 95% interval; 'withheld' when there is none (too few units to draw one)."""
    if not bounds or any(b is None for b in bounds):
        return "withheld"
    return f"[{bounds[0]:.{digits}f}, {bounds[1]:.{digits}f}]"


def fmt_rating(value: float | str | None) -> str:
    """A rating for display: 5.0 -> '5', 3.6667 -> '3.67'; '—' for None."""
    if value is None:
        return "—"
    return f"{float(value):.3g}"


def judge_label(settings) -> str:
    """'openai:gpt-4o-mini · logprobs · n=1 · T=0.0' for a JudgeSettings."""
    model = f"{settings.provider}:{settings.model}"
    url = f" @ {settings.base_url}" if getattr(settings, "base_url", None) else ""
    return f"{model}{url} · {settings.mode} · n={settings.n} · T={settings.temperature:g}"
