"""G-Eval Workbench: the Streamlit entry point (page config, sidebar, navigation)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: see geval_core/cli/__init__.py

import streamlit as st  # noqa: E402

from geval_core.errors import ConfigError
from geval_core.providers.capabilities import PRESETS
from geval_core.providers.gguf_file import is_model_file, split_pin
from workbench_ui import judge_test, safe_text, sealing, server_presets, state

# The app builds tables of a large run's judgments in a heap of hundreds of thousands of objects (Streamlit,
# pandas, plotly). With CPython's default thresholds (700, 10, 10) a page's first render walks that whole heap
# and the young objects hundreds of times (bench_agreement_page.py measures it).
# Only the youngest generation's threshold is raised; the older ones keep their ratios (every 10 young
# collections, and every 10 of those), so a long-running server still frees its cycles, within about
# 1,000,000 allocations instead of 70,000.
GC_THRESHOLDS = (10_000, 10, 10)
gc.set_threshold(*GC_THRESHOLDS)  # on every rerun (this script runs each time): cheap, and the same

# The page files live in app_pages/, not pages/: Streamlit treats a pages/ folder as the old multipage
# layout and, until st.navigation has run once in the process, runs a page file alone without this
# entry script (a deep link on a fresh server; every AppTest rerun), losing the sidebar.
PAGES = [
    st.Page("app_pages/start.py", title="Start", icon=":material/flag:", default=True),
    st.Page("app_pages/design.py", title="Design", icon=":material/edit_note:"),
    st.Page("app_pages/library.py", title="Library", icon=":material/library_books:"),
    st.Page("app_pages/datasets.py", title="Datasets", icon=":material/dataset:"),
    st.Page("app_pages/score.py", title="Score", icon=":material/speed:"),
    st.Page("app_pages/rate.py", title="Rate", icon=":material/how_to_vote:"),
    st.Page("app_pages/agreement.py", title="Agreement", icon=":material/query_stats:"),
    st.Page("app_pages/align.py", title="Align", icon=":material/tune:"),
]


def key_status(picked: state.SidebarChoice) -> str:
    """Whether the judge's key is set, by variable name; never the key itself."""
    present = picked.key_present
    if present is None:
        return "API key: not needed"
    names = " or ".join(picked.key_vars)
    if present:
        return f"API key ({names}): present ✅"
    if picked.choice == "compatible":
        return f"API key ({names}): not set, fine for a local server that needs none"
    return f"API key ({names}): missing ❌"


def local_model_box(sb) -> str:
    """The local judge's model: the bundled SmolLM2, or a GGUF file inside the library folder, pinned by hash."""
    typed = sb.text_input(
        "Model file (optional)",
        key="sb_local_file",
        placeholder="the bundled SmolLM2-135M",
        help=f"A .gguf file inside {state.library_home()} (the folder libraries open in). "
        "Its content hash is pinned in the prompts and runs made with it.",
    )
    if not typed.strip():
        return ""
    try:
        model = state.local_model_file(typed)
    except ConfigError as exc:
        sb.error(safe_text.md_escape(f"{exc}. Using the bundled SmolLM2."))
        return ""
    path, digest = split_pin(model)
    sb.caption(safe_text.md_escape(f"{Path(path).name} · sha256 {digest[:12]}…"))
    return model


def draw_sidebar() -> state.SidebarChoice:
    """Library file, judge connection and key status; stored for the pages in session state."""
    sb = st.sidebar
    st.session_state.setdefault(state.DB_KEY, str(state.default_path()))
    typed = sb.text_input(
        "Library file",
        key=state.DB_KEY,
        on_change=state.check_library_box,
        help=f"SQLite file of the prompt library (${state.HOME_ENV} chooses the folder, "
        "$GEVAL_DB the default file).",
    )
    sb.caption(safe_text.md_escape(f"Libraries open from {state.library_home()} only."))
    said = st.session_state.pop(state.DB_SAID, None)
    if said:
        sb.error(safe_text.md_escape(said))
    try:
        db_path = state.library_path(typed)
    except ConfigError as exc:  # typed before this session's callback could check it: keep the default open
        sb.error(safe_text.md_escape(f"{exc}. Using {state.default_path()}."))
        db_path = state.default_path()
    choices = state.provider_choices()
    state.keep_choice("sb_judge", choices)  # the judge chosen last in this library, in any session
    choice = state.kept(
        "sb_judge",
        sb.selectbox(
            "Judge", choices, key="sb_judge", format_func=lambda c: state.provider_labels().get(c, c)
        ),
    )
    missing = state.missing_key(choice)
    if missing:  # said here, at the choice, not first after "Start run" (the run is still refused)
        sb.warning(safe_text.md_escape(missing), icon="🔑")
    if choice == "local":
        model = local_model_box(sb)
    else:
        model_key = f"sb_model_{choice}"
        if (
            model_key not in st.session_state
        ):  # a widget given a value= and a session value makes Streamlit warn
            st.session_state[model_key] = state.remembered(model_key) or state.default_model(choice)
        model = state.kept(
            model_key,
            sb.text_input(
                "Model",
                key=model_key,
                disabled=not state.needs_model(choice),
                help="Pin a dated model version: hosted aliases change under you.",
            ),
        )
    base_url = None
    if choice == "compatible":
        # The default goes through session state: scrub_base_url rewrites the value, and a widget given both
        # a value= and a session-state value makes Streamlit warn on the page.
        st.session_state.setdefault(
            state.BASE_URL_KEY,
            state.remembered(state.BASE_URL_KEY) or PRESETS[server_presets.DEFAULT].base_url,
        )
        server_presets.picker()  # choosing a server fills the URL (its on_change runs before this script)
        base_url = sb.text_input(
            "Base URL",
            key=state.BASE_URL_KEY,
            on_change=state.scrub_base_url,
            help=f"Your server: requests and the key go here only. No key in the URL: "
            f"{state.OPENAI_KEY} holds it.",
        )
        said = st.session_state.pop(state.BASE_URL_SAID, None)
        if said:
            sb.error(safe_text.md_escape(said))
    try:
        judge = state.judge_settings_for(choice, model.strip(), base_url)
    except ConfigError as exc:  # never fall back to another server: nothing runs until the URL is fixed
        sb.error(safe_text.md_escape(str(exc)))
        st.stop()
    if base_url is not None:
        state.remember(state.BASE_URL_KEY, judge.base_url)  # checked first: a refused URL is never kept
    picked = state.SidebarChoice(str(db_path), choice, judge)
    sb.caption(key_status(picked))
    if choice == "local" and not is_model_file(judge.model):
        sb.info(
            "The local SmolLM2-135M judge is tiny: good for trying the workbench, not a trustworthy judge.",
            icon="ℹ️",
        )
    return picked


# An emoji icon is drawn in the browser; a :material/...: page icon would be fetched from fonts.gstatic.com.
st.set_page_config(page_title="G-Eval Workbench", page_icon="⚖️", layout="wide")
state.secrets_to_env()
page = st.navigation(PAGES)
st.session_state[state.SIDEBAR_KEY] = draw_sidebar()
judge_test.panel(st.session_state[state.SIDEBAR_KEY])
st.session_state.pop(sealing.CURRENT, None)  # each page chooses its own scope of items
page.run()
