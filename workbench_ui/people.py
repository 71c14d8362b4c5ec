"""What "people" means on the pages (geval_core.stats.people.RULE) and the one notice shown wherever a figure
compares a judge with people while the Rate page holds ratings the dataset version does not."""

from __future__ import annotations

import streamlit as st

from geval_core.stats.people import RULE, unsaved_note
from workbench_ui import safe_text

__all__ = ["RULE", "unsaved_notice"]


def unsaved_notice(store, dataset_id: str, dimension: str | None) -> None:
    """An info box with the count of items whose Rate-page ratings of `dimension` this version lacks; nothing
    when there are none."""
    if dimension and (note := unsaved_note(store, dataset_id, dimension)):
        st.info(safe_text.md_escape(note), icon="ℹ️")
