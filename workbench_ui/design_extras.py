"""The Design form's newcomer paths: a blank dimension, a duplicate, the template reset, and the autosave
that brings the form back after a browser reload (a new session)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import streamlit as st

from geval_core.prompts import DIMENSION_FIELDS, placeholders
from geval_core.types import Dimension, JudgeSettings, Scale

K = "design_"
AUTOSAVE = "design_autosave"  # library setting: the form as last edited, restored by a new session
AUTOSAVED = K + "autosaved"  # session copy of what the setting holds, so unchanged forms are not written
EXTRA = ("draft_id", "steps_model_gen", "steps_gen_text")
OPTIONAL = {"reasoning_effort": "default"}  # fields newer than some autosaves: their default when missing
BLANK = Dimension(name="", definition="", scale=Scale(1, 5), inputs=())


def snapshot(fields: tuple[str, ...]) -> dict[str, Any]:
    """The form's values as JSON-ready data (anchors keyed by text, the judge settings as a dict)."""
    ss = st.session_state
    base = ss.get(K + "judge_base")
    return {
        **{f: ss.get(K + f) for f in fields},
        **{e: ss.get(K + e) for e in EXTRA},
        "anchors": {str(p): t for p, t in (ss.get(K + "anchors") or {}).items()},
        "judge_base": asdict(base) if isinstance(base, JudgeSettings) else None,
    }


def autosave(lib, fields: tuple[str, ...]) -> None:
    """Store the form in the library when it changed since it was loaded or last stored."""
    data = snapshot(fields)
    if data != st.session_state.get(AUTOSAVED):
        lib.set_setting(AUTOSAVE, data)
        st.session_state[AUTOSAVED] = data


def restore(lib, fields: tuple[str, ...]) -> bool:
    """Put the autosaved form back (a browser reload starts a new session); False when there is none, or it is
    blank (the person's newest own work, or the examples, are a better start than an empty form)."""
    data = lib.get_setting(AUTOSAVE)
    if not isinstance(data, dict) or any(f not in data for f in fields if f not in OPTIONAL):
        return False
    if not any(str(data.get(f) or "").strip() for f in ("name", "definition", "steps")):
        return False
    ss = st.session_state
    for name in (*fields, *EXTRA):
        ss[K + name] = data.get(name, OPTIONAL.get(name))
    ss[K + "anchors"] = {int(p): t for p, t in (data.get("anchors") or {}).items()}
    judge = data.get("judge_base")
    ss[K + "judge_base"] = JudgeSettings(**judge) if isinstance(judge, dict) else None
    ss[AUTOSAVED] = data
    return True


def newest_own(lib) -> tuple[str, str] | None:
    """The person's newest own work as ('draft:ID' or 'prompt:NAME@V', how to name it): the latest saved draft
    (archived ones left out) or frozen prompt, the shipped examples never; None for a newcomer."""
    from workbench_ui import archive_view
    from workbench_ui.start_path import own_prompts

    # (time, draft before prompt at the same second: a draft is the editable one, choice, name)
    found = [
        (d["updated_at"], 1, f"draft:{d['id']}", f"draft #{d['id']}: {d['name']}")
        for d in archive_view.visible(lib, "draft", lib.list_drafts())
    ]
    found += [
        (p["created_at"], 0, f"prompt:{p['name']}@{p['version']}", f"prompt {p['name']}@{p['version']}")
        for p in own_prompts(lib)
    ]
    if not found:
        return None
    _, _, choice, name = max(found)
    return choice, name


def duplicate(dimension: Dimension) -> Dimension:
    """The form as a new dimension: a new name, so saving makes a new draft and freezing a new prompt."""
    return replace(dimension, name=f"{dimension.name} copy".strip())


def template_mismatch(template: str, inputs: tuple[str, ...]) -> str | None:
    """Why a custom template does not fit the inputs (an input it never shows, a placeholder no input fills)."""
    if not template.strip():
        return None
    names = placeholders(template)
    missing = [f for f in inputs if f not in names]
    unknown = [n for n in names if n not in DIMENSION_FIELDS and n not in inputs]
    if not missing and not unknown:
        return None
    parts = []
    if missing:
        parts.append(f"never shows {', '.join(missing)}")
    if unknown:
        parts.append(f"has placeholders no input fills ({', '.join(unknown)})")
    return (
        "The custom template " + " and ".join(parts) + ". Reset it to the default template, which follows "
        "the inputs, or edit it under 'Custom template'."
    )


def reset_template() -> None:
    """Button callback: back to the default template (empty box), which follows the input fields."""
    st.session_state[K + "template"] = ""
