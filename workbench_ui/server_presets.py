"""The sidebar's OpenAI-compatible server presets: choosing one fills its default base URL and says what
that server is known to return (capabilities.PRESETS, the same data as the README's table)."""

from __future__ import annotations

import streamlit as st

from geval_core.providers.capabilities import PRESETS, preset_summary
from workbench_ui import safe_text, state

KEY = "sb_preset"
OTHER = "other"
DEFAULT = "llama.cpp"  # its URL is the Base URL box's default, so the two agree on a fresh session


def label(key: str) -> str:
    """The preset's name in the picker."""
    return "Other server" if key == OTHER else PRESETS[key].name


def fill_base_url() -> None:
    """on_change of the picker (runs before the script): the chosen server's default base URL."""
    chosen = st.session_state.get(KEY)
    if chosen in PRESETS:
        st.session_state[state.BASE_URL_KEY] = PRESETS[chosen].base_url


def picker() -> None:
    """The server preset and what that server returns; drawn above the Base URL box."""
    sb = st.sidebar
    st.session_state.setdefault(KEY, DEFAULT)
    chosen = sb.selectbox(
        "Server",
        [*PRESETS, OTHER],
        key=KEY,
        format_func=label,
        on_change=fill_base_url,
        help="Fills the base URL with the server's default; edit the URL for another host or port.",
    )
    if chosen == OTHER:
        sb.caption("What this server returns is not known: Test judge measures it.")
    else:
        sb.caption(safe_text.md_escape(preset_summary(PRESETS[chosen])))
