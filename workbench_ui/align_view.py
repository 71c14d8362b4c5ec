"""The Align page's sections: disputed dev items, suggested edits, the candidate editor, dev comparisons and the
sealed test report. Every figure here is on the dev side unless the section says test (and records it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from geval_core.records import Dataset, Run
from geval_core.stats.kappa import nearest_point
from geval_core.types import Dimension, Example
from workbench_ui import model_work, run_plans, safe_text, state

K = "al_"
SUGGEST = "suggest"  # the task kind of a designer model's suggested edits
FIGURE_NAMES = {
    "spearman": "Spearman",
    "kendall": "Kendall τ-b",
    "pearson": "Pearson",
    "kappa_quadratic": "κ quadratic",
}


def start_side_run(lib, prompt, dataset: Dataset, ids: set[str], planned, side: str) -> str:
    """A run of the prompt with the page's judge on exactly these items of one side, planned like every run (a
    test-side use is recorded as it is) and scored by a worker of the library."""
    from geval_core.run.plan import RunScope, plan_run

    plan = plan_run(
        lib,
        prompt,
        dataset,
        scope=RunScope(side=side, item_ids=tuple(sorted(ids)), new_run=True),
        judge=planned,
    )
    return run_plans.start(lib, plan)


JUDGES = {
    "sidebar": "The sidebar's judge, for every prompt (differences are the prompts')",
    "pinned": "Each prompt's pinned judge (prompts pinned to other judges are flagged)",
}


def judge_picker(lib):
    """The judge every run on this page uses, chosen once: a function from a prompt to its planned judge."""
    from geval_core.run.plan import plan_judge

    pick = st.radio(
        "Judge for this page's runs", list(JUDGES), format_func=JUDGES.get, key=K + "judge", horizontal=True
    )

    def planned(prompt):
        choice = run_plans.sidebar_choice() if pick == "sidebar" else run_plans.pinned_choice(prompt)
        return plan_judge(prompt.dimension.judge, choice, lib)

    return planned


def disputed_section(lib, run: Run, prompt, human: str, dev: set[str]) -> list[dict[str, Any]]:
    """The dev items the judge and people disagree on most, grouped by the scale point people gave."""
    from geval_core.diagnostics.align import disputed_items

    st.header("Where the judge and people disagree (dev side)")
    limit = int(st.number_input("Items", min_value=5, max_value=200, value=20, step=5, key=K + "limit"))
    rows = disputed_items(lib, run.id, human, dev, limit)
    if not rows:
        st.info("No dev item has both a judge score and a human rating.")
        return rows
    for point in reversed(prompt.dimension.scale.points):
        group = [r for r in rows if r["point"] == point]
        if not group:
            continue
        st.subheader(f"People gave {point} ({len(group)} items)")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "item": r["item_id"],
                        "people": r["human"],
                        "judge": r["score"],
                        "gap": r["gap"],
                        "raters": ", ".join(
                            f"{k.rsplit('.', 1)[1]}: {v:g}" for k, v in sorted(r["raters"].items())
                        ),
                        "judge's distribution": ", ".join(
                            f"{p}: {q:.2f}" for p, q in sorted(r["distribution"].items())
                        ),
                    }
                    for r in group
                ]
            ),
            hide_index=True,
        )
    return rows


def suggest_section(lib, prompt, rows: list[dict[str, Any]]) -> None:
    """Ask the sidebar's judge, as designer, for a revised definition and anchors; accept or reject it."""
    from geval_core.diagnostics.suggest import SUGGEST_VERSION, suggestion_prompt

    st.header("Suggested edits")
    conn = state.sidebar().judge
    with st.expander(f"The prompt the designer model is sent ({SUGGEST_VERSION})"):
        st.code(suggestion_prompt(prompt.dimension, rows), language=None, wrap_lines=True)
    if model_work.going(lib, SUGGEST, prompt.id):  # a designer call takes minutes: said, with Cancel
        model_work.watch(lib, SUGGEST, prompt.id, "Writing suggested edits", K + "suggest_stop")
        return
    if st.session_state.get(K + "suggesting") == prompt.id:
        result, error = model_work.outcome(lib, SUGGEST, prompt.id)
        st.session_state.pop(K + "suggesting")
        if result is not None:
            st.session_state[K + "suggestion"] = result
        else:
            st.warning(
                "The suggestion was cancelled."
                if error == "stopped"
                else safe_text.md_escape(f"No suggestion: {error}")
            )
    if st.button(f"Ask {conn.provider}:{conn.model} for suggestions", key=K + "suggest", disabled=not rows):
        model_work.start(
            lib, SUGGEST, prompt.id, {"dimension": prompt.dimension.to_dict(), "rows": rows}, conn
        )
        st.session_state[K + "suggesting"] = prompt.id
        st.session_state.pop(K + "suggestion", None)
        st.rerun()
    found = st.session_state.get(K + "suggestion")
    if not found:
        return
    st.caption(safe_text.md_escape(f"Suggested by {found['model_version']} ({found['version']})."))
    if found["problem"]:
        st.warning(safe_text.md_escape(found["problem"]))
        st.code(found["raw"], language=None, wrap_lines=True)
        return
    st.code("\n".join(found["diff"]) or "(no change)", language="diff", wrap_lines=True)
    for reason in found["reasons"]:
        st.caption(
            safe_text.md_escape(f"{reason['change']} — items: {', '.join(reason['items']) or 'none named'}")
        )
    c1, c2 = st.columns(2)
    if c1.button("Accept into the candidate", key=K + "accept"):
        set_candidate(Dimension.from_dict(found["dimension"]))
        st.session_state.pop(K + "suggestion")
        st.rerun()
    if c2.button("Reject", key=K + "reject"):
        st.session_state.pop(K + "suggestion")
        st.rerun()


def set_candidate(dim: Dimension) -> None:
    """Fill the candidate editor with a dimension's definition, anchors and steps."""
    ss = st.session_state
    ss[K + "definition"] = dim.definition
    ss[K + "steps"] = "\n".join(dim.steps)
    for point, text in dim.anchors.items():
        ss[f"{K}anchor_{point}"] = text


def candidate_section(lib, base, dataset: Dataset, dev: set[str], human: str) -> None:
    """Edit the definition, anchors, steps and example items; freeze the candidate as a new version."""
    st.header("A candidate")
    ss = st.session_state
    if ss.get(K + "for") != base.id:
        ss[K + "for"] = base.id
        set_candidate(base.dimension)
    dim = base.dimension
    definition = st.text_area("Definition", key=K + "definition")
    anchors = {p: st.text_input(f"Scale point {p}", key=f"{K}anchor_{p}") for p in reversed(dim.scale.points)}
    steps = [
        s.strip()
        for s in st.text_area("Evaluation steps (one per line)", key=K + "steps").splitlines()
        if s.strip()
    ]
    people = lib.human_means(dataset.id, human)
    rated = [i for i in lib.dataset_items(dataset.id) if i.id in dev and i.id in people]
    chosen = st.multiselect(
        "Dev items to show as examples (left out of every evaluation of the candidate)",
        [i.id for i in rated],
        key=K + "examples",
        format_func=lambda i: f"{i} (people {people[i]:g})",
    )
    examples = tuple(
        Example(
            nearest_point(people[i.id], dim.scale),
            i.id,
            {f: i.fields.get(f, "") for f in dim.inputs},
            dataset.id,
        )
        for i in rated
        if i.id in set(chosen)
    )
    candidate = replace(dim, definition=definition, anchors=anchors, steps=tuple(steps), examples=examples)
    # Examples are left out of every evaluation: a candidate that shows them all leaves nothing to compare on.
    left = len(dev - {e.item_id for e in examples} - base.dimension.example_ids)
    if not left:
        st.error(
            "The examples take every dev item: nothing would be left to score the candidate on. Show fewer "
            "examples."
        )
    if st.button("Freeze the candidate", key=K + "freeze", type="primary", disabled=not left):
        result = lib.freeze(candidate, name=base.name)
        verb = "Frozen as" if result.created else "Identical content already frozen as"
        st.success(safe_text.md_escape(f"{verb} {result.prompt.label} · {result.prompt.id[:12]}"))


def comparison_table(report: dict[str, Any], corrected: bool = False) -> pd.DataFrame:
    """One row per figure: base, candidate, difference and its interval(s)."""

    def cell(interval: list[float] | None) -> str:
        return "withheld" if interval is None else f"{interval[0]:+.3f} to {interval[1]:+.3f}"

    rows = []
    for name, fig in report["figures"].items():
        row = {
            "figure": FIGURE_NAMES.get(name, name),
            "base": round(fig["first"], 3),
            "candidate": round(fig["second"], 3),
            "difference": round(fig["difference"], 3),
            "95% interval": cell(fig["interval"]),
        }
        if corrected:
            row[f"corrected ({report['corrected_level']:.2%})"] = cell(fig.get("corrected_interval"))
        rows.append(row)
    return pd.DataFrame(rows)
