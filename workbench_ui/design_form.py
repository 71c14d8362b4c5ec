"""The Design page's form state: load, read back as a Dimension, and the button actions.

Actions run as widget callbacks (before the script body), so they may set widget values; their
errors are kept in session state and shown as messages on the page.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

import pandas as pd
import streamlit as st

from geval_core.errors import GEvalError
from geval_core.prompts import content_hash, default_template
from geval_core.types import HAND_WRITTEN, Dimension, JudgeSettings, Scale
from workbench_ui import cached_reads, safe_text, sealing, state
from workbench_ui import design_extras as extras

K = "design_"
FIELDS = (
    "name",
    "definition",
    "smin",
    "smax",
    "inputs",
    "mode",
    "n",
    "temperature",
    "template",
    "steps",
    "reasoning_effort",
)
DEFAULT_EFFORT = "default"  # the picker's "not sent" choice ("none" is a real effort some models take)
SAVED = K + "saved"  # a copy that survives page switches (Streamlit drops unrendered widgets' state)
_NUMBERING = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*")
log = logging.getLogger("geval.app")


def ensure_defaults(lib) -> None:
    """Fill the form the first time (the autosaved form, else the person's newest own draft or prompt, else a
    blank form: the page offers the examples beside it), or restore it after a page switch."""
    ss = st.session_state
    saved = ss.get(SAVED)
    if saved is None and extras.restore(lib, FIELDS):
        ss[SAVED] = {field: ss.get(K + field) for field in FIELDS}
        _say("info", "Restored the form as you left it (autosaved). 'New dimension' starts a blank one.")
        return
    if saved is None:
        own = extras.newest_own(lib)
        if own is None:  # a newcomer: a blank form, never an example passed off as theirs
            set_form(extras.BLANK, None)
            return
        choice, name = own
        _load(lib, choice)
        _say(
            "info",
            f"Opened your newest work, {name}. 'Start from' loads another; 'New dimension' a blank one.",
        )
        return
    for field in FIELDS:
        if K + field not in ss:
            ss[K + field] = saved[field]


def remember(lib) -> None:
    """Copy the widget values to the copy that survives page switches, and autosave them to the library."""
    ss = st.session_state
    ss[SAVED] = {field: ss.get(K + field) for field in FIELDS}
    extras.autosave(lib, FIELDS)


def set_form(dim: Dimension, draft_id: int | None) -> None:
    """Put a dimension into the form widgets."""
    ss = st.session_state
    values = {
        "name": dim.name,
        "definition": dim.definition,
        "smin": dim.scale.min,
        "smax": dim.scale.max,
        "inputs": ", ".join(dim.inputs),
        "mode": dim.judge.mode,
        "n": dim.judge.n,
        # A template equal to the default for its inputs is stored as empty: it then follows input changes.
        "temperature": float(dim.judge.temperature),
        "template": "" if dim.template.strip() == default_template(dim.inputs).strip() else dim.template,
        "steps": steps_text(dim.steps),
        "reasoning_effort": dim.judge.reasoning_effort or DEFAULT_EFFORT,
    }
    for field, value in values.items():
        ss[K + field] = value
    ss[K + "anchors"] = dict(dim.anchors)
    ss[K + "judge_base"] = dim.judge
    # Steps a person wrote or edited are theirs: a generation asks before replacing them (only a model's own,
    # unedited steps count as generated).
    by_model = dim.steps_model != HAND_WRITTEN and not dim.steps_model.endswith(EDITED)
    ss[K + "steps_gen_text"] = values["steps"] if by_model else ""
    ss[K + "steps_model_gen"] = dim.steps_model
    ss[K + "draft_id"] = draft_id
    for key in ("frozen", "confirm_adopt"):
        ss.pop(K + key, None)
    ss[SAVED] = values
    ss[extras.AUTOSAVED] = extras.snapshot(FIELDS)  # a form just loaded is not an edit to autosave


def steps_text(steps) -> str:
    """Numbered steps, one per line, for the editor."""
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


def steps_list(text: str) -> tuple[str, ...]:
    """Editor text back to steps: one per non-empty line, numbering and bullets removed."""
    return tuple(_NUMBERING.sub("", line).strip() for line in text.splitlines() if line.strip())


EDITED = ", edited by hand"


def steps_model() -> str:
    """Who wrote the steps: the generating model, marked when a person edited them since."""
    ss = st.session_state
    model = ss.get(K + "steps_model_gen") or HAND_WRITTEN
    edited = steps_list(ss.get(K + "steps", "")) != steps_list(ss.get(K + "steps_gen_text", ""))
    if edited and model != HAND_WRITTEN and not model.endswith(EDITED):
        return f"{model}{EDITED}"
    return model


def dimension() -> Dimension:
    """The form as a Dimension (judge connection from the sidebar, decoding from the form)."""
    ss = st.session_state
    smin = int(ss[K + "smin"])
    smax = max(int(ss[K + "smax"]), smin + 1)
    anchors = {
        p: t.strip() for p, t in ss.get(K + "anchors", {}).items() if smin <= p <= smax and str(t).strip()
    }
    base = ss.get(K + "judge_base") or JudgeSettings()
    conn = state.sidebar().judge
    judge = replace(
        base,
        provider=conn.provider,
        model=conn.model,
        base_url=conn.base_url,
        mode=ss[K + "mode"],
        n=int(ss[K + "n"]),
        temperature=float(ss[K + "temperature"]),
        reasoning_effort=reasoning_effort(conn),
    )
    return Dimension(
        name=ss[K + "name"].strip(),
        definition=ss[K + "definition"],
        scale=Scale(smin, smax),
        anchors=anchors,
        inputs=tuple(f.strip() for f in ss[K + "inputs"].split(",") if f.strip()),
        steps=steps_list(ss[K + "steps"]),
        steps_model=steps_model(),
        template=ss[K + "template"] or "",
        judge=judge,
    )


def reasoning_effort(conn: JudgeSettings) -> str | None:
    """The form's reasoning effort when the sidebar's judge reasons (else None: never sent, never hashed)."""
    from geval_core.providers.registry import reasons

    effort = st.session_state.get(K + "reasoning_effort")
    if not reasons(conn) or effort in (None, DEFAULT_EFFORT):
        return None
    return effort


def act(fn, *args) -> None:
    """Run a button action; keep its error as a message instead of a traceback."""
    try:
        fn(*args)
    except GEvalError as exc:
        _say("error", str(exc))
    except Exception as exc:
        log.exception("design action failed")
        _say("error", f"Unexpected error ({type(exc).__name__}): {exc}")


def _say(level: str, text: str) -> None:
    st.session_state.setdefault(K + "messages", []).append((level, text))


def show_messages() -> None:
    """Show (once) what the last actions reported."""
    for level, text in st.session_state.pop(K + "messages", []):
        getattr(st, level)(safe_text.md_escape(text))


def load_choice(lib, pick: str) -> None:
    """Load 'draft:ID' or 'prompt:NAME@V' into the form, and say so."""
    _load(lib, pick)
    kind, _, ref = pick.partition(":")
    _say("info", f"Loaded {kind} {ref}.")


def _load(lib, pick: str) -> None:
    kind, _, ref = pick.partition(":")
    if kind == "draft":
        set_form(lib.get_draft(int(ref)), int(ref))
    else:
        set_form(lib.get_prompt(ref).dimension, None)


def new_dimension() -> None:
    """A blank form with the default template (nothing carried over from the form before)."""
    set_form(extras.BLANK, None)
    _say("info", "A blank dimension: name it, define it, describe every scale point and list the inputs.")


def duplicate() -> None:
    """The current form as a new dimension: saving makes a new draft, freezing a new prompt name."""
    dim = extras.duplicate(dimension())
    set_form(dim, None)
    _say("info", f"Duplicated as {dim.name!r}: rename it; saving creates a new draft.")


STEP_KEYS = ("steps", "steps_gen_text", "steps_model_gen")  # what a generation replaces, and an undo restores


def own_steps() -> bool:
    """Whether the editor holds steps a person wrote or changed (a generation would throw them away)."""
    ss = st.session_state
    text = ss.get(K + "steps", "")
    return bool(steps_list(text)) and steps_list(text) != steps_list(ss.get(K + "steps_gen_text", ""))


GENERATE = "steps"  # the task kind of a steps generation


def generation_key() -> str:
    """What a generation is for: the form without its steps (editing the steps box does not lose the task)."""
    from dataclasses import replace

    from geval_core.prompts import content_hash

    return content_hash(replace(dimension(), steps=()))


def generate(lib, confirmed: bool = False) -> None:
    """Start one steps-generation call with the sidebar judge as a task of the library (its progress shown, it can
    be cancelled); the steps replace the editor's when it ends (hand-edited steps only once confirmed)."""
    from workbench_ui import model_work

    ss = st.session_state
    if own_steps() and not confirmed:
        ss[K + "confirm_generate"] = True
        return
    ss.pop(K + "confirm_generate", None)
    key = generation_key()
    model_work.start(lib, GENERATE, key, {"dimension": dimension().to_dict()}, state.sidebar().judge)
    ss[K + "generating"] = key


def apply_generation(lib) -> None:
    """Before the steps box is drawn: a generation that ended puts its steps in the editor (once), or says why it
    gave none."""
    from workbench_ui import model_work

    ss = st.session_state
    key = ss.get(K + "generating")
    if key is None or model_work.going(lib, GENERATE, key):
        return
    result, error = model_work.outcome(lib, GENERATE, key)
    ss.pop(K + "generating")
    if result is None:
        _say(
            "warning",
            "Step generation cancelled: the steps are unchanged."
            if error == "stopped"
            else f"Step generation gave no steps: {error}",
        )
        return
    steps, model = result["steps"], result["model"]
    put_steps(lib, steps, model)
    _say("success", f"Generated {len(steps)} step{'s' if len(steps) != 1 else ''} with {model}.")


def put_steps(lib, steps, model: str) -> None:
    """A model's steps into the editor (the steps they replace kept for Undo) and into the draft being edited."""
    ss = st.session_state
    if steps_list(ss.get(K + "steps", "")):
        ss[K + "steps_before"] = {k: ss.get(K + k) for k in STEP_KEYS}
    ss[K + "steps"] = ss[K + "steps_gen_text"] = steps_text(steps)
    ss[K + "steps_model_gen"] = model
    if ss.get(K + "draft_id") is not None:
        lib.set_steps(ss[K + "draft_id"], list(steps), model)


def keep_own_steps() -> None:
    """The user chose to keep their steps: no generation."""
    st.session_state.pop(K + "confirm_generate", None)


def undo_generate(lib) -> None:
    """Put back the steps the last generation replaced (and who wrote them)."""
    ss = st.session_state
    before = ss.pop(K + "steps_before", None)
    if before is None:
        return
    for key, value in before.items():
        ss[K + key] = value
    if ss.get(K + "draft_id") is not None:
        lib.set_steps(ss[K + "draft_id"], list(steps_list(before["steps"] or "")), steps_model())
    _say("info", "Restored the steps from before the last generation.")


VARY = "steps_variation"  # the task kind of a step-variation check (the steps generated k times and compared)


def run_drift(lib, k: int) -> None:
    """Start k generations of the form's steps as a task of the library, keyed like Generate's (its progress shown,
    it can be cancelled, a reload finds it or its report)."""
    from workbench_ui import model_work

    spec = {"dimension": dimension().to_dict(), "k": k}
    model_work.start(lib, VARY, generation_key(), spec, state.sidebar().judge, calls=k)


def drift_outcome(lib):
    """(the form's latest step-variation report, or None; why its check ended without one, or None)."""
    from geval_core.prompts.steps import DriftReport
    from workbench_ui import model_work

    result, error = model_work.outcome(lib, VARY, generation_key())
    return (DriftReport(**result) if result else None), error


def adopt(lib, n: int, confirmed: bool = False) -> None:
    """Generation n of the form's step-variation report as the steps (hand-edited steps only once confirmed, as
    Generate asks)."""
    ss = st.session_state
    if own_steps() and not confirmed:
        ss[K + "confirm_adopt"] = n
        return
    ss.pop(K + "confirm_adopt", None)
    report, _ = drift_outcome(lib)
    if report is None or not 1 <= n <= len(report.steps):  # the form changed since: no longer its report
        _say("warning", "That step-variation report is not about this form any more: run it again.")
        return
    put_steps(lib, report.steps[n - 1], report.model_version)
    _say("success", f"Using generation {n}'s steps, written by {report.model_version}.")


def cancel_adopt() -> None:
    """The user chose to keep their steps: no generation adopted."""
    st.session_state.pop(K + "confirm_adopt", None)


def show_drift(lib, report) -> None:
    """The drift report: mean similarity, every pair, and each generation's steps with a button to use them."""
    st.metric("Mean similarity between generations (1 = identical)", safe_text.fmt(report.mean_similarity))
    st.caption(f"Generated by {safe_text.md_escape(report.model_version)}; difflib ratio of the step lists.")
    st.dataframe(
        pd.DataFrame(
            [
                {"generation A": p["a"] + 1, "generation B": p["b"] + 1, "similarity": p["similarity"]}
                for p in report.pairs
            ]
        ),
        hide_index=True,
    )
    asked = st.session_state.get(K + "confirm_adopt")
    for n, steps in enumerate(report.steps, 1):
        safe_text.show_text(f"Generation {n}", steps_text(steps))
        st.button(
            f"Use generation {n} as the steps", key=f"{K}drift_use_{n}", on_click=act, args=(adopt, lib, n)
        )
        if asked == n:
            st.warning(
                "The steps in the editor were written or edited by hand: using this generation replaces them "
                "(Undo restores them)."
            )
            c1, c2 = st.columns(2)
            c1.button(
                "Replace my steps", key=K + "drift_use_confirm", on_click=act, args=(adopt, lib, n, True)
            )
            c2.button("Keep my steps", key=K + "drift_use_cancel", on_click=cancel_adopt)
    for failure in report.failures:
        st.warning(safe_text.md_escape(failure))


def checks(lib, dim: Dimension) -> list:
    """The library's pre-freeze checks for this dimension, with the latest Test judge / `geval probe` result."""
    from geval_core.diagnostics.judge_probe import latest_probe
    from geval_core.providers.capabilities import check_dimension

    return check_dimension(dim, latest_probe(lib, dim.judge))


def save(lib) -> None:
    """Save (or update) the draft."""
    ss = st.session_state
    ss[K + "draft_id"] = lib.save_draft(dimension(), ss.get(K + "draft_id"))
    _say("success", f"Saved draft #{ss[K + 'draft_id']}.")


def freeze(lib) -> None:
    """Freeze the form into an immutable prompt version."""
    result = lib.freeze(dimension())
    # Keyed by the form's content: the message goes away as soon as the form changes.
    st.session_state[K + "frozen"] = {
        "label": result.prompt.label,
        "hash": result.prompt.id,
        "created": result.created,
        "warnings": list(result.warnings),
        "form": content_hash(dimension()),
    }
    # The Score and Rate pages open on the prompt just frozen, not the first by name.
    state.follow("score_prompt", result.prompt.label)
    state.follow("rate_prompt", result.prompt.id)


def preview_item(lib, inputs: tuple[str, ...]) -> dict[str, str]:
    """The first sample item that has every input field, else placeholders."""
    try:
        dataset = lib.get_dataset("sample")
        items = sealing.dev_items(
            lib, dataset.id, cached_reads.dataset_items(dataset.id)
        )  # never a test item
        for item in items:  # cached: not read again on every keystroke
            if all(f in item.fields for f in inputs):
                return item.fields
    except GEvalError:
        pass
    return {f: f"[the item's {f} goes here]" for f in inputs}
