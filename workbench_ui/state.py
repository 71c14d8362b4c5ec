"""Per-session state the pages share: the sidebar's choices, the cached library and the judge."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from geval_core.errors import ConfigError
from geval_core.providers.common import env_key
from geval_core.providers.registry import ProviderSpec, find_spec, key_variable, specs
from geval_core.types import JudgeSettings
from geval_core.urls import check_base_url, credentials_in, shown_url

# The sidebar's choices come from the provider registry: each public provider, and "compatible" (the provider
# that talks to compatible servers at a base URL) after them.
COMPATIBLE = "compatible"
OPENAI_KEY = key_variable(
    "openai"
)  # the compatible provider's key variable, named in the Base URL's messages


def _compatible_spec() -> ProviderSpec:
    return next(spec for spec in specs() if spec.compatible_label)


def provider_labels() -> dict[str, str]:
    """Sidebar choice -> label, in the order the sidebar offers them."""
    labels = {spec.name: spec.label for spec in specs() if spec.public}
    labels[COMPATIBLE] = _compatible_spec().compatible_label or COMPATIBLE
    return labels


def default_model(choice: str) -> str:
    """The model the sidebar's Model box starts with for a choice."""
    if choice == COMPATIBLE:
        return _compatible_spec().compatible_model
    spec = find_spec(choice)
    return spec.default_model if spec else ""


def needs_model(choice: str) -> bool:
    """Whether the choice takes a model name (the local judge and the test judge do not)."""
    spec = find_spec(choice)
    return choice == COMPATIBLE or spec is None or spec.needs_model


def key_variables(choice: str) -> tuple[str, ...]:
    """The environment variables that can hold a choice's key (Vertex: its project; none for local)."""
    spec = _compatible_spec() if choice == COMPATIBLE else find_spec(choice)
    return spec.key_variables if spec else ()


def missing_key(choice: str) -> str | None:
    """For a judge whose key (Vertex: its project) is not set: the sentence said beside the judge choice, naming the
    variable to set; None when it is set or not needed (a compatible server may need none)."""
    names = key_variables(choice)
    if not names or choice == COMPATIBLE or env_key(*names) is not None:
        return None
    spec = find_spec(choice)
    what = "an API key" if spec is None or spec.key_required else "a project"  # Vertex: credentials + project
    return (
        f"This judge needs {what}: set {' or '.join(names)} in the environment (or as a root key of "
        ".streamlit/secrets.toml) and restart the app. Until then a run with it is refused."
    )


KEPT = "kept_"  # plain session keys that outlive a page switch (Streamlit drops a widget's value once a page
# without that widget has run)


REMEMBERED = (
    "ui:kept"  # the library's setting holding the last choices of its pickers (any browser, any session)
)


def remembered(key: str):
    """The library's last choice of a picker (None when it has none or the library cannot be read)."""
    try:
        return (library().get_setting(REMEMBERED) or {}).get(key)
    except Exception:  # noqa: BLE001 - a library that cannot be read only forgets: the page still draws
        return None


def remember(key: str, value) -> None:
    """Keep a picker's choice in the library when it changed: the next session opens on it."""
    try:
        lib = library()
        stored = lib.get_setting(REMEMBERED) or {}
        if stored.get(key) != value:
            lib.set_setting(REMEMBERED, {**stored, key: value})
    except Exception:  # noqa: BLE001 - a read-only or locked library keeps the choice for this session only
        return


def keep_choice(key: str, options: list) -> None:
    """Before a picker is drawn: bring back its last choice (this session's, else the library's, from any earlier
    session or browser) when it is still offered."""
    kept = st.session_state.get(KEPT + key)
    if kept is None:
        kept = remembered(key)
    if key not in st.session_state and kept in options:
        st.session_state[key] = kept


def kept(key: str, value):
    """After a picker is drawn: remember its choice for the next visit of the page and the next session."""
    st.session_state[KEPT + key] = value
    remember(key, value)
    return value


def follow(key: str, value) -> None:
    """Make a picker of another page open on `value` next time (the prompt just frozen)."""
    st.session_state[KEPT + key] = value
    st.session_state.pop(key, None)
    remember(key, value)


SIDEBAR_KEY = "workbench_sidebar"
# The sidebar opens library files inside this one folder only (a visitor must not reach the rest of the disk).
HOME_ENV = "GEVAL_HOME"
LIBRARY_SUFFIXES = (".db", ".sqlite", ".sqlite3")
BASE_URL_KEY, BASE_URL_SAID = "sb_base_url", "sb_base_url_said"


@dataclass(frozen=True)
class SidebarChoice:
    """What the sidebar selected: the library file and the judge connection."""

    db_path: str
    choice: str  # a PROVIDERS key, or "scripted" in tests
    judge: JudgeSettings  # provider, model, base_url; decoding comes from the prompt

    @property
    def key_vars(self) -> tuple[str, ...]:
        """The environment variables that can hold this judge's key (none for local)."""
        return key_variables(self.choice)

    @property
    def key_present(self) -> bool | None:
        """Whether a key is set, as get_judge reads it (None when the judge needs none); never the key itself."""
        if not self.key_vars:
            return None
        return env_key(*self.key_vars) is not None


def provider_choices() -> list[str]:
    """The judges the sidebar offers, first one first (the default)."""
    return list(provider_labels())


def secrets_to_env() -> None:
    """Copy Streamlit secrets' root-level string keys into the environment (never shown)."""
    try:
        items = {k: st.secrets[k] for k in st.secrets}
    except Exception:  # no secrets.toml: nothing to copy
        return
    for key, value in items.items():
        if isinstance(value, str):
            os.environ.setdefault(key, value)


def library_home() -> Path:
    """The one folder the sidebar opens libraries in: $GEVAL_HOME, else the default library's folder ($GEVAL_DB's),
    else the working directory."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).resolve()
    chosen = os.environ.get("GEVAL_DB")
    return (Path(chosen).resolve().parent if chosen else Path(os.getcwd())).resolve()


def default_path() -> Path:
    """The library the app opens first: $GEVAL_DB (chosen by whoever started the app), else geval.db at home."""
    chosen = os.environ.get("GEVAL_DB")
    return Path(chosen) if chosen else library_home() / "geval.db"


def library_path(text: str) -> Path:
    """The library file typed in the sidebar: the default, or a .db file inside library_home(); ConfigError else.

    Relative paths are read from the home folder; symlinks are followed before the check; no folder is created.
    """
    home, typed = library_home(), Path(text.strip())
    if not text.strip() or typed == default_path():
        return default_path()
    path = (typed if typed.is_absolute() else home / typed).resolve()
    if path == default_path().resolve():
        return path
    if not path.is_relative_to(home):
        raise ConfigError(
            f"the library file must be inside {home} (set {HOME_ENV} to choose another folder "
            f"when starting the app); {text.strip()!r} is outside it"
        )
    if path.suffix.lower() not in LIBRARY_SUFFIXES or path.is_dir():
        raise ConfigError(
            f"{text.strip()!r} is not a library file name: use a name ending in {', '.join(LIBRARY_SUFFIXES)}"
        )
    if not path.parent.is_dir():
        raise ConfigError(
            f"the folder {path.parent.relative_to(home)} does not exist inside {home}; the workbench "
            "never creates folders"
        )
    return path


DB_KEY, DB_SAID = "sb_db", "sb_db_said"


def check_library_box() -> None:
    """on_change of the sidebar's Library file: a refused name is said once and the box goes back to the default
    (a refused name left in the box kept a red box on every page)."""
    typed = st.session_state.get(DB_KEY) or ""
    try:
        library_path(typed)
    except ConfigError as exc:
        st.session_state[DB_KEY] = str(default_path())
        st.session_state[DB_SAID] = f"{exc}. Using {default_path()}."


def scrub_base_url() -> None:
    """on_change of the sidebar's Base URL: credentials typed into it are removed at once, never used or shown."""
    value = st.session_state.get(BASE_URL_KEY) or ""
    where = credentials_in(value)
    if where is not None:
        st.session_state[BASE_URL_KEY] = shown_url(value)
        st.session_state[BASE_URL_SAID] = (
            f"The Base URL carried credentials ({where}): they were removed and not used. A key never goes in a "
            f"URL: set {OPENAI_KEY} in the environment (or .streamlit/secrets.toml) instead."
        )


def local_model_file(text: str) -> str:
    """A GGUF file typed in the sidebar, pinned by its content hash; inside library_home() only (ConfigError)."""
    from geval_core.providers.gguf_file import pin_model_file

    home = library_home()
    path = Path(text.strip())
    path = (path if path.is_absolute() else home / path).resolve()
    if not path.is_relative_to(home):
        raise ConfigError(
            f"the model file must be inside {home} (set {HOME_ENV} to choose another folder when "
            f"starting the app); {text.strip()!r} is outside it"
        )
    return pin_model_file(str(path))


def judge_settings_for(choice: str, model: str, base_url: str | None) -> JudgeSettings:
    """The connection part of JudgeSettings for a sidebar choice; ConfigError for a URL carrying credentials."""
    provider = _compatible_spec().name if choice == COMPATIBLE else choice
    url = check_base_url(base_url, OPENAI_KEY) if choice == COMPATIBLE else None
    return JudgeSettings(provider=provider, model=model or default_model(choice), base_url=url)


def sidebar() -> SidebarChoice:
    """The sidebar's current choice (defaults when a page runs without app.py)."""
    found = st.session_state.get(SIDEBAR_KEY)
    if isinstance(found, SidebarChoice):
        return found
    choice = provider_choices()[0]
    return SidebarChoice(str(default_path()), choice, judge_settings_for(choice, "", None))


@st.cache_resource(show_spinner=False, max_entries=4)
def _open_library(path: str):
    from prompt_library import Library

    return Library(path)


def library():
    """The Library for the sidebar's file, opened once per path and shared by reruns."""
    return _open_library(os.path.abspath(sidebar().db_path))


def run_settings(frozen: JudgeSettings, use_sidebar: bool) -> JudgeSettings:
    """Judge settings for a run: the prompt's own, or the sidebar's connection with the prompt's decoding.

    The server is always the sidebar's (for the prompt's own provider), never a URL stored with a prompt.
    """
    conn = sidebar().judge
    if not use_sidebar:
        return replace(frozen, base_url=conn.base_url if conn.provider == frozen.provider else None)
    return replace(frozen, provider=conn.provider, model=conn.model, base_url=conn.base_url)


def make_judge(settings: JudgeSettings):
    """A judge for these settings (cached per provider, model and URL; the local model loads once)."""
    spec = find_spec(settings.provider)
    if spec is not None and not spec.reuse:
        return spec.build(settings)
    return _cached_judge(settings.provider, settings.model, settings.base_url)


@st.cache_resource(show_spinner="Loading the judge…", max_entries=8)
def _cached_judge(provider: str, model: str, base_url: str | None):
    from geval_core.providers import get_judge

    return get_judge(JudgeSettings(provider=provider, model=model, base_url=base_url))
