"""The Agreement page's raters panel: alpha among people, the human ceiling beside the judge, item spread."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from geval_core.records import Run
from geval_core.stats.raters import base_name, rater_keys
from geval_core.types import Scale
from workbench_ui import agree, cached_reads, safe_text, sealing, state

K = "ag_raters_"
CEILING = {
    "spearman": "Spearman",
    "kendall": "Kendall τ-b",
    "pearson": "Pearson",
    "kappa_quadratic": "κ quadratic",
}


@st.cache_data(show_spinner="Measuring the raters…", max_entries=16)
def _report(
    path: str,
    dataset_id: str,
    run_id: str,
    version: tuple[int, int, str],
    human: str,
    scale: tuple[int, int],
    grouped: bool,
    bootstrap: int,
    scope_key: str,
) -> dict[str, Any]:
    from geval_core.stats.stored import dataset_raters

    return dataset_raters(
        sealing.scoped(state.library()), dataset_id, human, Scale(*scale), bootstrap, 0, run_id, grouped
    )


def report(
    run: Run, dataset_id: str, human: str, scale: Scale, grouped: bool, bootstrap: int
) -> dict[str, Any]:
    """geval_core.stats.stored.dataset_raters beside a run (cached per run_state and options)."""
    return _report(
        os.path.abspath(state.sidebar().db_path),
        dataset_id,
        run.id,
        cached_reads.run_state(run),
        human,
        (scale.min, scale.max),
        grouped,
        bootstrap,
        sealing.cache_key(),
    )


def rated_versions(lib, run: Run, human: str) -> dict[str, str]:
    """Versions of the run's dataset whose items carry per-rater ratings of `human` (id -> label), latest first."""
    name = lib.get_dataset(run.dataset_id).name
    found = [d for d in lib.list_datasets() if d.name == name and rater_keys(d.human, human)]
    return {d.id: d.label for d in sorted(found, key=lambda d: -d.version)}


def alpha_metrics(result: dict[str, Any]) -> None:
    """Alpha (three levels) with intervals, and the counts that say what it rests on."""
    c = st.columns(6)
    for col, metric in zip(c, ("nominal", "ordinal", "interval"), strict=False):
        key = f"alpha_{metric}"
        ci = (result.get("ci") or {}).get(key) or [None, None]
        col.metric(
            f"α {metric}",
            safe_text.fmt(result[key]),
            help=None
            if ci[0] is None
            else f"95% interval {ci[0]:.3f} to {ci[1]:.3f} "
            f"({result.get('ci_resampled') or 'items'} resampled)",
        )
    c[3].metric("Raters", result["raters"])
    c[4].metric("Items with 2+ ratings", result["items"])
    c[5].metric("Pairable values", result["pairable_values"])


def with_names(key: str, names: list[str]) -> str:
    """'coherence.1' -> 'coherence.1 (bob)' when the version knows who rated; the key alone otherwise."""
    head, dot, tail = key.rpartition(".")
    if dot and tail.isdigit() and int(tail) < len(names):
        return f"{key} ({names[int(tail)]})"
    return key


def ceiling_frame(rows: list[dict[str, Any]], names: Sequence[str] = ()) -> pd.DataFrame:
    """One row per rater (vs the others' mean) and the judge (vs every rater's mean), figures with intervals."""
    out = []
    for r in rows:
        cells = {name: agree._cell(r, metric) for metric, name in CEILING.items()}
        out.append(
            {
                "who": with_names(str(r["who"]), list(names)),
                "against": r["against"],
                **cells,
                "items": r["items"],
                "reading": r["reading"],
            }
        )
    return pd.DataFrame(out)


def ceiling_sentence(summary: dict[str, Any] | None) -> str:
    """'Judge Spearman 0.41; the raters against the others: 0.62 to 0.73 (mean 0.69).'"""
    if not summary or not summary.get("raters"):
        return ""
    judge = summary.get("judge")
    head = f"Judge {summary['figure']} {safe_text.fmt(judge)}; " if judge is not None else ""
    return (
        f"{head}each rater against the other raters: {summary['min']:.3f} to {summary['max']:.3f} "
        f"(mean {summary['mean']:.3f}). A judge inside that range agrees with people about as well as a person."
    )


def panel(run: Run, prompt, field: str | None) -> None:
    """Inter-rater agreement and the human ceiling, when the run's dataset has per-rater ratings."""
    if not field:
        return
    human = base_name(field)
    versions = rated_versions(state.library(), run, human)
    if not versions:
        return
    st.header("Raters and the human ceiling")
    c1, c2 = st.columns(2)
    dataset_id = c1.selectbox(
        "Ratings from",
        list(versions),
        format_func=versions.__getitem__,
        key=K + "version",
        help="A version saved on the Rate page carries the raters; the judge's scores are "
        "matched by item id where the item's inputs are identical.",
    )
    bootstrap = int(
        c2.number_input(
            "Bootstrap resamples (raters)", min_value=0, max_value=5000, value=200, step=100, key=K + "boot"
        )
    )
    items = cached_reads.dataset_items(dataset_id)
    result = report(run, dataset_id, human, prompt.dimension.scale, any(i.group for i in items), bootstrap)
    alpha_metrics(result)
    names = state.library().rater_names(dataset_id, human)
    st.caption(
        safe_text.md_escape(
            f"Krippendorff's alpha over the {result['items']} items rated by two or more of "
            f"{', '.join(with_names(k, names) for k in result['rater_keys'])}; "
            "ratings per item: "
            + ", ".join(f"{n} items with {k}" for k, n in result["raters_per_item"].items())
        )
    )
    st.dataframe(ceiling_frame(result["ceiling"], names), hide_index=True)
    st.caption(safe_text.md_escape(ceiling_sentence(result["ceiling_summary"])))
    with st.expander("Pairwise quadratic kappa and the items people disagree on most"):
        st.dataframe(pd.DataFrame(result["pairwise_kappa_quadratic"]), hide_index=True)
        st.dataframe(pd.DataFrame(result["spread"]), hide_index=True)
