"""Library reads the pages repeat on every rerun, cached where the data cannot change.

Datasets are immutable versions, so their items are cached by id. A run's judgments only grow (a
resume replaces errored ones), so they are cached by the run's `run_state`: a finished run is read
from SQLite once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import pandas as pd
import streamlit as st

from geval_core.judgment import single_rating
from geval_core.records import Run
from geval_core.stats.confidence import CONFIDENCE_KEYS, confidence
from geval_core.stats.people import version_ratings
from geval_core.stats.raters import base_name
from geval_core.types import FrozenPrompt, Item
from workbench_ui import state

LOW_MASS = 0.5  # below this the judge put most of its probability on tokens that are no rating


def library_path() -> str:
    """The open library's file, absolute: the first key of every cached figure (another library, other figures)."""
    return os.path.abspath(state.sidebar().db_path)


def run_state(run: Run) -> tuple[int, int, str]:
    """What changes whenever a run's judgments do: how many judged, how many errored (a resume
    replaces errored judgments without adding rows) and the status; the key of the per-run caches."""
    return int(run.judged or 0), int(run.errors or 0), str(run.status)


@st.cache_resource(show_spinner=False, max_entries=16)
def _items(path: str, dataset_id: str) -> tuple[list[Item], dict[str, Item], list[str]]:
    items = state.library().dataset_items(dataset_id)
    return items, {i.id: i for i in items}, sorted({k for i in items for k in i.human})


def dataset_items(dataset_id: str) -> list[Item]:
    """Every item of a dataset version, in order (cached: versions never change)."""
    return _items(library_path(), dataset_id)[0]


def items_by_id(dataset_id: str) -> dict[str, Item]:
    """The items of a dataset version by id."""
    return _items(library_path(), dataset_id)[1]


def human_names(dataset_id: str) -> list[str]:
    """The human ratings the items of a dataset version carry, sorted (as the dataset row's "human")."""
    return _items(library_path(), dataset_id)[2]


@st.cache_resource(show_spinner=False, max_entries=16)
def _stored_judgments(path: str, run_id: str, version: tuple[int, int, str]) -> list[dict[str, Any]]:
    return state.library().judgments(run_id)


def stored_judgments(run: Run) -> list[dict[str, Any]]:
    """A run's judgments as the library stores them (no group, human or tie columns), cached per run
    state: what the Agreement page reads, without building the export rows. Shared: never mutate."""
    return _stored_judgments(library_path(), run.id, run_state(run))


class CachedLibrary:
    """The library, except that dataset items and a run's stored judgments come from the caches here
    (an item version never changes; judgments per run state): the Agreement page's readings and
    diagnostics would otherwise read and decode all 20,000 judgments again, each (seconds).
    What it returns is shared: callers copy before they change anything."""

    def __init__(self, lib) -> None:
        self._lib = lib

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)

    def dataset_items(self, ref: str) -> list[Item]:
        """Every item of a dataset version (cached)."""
        return dataset_items(self._lib.get_dataset(ref).id)

    def judgments(self, run_id: str) -> list[dict[str, Any]]:
        """Every judgment of a run (cached per run state)."""
        return stored_judgments(self._lib.get_run(run_id))

    def human_means(self, ref: str, dimension: str) -> dict[str, float]:
        """The version's own people ratings, from the cached items (Library.human_means' rule)."""
        return version_ratings(self.dataset_items(ref), dimension)


@st.cache_resource(show_spinner=False, max_entries=16)
def _judgments(path: str, run_id: str, version: tuple[int, int, str]) -> list[dict[str, Any]]:
    from geval_core.stats import judgment_rows

    return judgment_rows(CachedLibrary(state.library()), run_id)


def judgments(run: Run) -> list[dict[str, Any]]:
    """The judgments of a run (as lib.get_run returns it) with group, human ratings and ties per item,
    read again only when its run_state changed."""
    return _judgments(library_path(), run.id, run_state(run))


@st.cache_resource(show_spinner=False, max_entries=64)
def _per_run(
    path: str, run_id: str, version: tuple[int, int, str], name: str, extra: tuple, _build: Callable[[], Any]
) -> Any:
    return _build()


def per_run(run: Run, name: str, build: Callable[[], Any], *extra: Hashable) -> Any:
    """build() once per run_state, name and extra inputs: the tables and figures a page derives from a
    run, which a rerun would otherwise rebuild (seconds for 20,000 items). Shared, so never mutate it."""
    return _per_run(library_path(), run.id, run_state(run), name, extra, build)


def judged_ids(run: Run) -> set[str]:
    """Items of the run judged without an error, as lib.judged_item_ids gives them (a resume retries the rest)."""
    return per_run(
        run, "judged_ids", lambda: {r["item_id"] for r in stored_judgments(run) if r.get("error") is None}
    )


@st.cache_resource(show_spinner=False, max_entries=16)
def _summary(
    path: str, run_id: str, version: tuple[int, int, str], _rows: list[dict[str, Any]]
) -> dict[str, Any]:
    from geval_core.stats import tie_rate

    weighted = [r["score"] for r in _rows if r.get("score") is not None]
    top = [v for v in map(single_rating, _rows) if v is not None]
    return {
        "weighted": weighted,
        "top": top,
        "scored": len(weighted),
        "tie_weighted": tie_rate(weighted) if len(weighted) > 1 else None,
        "tie_top": tie_rate(top) if len(top) > 1 else None,
        "unparsed": sum(r.get("unparsed") or 0 for r in _rows),
        "errors": sum(1 for r in _rows if r.get("error")),
        "low_mass": sum(1 for r in _rows if _low_mass(r)),
        "input_tokens": sum(r.get("input_tokens") or 0 for r in _rows),
        "output_tokens": sum(r.get("output_tokens") or 0 for r in _rows),
    }


def _low_mass(row: dict[str, Any]) -> bool:
    # Valid mass is a logprobs figure; a sampling item's parsed share is shown as "unparsed" instead, and an item
    # that was never answered (an error, e.g. too long to send) has no mass at all: it counts as an error.
    return (
        not row.get("error") and row.get("mode") != "sampling" and (row.get("valid_mass") or 0.0) < LOW_MASS
    )


def run_summary(run: Run, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Run-level figures (tie rates from geval_core.stats) of judgments(run), computed once per run_state."""
    return _summary(library_path(), run.id, run_state(run), rows)


def human_key(keys: Iterable[str], name: str) -> str | None:
    """The human rating named like a dimension (case-insensitive), among a dataset's rating names."""
    for key in sorted(keys):
        if key.lower() == name.lower():
            return key
    return None


def chosen_human(keys: Iterable[str], prompt: FrozenPrompt) -> str | None:
    """The human rating every page opens on for a prompt: the one named like the prompt or its dimension, else one
    named by a word of those names ('helpfulness' for support-helpfulness), else the first mean rating (not a
    rater's NAME.k), else the first; None without ratings."""
    keys = sorted(keys)
    names = (prompt.name, prompt.dimension.name)
    words = {w for n in names for w in n.lower().replace("-", " ").replace("_", " ").split()}
    means = [k for k in keys if base_name(k) == k]
    return (
        next((k for n in names if (k := human_key(keys, n))), None)
        or next((k for k in means if k.lower() in words), None)
        or next(iter(means + keys), None)
    )


def judgments_frame(rows: list[dict[str, Any]], human: dict[str, float | None] | None = None) -> pd.DataFrame:
    """One row per judged item: the numbers the Score page's table shows."""
    frame = pd.DataFrame(
        {
            "item": [r["item_id"] for r in rows],
            "score": [r.get("score") for r in rows],
            "top-token": [single_rating(r) for r in rows],
            "valid mass": [r.get("valid_mass") for r in rows],
            "ties": [r.get("ties_weighted") for r in rows],
            "ties top-token": [r.get("ties_top") for r in rows],
            "unparsed": [r.get("unparsed") or 0 for r in rows],
            "reply": [(r.get("replies") or [""])[0] if r.get("replies") else "" for r in rows],
            "error": [r.get("error") or "" for r in rows],
        }
    )
    frame["low mass"] = [_low_mass(r) for r in rows]
    spread = [confidence(r.get("distribution")) for r in rows]  # the judge's confidence, sortable per column
    for col in CONFIDENCE_KEYS:
        frame[col] = pd.to_numeric(pd.Series([c[col] for c in spread], dtype=object), errors="coerce")
    if human is not None:
        frame.insert(3, "human", [human.get(r["item_id"]) for r in rows])
    if any(r.get("ties_weighted_in_group") is not None for r in rows):
        frame.insert(
            frame.columns.get_loc("ties top-token") + 1,
            "ties in group, weighted",
            [r.get("ties_weighted_in_group") for r in rows],
        )
    if any(r.get("reply_agreement") is not None for r in rows):
        frame["reply agreement"] = [r.get("reply_agreement") for r in rows]
    for col in ("score", "top-token", "valid mass", "ties", "ties top-token"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame


def run_title(run: Run) -> str:
    """'20250102-130405-1a2b3c · coherence@1 on sample@1 · openai:m at http://127.0.0.1:8080/v1 logprobs n=1 T=0':
    what never changes, the judge's server included (the same model at two servers is two judges)."""
    from geval_core.run.plan import judge_label

    judge = run.judge
    how = f"{judge_label(judge)} {judge.mode} n={judge.n} T={judge.temperature}"
    return f"{run.id} · {run.prompt_label} on {run.dataset_label} · {how}"


def run_progress(run: Run) -> str:
    """'24/24 · done': what changes while a run goes on."""
    return f"{run.judged}/{run.items_total} · {run.status}"


def run_label(run: Run) -> str:
    """'20250102-130405-1a2b3c · coherence@1 on sample@1 · local:smollm2 logprobs n=1 T=0 · 24/24 · done'."""
    return f"{run_title(run)} · {run_progress(run)}"
