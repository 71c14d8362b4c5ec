"""Library page: frozen prompts and versions, a side-by-side diff, export (with a run's agreement when chosen)
and the production snippet, import."""

from __future__ import annotations

import difflib
import json

import pandas as pd
import streamlit as st

from geval_core.errors import GEvalError
from geval_core.files.prompt_files import (
    agreement_summary,
    export_filename,
    export_prompt,
    production_snippet,
)
from geval_core.files.tool_exports import EXPORT_FORMATS, FORMATS, tool_filename
from geval_core.providers.exports import export_for_tool
from geval_core.types import FrozenPrompt
from prompt_library.verify import summary_line, verify_library
from workbench_ui import agree, cached_reads, drift_view, safe_text, start_path, state

K = "lib_"
UNVERIFIED = (
    "Unverified metadata: the name, version number, creation time, 'steps by' and attached agreement are "
    "labels outside the content hash. Version numbers count within this library; the hash is the "
    "prompt's identity across libraries."
)
READINGS = {
    "group": "group-level (per group, averaged; needs groups on every item)",
    "dataset": "dataset-level (all items pooled)",
}


def prompts_table(lib) -> list[dict]:
    """Every frozen version, one row each."""
    rows = lib.list_prompts()
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "prompt": r["label"],
                    "dimension": r["dimension"],
                    "scale": r["scale"],
                    "inputs": ", ".join(r["inputs"]),
                    "judge": r["judge"],
                    "mode": r["mode"],
                    "steps by": r["steps_model"],
                    "created": r["created_at"],
                    "hash": r["id"][:12],
                }
                for r in rows
            ]
        ),
        hide_index=True,
    )
    st.caption(UNVERIFIED)
    return rows


def sections(prompt: FrozenPrompt) -> dict[str, str]:
    """The parts of a version the diff compares, as text."""
    dim, judge = prompt.dimension, prompt.dimension.judge
    return {
        "Definition": dim.definition,
        "Anchors": "\n".join(f"{p}: {dim.anchors.get(p, '')}" for p in reversed(dim.scale.points)),
        "Steps": "\n".join(f"{i}. {s}" for i, s in enumerate(dim.steps, 1))
        + f"\n(written by: {dim.steps_model})",
        "Settings": "\n".join(
            [
                f"scale: {dim.scale}",
                f"inputs: {', '.join(dim.inputs)}",
                f"judge: {judge.judge_id}",
                f"mode: {judge.mode}",
                f"n: {judge.n}",
                f"temperature: {judge.temperature}",
                f"top_logprobs: {judge.top_logprobs}",
                f"max_tokens: {judge.max_tokens}",
                f"seed: {judge.seed}",
                f"hash: {prompt.id}",
            ]
        ),
    }


def diff_view(a: FrozenPrompt, b: FrozenPrompt) -> None:
    """Side by side, section by section; changed sections also as a unified diff."""
    left, right = sections(a), sections(b)
    for title in left:
        same = left[title] == right[title]
        st.markdown(f"**{title}**" + (" — unchanged" if same else " — changed"))
        c1, c2 = st.columns(2)
        c1.code(left[title], language=None, wrap_lines=True)
        c2.code(right[title], language=None, wrap_lines=True)
        if not same:
            diff = difflib.unified_diff(
                left[title].splitlines(), right[title].splitlines(), a.label, b.label, lineterm=""
            )
            st.code("\n".join(diff), language="diff", wrap_lines=True)


def versions_section(lib, rows: list[dict]) -> None:
    """Pick a name, see its versions, compare two of them."""
    names = sorted({r["name"] for r in rows})
    state.keep_choice(K + "name", names)
    if K + "name" not in st.session_state:
        newest = start_path.newest_own_prompt(lib)
        if newest in names:
            st.session_state[K + "name"] = newest  # the person's own, not an example
    name = state.kept(K + "name", st.selectbox("Prompt", names, key=K + "name"))
    versions = lib.prompt_versions(name)
    chosen = compare_section(versions) if len(versions) > 1 else single_version(versions[0])
    export_section(lib, chosen)
    drift_view.section(lib, chosen)


def single_version(prompt: FrozenPrompt) -> FrozenPrompt:
    """One version: its content once, no comparison of identical text (there is nothing to compare yet)."""
    st.caption(
        safe_text.md_escape(
            f"{prompt.label} · {prompt.id[:12]} is the only version of {prompt.name}: freezing a changed form under "
            "this name adds a version to compare it with."
        )
    )
    with st.expander(f"Content of {prompt.label}"):
        for title, text in sections(prompt).items():
            st.markdown(f"**{title}**")
            st.code(text, language=None, wrap_lines=True)
    return prompt


def compare_section(versions: list[FrozenPrompt]) -> FrozenPrompt:
    """Pick two versions and see what changed, side by side; the version B (exported below)."""
    labels = [v.label for v in versions]
    by_label = {v.label: v for v in versions}
    name = versions[0].name
    c1, c2 = st.columns(2)
    shown = lambda label: f"{label} · {by_label[label].id[:12]}"  # noqa: E731 -- the hash beside every label
    a = c1.selectbox("Version A", labels, index=0, key=f"{K}a_{name}", format_func=shown)
    b = c2.selectbox("Version B", labels, index=len(labels) - 1, key=f"{K}b_{name}", format_func=shown)
    st.subheader("Compare versions")
    if a == b:
        st.caption("Pick two different versions to see what changed.")
    else:
        diff_view(by_label[a], by_label[b])
    return by_label[b]


def export_section(lib, prompt: FrozenPrompt) -> None:
    """Download the hash-checked export (optionally with a run's agreement) and show the production snippet."""
    st.subheader(f"Export {safe_text.md_escape(prompt.label)} · {prompt.id[:12]}")
    st.caption(
        "The file carries the content hash; no server URL (whoever scores with it names their own). "
        + UNVERIFIED
    )
    fmt = st.radio(
        "Format",
        FORMATS,
        format_func=lambda fmt: EXPORT_FORMATS[fmt].label,
        key=K + "format",
        horizontal=True,
    )
    if fmt != "json":
        scale = prompt.dimension.scale
        pass_at = st.number_input(
            f"Pass at: a rating on the {scale} scale (empty: no pass rule)",
            value=None,
            min_value=float(scale.min),
            max_value=float(scale.max),
            step=0.5,
            key=f"{K}pass_at_{prompt.id[:12]}",
        )  # per version: scales differ
        text = export_for_tool(prompt, fmt, pass_at=pass_at)
        st.download_button(
            f"Download {EXPORT_FORMATS[fmt].label}",
            text,
            file_name=tool_filename(prompt, fmt),
            mime=EXPORT_FORMATS[fmt].mime,
            key=K + "download",
            on_click=_exported,
            args=(prompt.id,),
        )
        st.caption(
            "What the file holds (its first lines say which frozen prompt it came from and what the tool "
            "cannot reproduce):"
        )
        language = {"deepeval": "python", "promptfoo": "yaml", "inspect": "python"}.get(fmt, "json")
        st.code(text, language=language, wrap_lines=True, height=360)
        return
    agreement = agreement_choice(lib, prompt)
    exported = export_prompt(prompt, agreement)
    st.download_button(
        "Download export (JSON)",
        json.dumps(exported, indent=2, ensure_ascii=False),
        file_name=export_filename(prompt),
        mime="application/json",
        key=K + "download",
        on_click=_exported,
        args=(prompt.id,),
    )
    st.caption("Production use, without the workbench:")
    st.code(production_snippet(prompt), language="python")


def agreement_choice(lib, prompt: FrozenPrompt) -> dict | None:
    """Optionally attach the agreement measured on a finished run of this very version (run_agreement)."""
    runs = {r.id: (r, humans) for r, humans in agree.export_runs(lib, prompt.id)}
    if not runs:
        st.caption(
            "No finished run of this version on a dataset with human ratings: the export carries no "
            "agreement."
        )
        return None
    if not st.checkbox("Attach agreement measured on a run", key=f"{K}attach_{prompt.id}"):
        return None
    c1, c2 = st.columns(2)
    run_id = c1.selectbox(
        "Run of this version",
        list(runs),
        format_func=lambda r: cached_reads.run_label(runs[r][0]),
        key=f"{K}agree_run_{prompt.id}",
    )
    run, humans = runs[run_id]
    default = cached_reads.chosen_human(humans, prompt)
    field = c2.selectbox(
        "Human rating", humans, index=humans.index(default) if default else 0, key=f"{K}agree_human_{run_id}"
    )
    grouped = all(i.group for i in cached_reads.dataset_items(run.dataset_id))
    reading = st.radio(
        "Reading to attach",
        list(READINGS) if grouped else ["dataset"],
        format_func=READINGS.get,
        horizontal=True,
        key=f"{K}agree_reading_{prompt.id}",
    )
    if not grouped:
        st.caption(agree.NO_GROUPS)
    try:
        result = agree.export_agreement(run, field, pooled=reading == "dataset")
    except GEvalError as exc:  # e.g. no scored item has this rating: say so, export without agreement
        safe_text.show_error(exc)
        st.caption("The export below carries no agreement.")
        return None
    attached_figures(result)
    return result


def attached_figures(result: dict) -> None:
    """The figures the export will carry, as measured."""
    cols = st.columns(4)
    cols[0].metric("Spearman", safe_text.fmt(result.get("spearman")))
    cols[1].metric("Kendall τ-b", safe_text.fmt(result.get("kendall")))
    cols[2].metric("Tie rate (judge)", safe_text.fmt(result.get("tie_rate")))
    cols[3].metric("Items", safe_text.fmt(result.get("items")))
    reading = result.get("reading")
    how = (
        f"group-level: per group, averaged over {result.get('groups')} groups "
        f"({result.get('groups_skipped')} skipped: constant or too small)"
        if reading == "group"
        else "dataset-level: all items pooled"
    )
    st.caption(
        safe_text.md_escape(
            f"Reading: {reading} ({how}). Dataset: {result.get('dataset')}; human rating: "
            f"{result.get('human')}; run: {result.get('run')}; judge model: "
            f"{result.get('judge_model') or 'not reported'}."
        )
    )
    raters_figures(result)


def raters_figures(result: dict) -> None:
    """The raters' own agreement the export carries beside the judge's (the goal step 7 names), or why none."""
    raters = result.get("raters")
    if not isinstance(raters, dict):
        st.caption(
            "No raters' own agreement attached: the dataset has no per-rater ratings (NAME.0, NAME.1, ...) of "
            "this rating to compare the judge with."
        )
        return
    cols = st.columns(2)
    for col, (figure, label) in zip(
        cols, (("spearman", "Spearman"), ("kappa_quadratic", "quadratic κ")), strict=True
    ):
        span = raters.get(figure) or {}
        col.metric(f"Raters' own {label} (mean)", safe_text.fmt(span.get("mean")))
    summary = agreement_summary(result)
    st.caption(safe_text.md_escape(summary[:1].upper() + summary[1:] + "."))


def import_section(lib) -> None:
    """Upload an export: its hash is checked, then it is frozen (identical content is reused)."""
    st.subheader("Import a prompt export")
    file = st.file_uploader("Prompt export (.json)", type=["json"], key=K + "upload")
    if file is None:
        return
    try:
        data = json.loads(file.getvalue().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        st.error(safe_text.md_escape(f"{file.name} is not a JSON file: {exc}"))
        return
    if not st.button("Import", type="primary", key=K + "import"):
        return
    result = lib.import_prompt(data)
    for warning in result.warnings:  # a server URL in the file, agreement failing its own hash, a bad name
        st.warning(safe_text.md_escape(warning))
    st.success(safe_text.md_escape(result.note[:1].upper() + result.note[1:]))
    if result.agreement is not None:
        st.info(safe_text.md_escape(f"Attached agreement: {agreement_summary(result.agreement)}."))
    st.code(result.prompt.id, language=None, wrap_lines=True)


def verify_section(lib) -> None:
    """The `geval verify` check: every hash recomputed, every protection trigger looked up."""
    st.subheader("Integrity")
    for warning in getattr(lib, "integrity_warnings", []):
        st.warning(safe_text.md_escape(f"When this library was opened: {warning}"))
    if not st.button("Verify library", key=K + "verify"):
        st.caption(
            "Recomputes the hash of every prompt, dataset version and cache entry and checks the triggers "
            "that keep frozen rows unchanged (the same check as `geval verify`)."
        )
        return
    report = verify_library(lib)
    st.caption(safe_text.md_escape(summary_line(report)))
    if report["ok"]:
        st.success("Every hash matches its content and every protection trigger is in place.")
        return
    st.error(
        safe_text.md_escape(
            f"{len(report['problems'])} problems: the library file was changed outside the workbench."
        )
    )
    st.code("\n".join(p["text"] for p in report["problems"]), language=None, wrap_lines=True)


def _exported(prompt_id: str) -> None:
    """Download callback: the Start page's last step is done for this prompt."""
    state.remember(start_path.EXPORTED, prompt_id)


def main() -> None:
    """The Library page."""
    st.title("Library")
    lib = state.library()
    top, bottom = st.container(), st.container()
    with bottom:  # runs first, so an imported version is already in the table drawn above it
        safe_text.guarded(lambda: import_section(lib))
        safe_text.guarded(lambda: verify_section(lib))
    with top:
        rows = prompts_table(lib)
        if rows:
            versions_section(lib, rows)


safe_text.guarded(main)
