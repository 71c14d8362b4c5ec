"""Design page: write one dimension, preview its prompt, generate steps once, check and freeze."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from geval_core import prompts
from geval_core.prompts import content_hash
from geval_core.types import MODES, REASONING_EFFORTS, Dimension, JudgeSettings, bounds_of, steps_origin
from workbench_ui import archive_view, next_link, safe_text, stability_view, start_path, state
from workbench_ui import design_extras as extras
from workbench_ui import design_form as form

K = form.K


def start_from_picker(lib) -> None:
    """Load a draft or a frozen prompt into the form (through a callback, before widgets exist)."""
    options = {"": "(keep the current form)"}
    for row in archive_view.visible(lib, "draft", lib.list_drafts()):
        options[f"draft:{row['id']}"] = f"draft #{row['id']}: {row['name']}"
    for row in lib.list_prompts():
        # The hash beside the label: version numbers count within this library, the hash is the identity.
        options[f"prompt:{row['name']}@{row['version']}"] = (
            f"prompt {row['name']}@{row['version']} · {row['id'][:12]}"
        )
    cols = st.columns([4, 1])
    pick = cols[0].selectbox("Start from", list(options), format_func=options.__getitem__, key=K + "pick")
    cols[1].button(
        "Load",
        key=K + "load",
        on_click=form.act,
        args=(form.load_choice, lib, pick),
        disabled=not pick,
        width="stretch",
    )
    c1, c2, _ = st.columns([1, 1, 2])
    c1.button(
        "New dimension",
        key=K + "new",
        on_click=form.act,
        args=(form.new_dimension,),
        width="stretch",
        help="A blank form with the default template.",
    )
    c2.button(
        "Duplicate as new",
        key=K + "duplicate",
        on_click=form.act,
        args=(form.duplicate,),
        width="stretch",
        help="This form under a new name: a new draft and, once frozen, a new prompt.",
    )


def is_blank() -> bool:
    """Whether nothing is written in the form yet (no name, definition or steps)."""
    ss = st.session_state
    return not any(str(ss.get(K + f) or "").strip() for f in ("name", "definition", "steps"))


def blank_choice(lib) -> None:
    """On a blank form: say it is blank, and offer each shipped example as a start instead."""
    if not is_blank():
        return
    shipped = start_path.examples(lib)
    st.info(
        "A blank form: name one quality dimension, define it, describe every scale point and list the inputs the "
        "judge reads."
        + (
            " Or start from an example (a copy to edit; the example itself stays as shipped):"
            if shipped
            else ""
        )
    )
    for col, label in zip(st.columns(max(len(shipped), 1)), shipped, strict=False):
        col.button(
            f"Example: {label.split('@')[0]}",
            key=f"{K}example_{label}",
            on_click=form.act,
            args=(form.load_choice, lib, f"prompt:{label}"),
            width="stretch",
        )


def anchors_editor(smin: int, smax: int) -> None:
    """One row per scale point; the key includes the scale so a new scale gets fresh rows."""
    anchors = st.session_state.get(K + "anchors", {})
    points = list(range(smax, smin - 1, -1))
    frame = pd.DataFrame({"rating": points, "description": [anchors.get(p, "") for p in points]})
    edited = st.data_editor(
        frame,
        key=f"{K}anchors_{smin}_{smax}",
        hide_index=True,
        num_rows="fixed",
        disabled=["rating"],
        width="stretch",
        column_config={"description": st.column_config.TextColumn(width="large")},
    )
    st.session_state[K + "anchors"] = {
        **anchors,
        **{int(r): str(d or "") for r, d in zip(edited["rating"], edited["description"], strict=True)},
    }


def definition_inputs() -> tuple[int, int]:
    """Name, definition, scale, inputs and decoding settings; returns the scale ends."""
    st.text_input("Name", key=K + "name", help="The dimension name; the form ends on it ('- Coherence:').")
    st.text_area("Definition", key=K + "definition", height=110)
    c1, c2 = st.columns(2)
    smin = int(c1.number_input("Scale minimum", min_value=0, max_value=10, step=1, key=K + "smin"))
    smax = int(c2.number_input("Scale maximum", min_value=1, max_value=100, step=1, key=K + "smax"))
    if smin >= smax:
        st.warning("The scale maximum must be above the minimum.")
        smax = smin + 1
    st.caption("Anchors: what every scale point means")
    anchors_editor(smin, smax)
    st.text_input(
        "Input fields (comma-separated)",
        key=K + "inputs",
        help="The fields each item gives the judge, e.g. document, summary.",
    )
    inputs = tuple(f.strip() for f in st.session_state[K + "inputs"].split(",") if f.strip())
    mismatch = extras.template_mismatch(st.session_state.get(K + "template") or "", inputs)
    if mismatch:  # said here, where the inputs changed, with the fix one click away
        st.warning(safe_text.md_escape(mismatch))
        st.button("Use the default template", key=K + "reset_template", on_click=extras.reset_template)
    judge_inputs()
    return smin, smax


def judge_inputs() -> None:
    """Scoring mode, n and temperature: part of the frozen metric."""
    conn = state.sidebar().judge
    st.caption(
        f"Judge (from the sidebar): {safe_text.md_escape(conn.provider + ':' + conn.model)}. A server URL is "
        "never frozen: every run sends to the server named then (the sidebar, or --base-url)."
    )
    c1, c2, c3 = st.columns(3)
    c1.selectbox("Scoring mode", list(MODES), key=K + "mode")
    n, temperature = bounds_of(JudgeSettings, "n"), bounds_of(JudgeSettings, "temperature")
    c2.number_input("Replies n", min_value=n.min, max_value=n.max, step=1, key=K + "n", help=n.help)
    c3.number_input(
        "Temperature",
        min_value=float(temperature.min),
        max_value=float(temperature.max),
        step=0.1,
        key=K + "temperature",
        help=temperature.help,
    )
    reasoning_input(conn)
    with st.expander("Custom template (optional)"):
        st.text_area(
            "Template ({{name}} placeholders; empty = the default G-Eval template)",
            key=K + "template",
            height=200,
        )


def reasoning_input(conn: JudgeSettings) -> None:
    """Reasoning effort, shown only when the sidebar's judge is a reasoning model (part of the metric)."""
    from geval_core.providers.registry import reasons

    if not reasons(conn):
        return
    st.selectbox(
        "Reasoning effort",
        [form.DEFAULT_EFFORT, *REASONING_EFFORTS],
        key=K + "reasoning_effort",
        format_func=lambda e: "the model's default (not sent)" if e == form.DEFAULT_EFFORT else e,
        help="How long the model reasons before it rates; part of the frozen metric (hashed). It "
        "also sizes the reply budget, since reasoning tokens come out of it.",
    )


def preview(lib, dim: Dimension) -> None:
    """The rendered judge prompt on a sample item, as the judge will see it."""
    st.subheader("Prompt preview")
    item = form.preview_item(lib, dim.inputs)
    st.caption("Rendered on the first sample item whose fields match the inputs (item text shown verbatim).")
    st.code(prompts.render(dim, item), language=None, wrap_lines=True, height=520)


def steps_section(lib) -> None:
    """Generate steps with the sidebar judge, edit them, check their drift."""
    st.subheader("Evaluation steps")
    conn = state.sidebar().judge
    generating = st.session_state.get(K + "generating")
    if generating is not None:
        from workbench_ui import model_work

        model_work.watch(lib, form.GENERATE, generating, "Writing the evaluation steps", K + "generate_stop")
    # A row of its own: in a narrow column the label was cut ("Generate evaluation s…").
    st.button(
        "Generate evaluation steps",
        key=K + "generate",
        on_click=form.act,
        args=(form.generate, lib),
        type="primary",
    )
    st.caption(
        f"One call to {safe_text.md_escape(conn.provider + ':' + conn.model)}. Regenerating replaces the steps "
        "(yours only after you confirm; the replaced steps can be restored)."
    )
    if st.session_state.get(K + "confirm_generate"):
        st.warning("The steps below were written or edited by hand: generating replaces them.")
        c1, c2 = st.columns(2)
        c1.button(
            "Replace my steps", key=K + "generate_confirm", on_click=form.act, args=(form.generate, lib, True)
        )
        c2.button("Keep my steps", key=K + "generate_cancel", on_click=form.keep_own_steps)
    if st.session_state.get(K + "steps_before"):
        st.button(
            "Undo: restore the steps from before the last generation",
            key=K + "generate_undo",
            on_click=form.act,
            args=(form.undo_generate, lib),
        )
    st.text_area("Steps (one per line; edit freely before freezing)", key=K + "steps", height=160)
    st.caption(f"Steps {safe_text.md_escape(steps_origin(form.steps_model()))}.")
    variation_section(lib)


def variation_section(lib) -> None:
    """Step variation: the steps generated k times as a task (shown, cancellable and found again like Generate's),
    the report open once there is one, any generation usable as the steps."""
    from workbench_ui import model_work

    key = form.generation_key()
    going = model_work.going(lib, form.VARY, key)
    if going:  # outside the section: a click on its button must not hide the progress in a closed expander
        model_work.watch(lib, form.VARY, key, "Generating the steps k times to compare", K + "drift_stop")
    report, error = (None, None) if going else form.drift_outcome(lib)
    with st.expander(
        "Step variation: how different are steps generated k times?", expanded=report is not None
    ):
        k = st.number_input("k", min_value=2, max_value=10, value=3, key=K + "drift_k")
        st.button(
            "Generate k times and compare",
            key=K + "drift",
            on_click=form.act,
            args=(form.run_drift, lib, int(k)),
            disabled=going,
        )
        if error:
            st.warning(
                "Step variation cancelled."
                if error == "stopped"
                else f"Step variation gave no report: {safe_text.md_escape(error)}"
            )
        if report is not None:
            form.show_drift(lib, report)


def checks_section(lib, dim: Dimension) -> bool:
    """Pre-freeze checks as messages (the judge's latest test included); True when nothing blocks freezing."""
    st.subheader("Checks before freezing")
    if is_blank():  # nothing written yet: a list of red errors would greet a newcomer for doing nothing wrong
        st.caption("The checks run once the form has a name, a definition or steps.")
        return False
    found = form.checks(lib, dim)
    stability = stability_view.current_check(lib, dim)
    for check in [*found, *([stability] if stability else [])]:
        text = f"{safe_text.md_escape(check.field)}: {safe_text.md_escape(check.message)}"
        {"error": st.error, "warning": st.warning}.get(check.level, st.info)(text)
    if not found:
        st.success("All checks pass.")
    return not any(c.level == "error" for c in found)


def actions(lib, dim: Dimension, ok: bool) -> None:
    """Save the draft; freeze it into an immutable version and show the hash."""
    c1, c2 = st.columns(2)
    c1.button("Save draft", key=K + "save", on_click=form.act, args=(form.save, lib))
    c2.button(
        "Freeze",
        key=K + "freeze",
        type="primary",
        disabled=not ok,
        on_click=form.act,
        args=(form.freeze, lib),
    )
    frozen = st.session_state.get(K + "frozen")
    if frozen and frozen.get("form") == content_hash(dim):  # about this very form, not an earlier one
        verb = "Frozen as" if frozen["created"] else "Identical content already frozen as"
        st.success(
            f"{verb} {safe_text.md_escape(frozen['label'])} · {frozen['hash'][:12]}. Content hash (the "
            "prompt's identity; the name and version number are labels within this library):"
        )
        st.code(frozen["hash"], language=None, wrap_lines=True)
        for warning in frozen["warnings"]:
            st.warning(safe_text.md_escape(warning))
        next_link.show(lib)


def main() -> None:
    """The Design page."""
    st.title("Design a dimension")
    lib = state.library()
    form.ensure_defaults(lib)
    start_from_picker(lib)
    blank_choice(lib)
    form.apply_generation(lib)  # a generation that ended: its steps (or why none) before anything is drawn
    form.show_messages()
    left, right = st.columns([1, 1], gap="large")
    with left:
        definition_inputs()
        steps_section(lib)
    dim = form.dimension()
    with right:
        preview(lib, dim)
        stability_view.panel(lib, dim)
        ok = checks_section(lib, dim)
        actions(lib, dim, ok)
    form.remember(lib)
    archive_view.panel(
        lib, "draft", {str(r["id"]): f"draft #{r['id']}: {r['name']}" for r in lib.list_drafts()}
    )


safe_text.guarded(main)
