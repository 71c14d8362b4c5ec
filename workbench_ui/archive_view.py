"""Archive and restore panel shared by the pages: hides datasets, runs and drafts from pickers, deletes nothing."""

from __future__ import annotations

from typing import Any, TypeVar

import streamlit as st

from geval_core.prompts.inputs import missing_inputs
from geval_core.records import Dataset, Run
from workbench_ui import safe_text

Row = TypeVar("Row", Run, Dataset, dict[str, Any])  # runs, dataset versions, drafts (still rows)


def visible(lib, kind: str, rows: list[Row]) -> list[Row]:
    """The rows a picker offers: every one not archived (by its id)."""
    hidden = lib.archived_ids(kind)
    return [r for r in rows if str(r["id"] if isinstance(r, dict) else r.id) not in hidden]


def _apply(lib, kind: str, key: str, archive: bool) -> None:
    # A callback: runs before the page is drawn, so every picker below already sees the change.
    for object_id in st.session_state.get(key) or []:
        (lib.archive if archive else lib.restore)(kind, object_id)
    st.session_state[key] = []


def panel(lib, kind: str, labels: dict[str, str]) -> None:
    """An expander to archive some of `labels` (id -> label) and restore archived ones."""
    hidden = lib.archived_ids(kind)
    active = [i for i in labels if i not in hidden]
    archived = [i for i in labels if i in hidden]
    show = lambda i: safe_text.md_escape(labels[i])  # noqa: E731 -- labels carry user names
    with st.expander(f"Archive {kind}s ({len(archived)} archived)"):
        st.caption(
            f"An archived {kind} is hidden from the pickers and kept whole in the library; restore it "
            "any time. Nothing frozen is deleted or changed."
        )
        key = f"archive_{kind}_pick"
        st.multiselect(f"{kind.capitalize()}s to archive", active, format_func=show, key=key)
        st.button(
            "Archive",
            key=f"archive_{kind}_go",
            on_click=_apply,
            args=(lib, kind, key, True),
            disabled=not st.session_state.get(key),
        )
        if archived:
            back = f"archive_{kind}_restore"
            st.multiselect(f"Archived {kind}s to restore", archived, format_func=show, key=back)
            st.button(
                "Restore",
                key=f"archive_{kind}_back",
                on_click=_apply,
                args=(lib, kind, back, False),
                disabled=not st.session_state.get(back),
            )


def frozen_and_dataset(lib, kind: str, key: str) -> tuple[str, Dataset] | None:
    """The name of a frozen `kind` ("panel", "cascade") and a dataset not archived to score with it, picked
    side by side; None, said, while nothing of that kind is frozen."""
    names = lib.setting_names(f"{kind}:")
    if not names:
        st.info(f"No {kind} yet: freeze one above (or `geval {kind} freeze`).")
        return None
    c1, c2 = st.columns(2)
    name = c1.selectbox(kind.capitalize(), names, key=key + kind)
    prompt = lib.get_prompt(_first_prompt(lib, kind, name))
    # Datasets holding every input of the members come first (the first of them is the default); the others say
    # what they lack, as the Score page's New run does.
    every = visible(lib, "dataset", lib.list_datasets())
    unfit = {d.label: missing_inputs(prompt, d.fields) for d in every}
    datasets = {d.label: d for d in sorted(every, key=lambda d: bool(unfit[d.label]))}

    def label(text: str) -> str:
        return fit_label(text, unfit[text])

    chosen = c2.selectbox(
        f"Dataset to score with the {kind}", list(datasets), key=key + "dataset", format_func=label
    )
    return name, datasets[chosen]


def fit_label(label: str, lacks: list[str]) -> str:
    """A dataset's label in a picker, saying which inputs of the prompt it lacks."""
    return label if not lacks else f"{label} (does not fit: no {', '.join(lacks)})"


def fitting_newest_first(prompt, datasets: list[Dataset]) -> tuple[list[Dataset], dict[str, list[str]]]:
    """The datasets holding every input of the prompt first, newest first, then the others; and what each lacks
    (by id)."""
    unfit = {d.id: missing_inputs(prompt, d.fields) for d in datasets}
    newest = sorted(datasets, key=lambda d: (d.created_at, d.version), reverse=True)
    return sorted(newest, key=lambda d: bool(unfit[d.id])), unfit


def _first_prompt(lib, kind: str, name: str) -> str:
    """The prompt whose inputs a panel's or cascade's datasets must hold (its members share a dimension)."""
    if kind == "panel":
        from geval_core.run.panel import get_panel

        return get_panel(lib, name).members[0]
    from geval_core.diagnostics.cascade import get_cascade

    return get_cascade(lib, name)["cheap"]
