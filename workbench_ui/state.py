"""Per-session state the pages share: the sidebar's choices, the cached library and the judge."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import streamlit as st

from geval_core.providers._common import env_key
from geval_core.providers.gemini_judge import KEY_VARIABLES as GEMINI_KEYS
from geval_core.providers.openai_judge import KEY_VARIABLE as OPENAI_KEY
from geval_core.types import JudgeRequest, JudgeSettings
from prompt_library import default_path

# Sidebar choice -> label; "compatible" is the openai provider with a base URL.
PROVIDERS = {
    "local": "Local SmolLM2 (no key, no network)",
    "openai": "OpenAI",
    "gemini": "Gemini",
    "compatible": "OpenAI-compatible server",
}
DEFAULT_MODELS = {
    "local": "smollm2-135m-instruct",
    "openai": "gpt-4o-mini-2024-07-18",
    "gemini": "gemini-2.0-flash-001",
    "compatible": "smollm2",
    "scripted": "scripted-1",
}
# The variables the providers read their keys from (get_judge), by sidebar choice.
KEY_VARS = {"openai": (OPENAI_KEY,), "gemini": GEMINI_KEYS, "compatible": (OPENAI_KEY,)}
# Tests (AppTest, the bench) set GEVAL_TEST_JUDGE=scripted to get a fast, predictable judge.
TEST_JUDGE_ENV = "GEVAL_TEST_JUDGE"
SIDEBAR_KEY = "workbench_sidebar"


@dataclass(frozen=True)
class SidebarChoice:
    """What the sidebar selected: the library file and the judge connection."""

    db_path: str
    choice: str  # a PROVIDERS key, or "scripted" in tests
    judge: JudgeSettings  # provider, model, base_url; decoding comes from the prompt

    @property
    def key_vars(self) -> tuple[str, ...]:
        """The environment variables that can hold this judge's key (none for local)."""
        return KEY_VARS.get(self.choice, ())

    @property
    def key_present(self) -> bool | None:
        """Whether a key is set, as get_judge reads it (None when the judge needs none); never the key itself."""
        if not self.key_vars:
            return None
        return env_key(*self.key_vars) is not None


def provider_choices() -> list[str]:
    """The judges the sidebar offers; the scripted one only when tests ask for it."""
    choices = list(PROVIDERS)
    if os.environ.get(TEST_JUDGE_ENV) == "scripted":
        choices.insert(0, "scripted")
    return choices


def secrets_to_env() -> None:
    """Copy Streamlit secrets' root-level string keys into the environment (never shown)."""
    try:
        items = {k: st.secrets[k] for k in st.secrets}
    except Exception:  # no secrets.toml: nothing to copy
        return
    for key, value in items.items():
        if isinstance(value, str):
            os.environ.setdefault(key, value)


def judge_settings_for(choice: str, model: str, base_url: str | None) -> JudgeSettings:
    """The connection part of JudgeSettings for a sidebar choice."""
    provider = "openai" if choice == "compatible" else choice
    return JudgeSettings(provider=provider, model=model or DEFAULT_MODELS.get(choice, ""),
                         base_url=(base_url or None) if choice == "compatible" else None)


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
    """Judge settings for a run: the prompt's own, or the sidebar's connection with the prompt's decoding."""
    if not use_sidebar:
        return frozen
    conn = sidebar().judge
    return replace(frozen, provider=conn.provider, model=conn.model, base_url=conn.base_url)


def make_judge(settings: JudgeSettings):
    """A judge for these settings (cached per provider, model and URL; the local model loads once)."""
    if settings.provider == "scripted":
        return scripted_judge()
    return _cached_judge(settings.provider, settings.model, settings.base_url)


@st.cache_resource(show_spinner="Loading the judge…", max_entries=8)
def _cached_judge(provider: str, model: str, base_url: str | None):
    from geval_core.providers import get_judge

    return get_judge(JudgeSettings(provider=provider, model=model, base_url=base_url))


SCRIPTED_STEPS = (
    "1. Read the text carefully and identify its main points.\n"
    "2. Check how well the text meets the definition of the dimension.\n"
    "3. Assign a rating on the scale using the descriptions of each point."
)


def _scripted_script(request: JudgeRequest) -> dict[str, float]:
    from geval_core.providers.scripted import _default_script

    # A request without allowed ratings is a steps-generation request: answer with numbered steps.
    if not request.ratings:
        return {SCRIPTED_STEPS: 1.0}
    return _default_script(request)


def scripted_judge():
    """The tests' scripted judge: steps for generation requests, a fixed distribution for ratings."""
    from geval_core.providers.scripted import ScriptedJudge

    return ScriptedJudge(_scripted_script)
