"""Rate page: people rate a dataset version's items on a frozen prompt's dimension, one at a time."""

from __future__ import annotations

import streamlit as st

from geval_core.prompts.inputs import mismatch_message
from geval_core.records import Dataset, Run
from geval_core.types import FrozenPrompt
from workbench_ui import archive_view, cached_reads, rate_parts, safe_text, state

K = rate_parts.K


def choose(lib) -> tuple[Dataset, FrozenPrompt] | None:
    """The dataset version and the frozen prompt (the dimension to rate); datasets that fit the prompt first."""
    every = archive_view.visible(lib, "dataset", lib.list_datasets())
    prompts = {p["id"]: p for p in lib.list_prompts()}
    if not every or not prompts:
        st.info("Rating needs a dataset (Datasets page) and a frozen prompt (Design page).")
        return None
    c1, c2 = st.columns(2)
    # Kept per session: back on this page, the same dataset and dimension, so digit keys rate what they did.
    state.keep_choice(K + "prompt", list(prompts))
    prompt_id = state.kept(
        K + "prompt",
        c2.selectbox(
            "Dimension (frozen prompt)",
            list(prompts),
            key=K + "prompt",
            format_func=lambda i: f"{prompts[i]['name']}@{prompts[i]['version']}",
        ),
    )
    prompt = lib.get_prompt(prompt_id)
    ordered, unfit = archive_view.fitting_newest_first(prompt, every)
    datasets = {d.id: d for d in ordered}
    state.keep_choice(K + "dataset", [i for i in datasets if not unfit[i]])
    # A dataset kept from another prompt does not stay selected when it lacks this prompt's inputs.
    chosen = st.session_state.get(K + "dataset")
    if st.session_state.get(K + "dataset_for") != prompt.id and chosen in datasets and unfit[chosen]:
        st.session_state[K + "dataset"] = ordered[0].id
    st.session_state[K + "dataset_for"] = prompt.id
    dataset_id = state.kept(
        K + "dataset",
        c1.selectbox(
            "Dataset version",
            list(datasets),
            key=K + "dataset",
            format_func=lambda i: archive_view.fit_label(
                f"{datasets[i].label} ({datasets[i].item_count} items)", unfit[i]
            ),
        ),
    )
    return datasets[dataset_id], prompt


def choose_run(lib, dataset: Dataset) -> tuple[Run | None, str, bool]:
    """(run for the review queue and the judge's score, queue order, show the judge's score)."""
    runs = [
        r for r in archive_view.visible(lib, "run", lib.list_runs(dataset=dataset.id)) if int(r.judged or 0)
    ]
    labels = {r.id: cached_reads.run_label(r) for r in runs}
    c1, c2 = st.columns(2)
    state.keep_choice(K + "run", [None, *labels])
    run_id = state.kept(
        K + "run",
        c1.selectbox(
            "Judge run (review queue)",
            [None, *labels],
            key=K + "run",
            format_func=lambda i: "none" if i is None else labels[i],
        ),
    )
    options = rate_parts.order_options(runs if run_id else [])
    order = c2.radio("Order", list(options), format_func=options.get, key=K + "order", horizontal=True)
    show = st.checkbox(
        "Show the judge's score",
        value=False,
        key=K + "show_judge",
        disabled=run_id is None,
        help="Off by default: seeing the judge's score pulls ratings towards it.",
    )
    return (lib.get_run(run_id) if run_id else None), order, bool(show and run_id)


def main() -> None:
    """The Rate page."""
    st.title("Rate")
    lib = state.library()
    rater = rate_parts.rater_name()
    picked = choose(lib)
    if picked is None:
        return
    dataset, prompt = picked
    run, order, show_judge = choose_run(lib, dataset)
    rate_parts.show_prompt(prompt)
    lacks = mismatch_message(prompt, dataset.fields, f"dataset {dataset.label}")
    if lacks:  # its items would show empty inputs: nothing to rate them on
        st.warning(safe_text.md_escape(lacks) + ". Choose a dataset that fits to rate.")
    elif not rater:
        st.info("Type your name in the sidebar (Rater name) to start rating.")
    else:
        ctx = {"where": (dataset.id,), "dimension": prompt.name, "rater": rater}
        queue = rate_parts.queue_order(lib, dataset, prompt, run, order)
        rate_parts.rate_next(lib, ctx, prompt, queue, run, show_judge)
    st.header("Raters")
    rate_parts.raters_table(lib, dataset.id, prompt.name)
    rate_parts.save_version(lib, dataset, prompt.name)


safe_text.guarded(main)
