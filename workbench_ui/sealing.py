"""The sealed test side on the pages: every figure of a split dataset's run is on the dev side unless the user
opens the test side, an act that is recorded (once per page session and run) and counted."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from geval_core.records import Dataset, Run
from workbench_ui import safe_text

K = "seal_"
CURRENT = K + "current"


@dataclass(frozen=True)
class Scope:
    """The items a page's figures may use, and what that scope is."""

    key: str  # for caches: the side, the split's hash, the example items left out
    ids: frozenset | None  # None: every item
    side: str | None = None
    split: str | None = None
    examples_left_out: int = 0
    candidates_on_test: int | None = None


def choose(lib, run: Run, prompt, key: str = K) -> Scope:
    """Dev by default on a split dataset; the sealed test side after an explicit, recorded click."""
    from geval_core.run.splits import evaluation_ids, has_split

    examples = prompt.dimension.example_ids
    if not has_split(lib, run.dataset_id):
        ids, info = evaluation_ids(lib, run.dataset_id, "dev", examples)
        scope = Scope(
            f"all-{info['examples_left_out']}",
            None if ids is None else frozenset(ids),
            examples_left_out=info["examples_left_out"],
        )
        if scope.examples_left_out:
            st.caption(safe_text.md_escape(describe(scope)))
        return _keep(scope)
    opened = st.session_state.setdefault(K + "opened", {})
    side = st.radio(
        "Items",
        ["dev", "test"],
        horizontal=True,
        key=key + "side",
        format_func={"dev": "dev side (for tuning)", "test": "sealed test side"}.get,
        help="Figures of a split dataset use its dev side; the test side is for the final check of a "
        "frozen candidate, and every use of it is recorded and counted.",
    )
    if side == "test" and run.id not in opened:
        st.warning(
            "The test side is sealed: looking at it is recorded for this prompt, and every candidate "
            "evaluated there widens the corrected interval of the Align report."
        )
        if not st.button("Open the sealed test side (recorded)", key=key + "open"):
            side = "dev"
        else:
            opened[run.id] = evaluation_ids(lib, run.dataset_id, "test", examples, run.prompt_id, run.id)[1][
                "candidates_on_test"
            ]
    if side == "test":
        from geval_core.run.splits import get_split

        split = get_split(lib, run.dataset_id)
        ids = set(split["test"]) - set(examples)
        info = {"split": split["hash"], "examples_left_out": len(set(split["test"]) & set(examples))}
    else:
        ids, info = evaluation_ids(lib, run.dataset_id, "dev", examples)
    scope = Scope(
        f"{side}-{info['split']}-{info['examples_left_out']}",
        None if ids is None else frozenset(ids),
        side,
        info["split"],
        info["examples_left_out"],
        opened.get(run.id),
    )
    st.caption(safe_text.md_escape(describe(scope)))
    return _keep(scope)


def dev_items(lib, dataset_id: str, items: list) -> list:
    """The items on the dev side when the dataset is split (all of them otherwise): what a page works on unless
    the user opens the test side."""
    from geval_core.run.splits import get_split, has_split

    if not has_split(lib, dataset_id):
        return items
    dev = set(get_split(lib, dataset_id)["dev"])
    return [i for i in items if i.id in dev]


def side_items(lib, dataset_id: str, items: list, prompt_id: str, key: str) -> tuple[list, str | None]:
    """(items, side) for a page that scores: the dev side of a split dataset by default, the sealed test side
    when chosen (the caller records the use when it runs); every item of an unsplit dataset."""
    from geval_core.run.splits import get_split, has_split

    if not has_split(lib, dataset_id):
        return items, None
    split = get_split(lib, dataset_id)
    side = st.radio(
        "Items of the split",
        ["dev", "test"],
        horizontal=True,
        key=key,
        format_func={
            "dev": f"dev side ({len(split['dev'])})",
            "test": f"sealed test side ({len(split['test'])}, recorded)",
        }.get,
    )
    if side == "test":
        st.warning("Scoring the sealed test side is recorded as a use of it for this prompt.")
    wanted = set(split[side])
    return [i for i in items if i.id in wanted], side


def split_panel(lib, dataset: Dataset, key: str = K + "split_") -> None:
    """A dataset version's split (hash, sides, how often its test side was used), or the form that makes one."""
    from geval_core.run.splits import get_split, has_split, make_split, sealed_uses

    if has_split(lib, dataset.id):
        split = get_split(lib, dataset.id)
        uses = sealed_uses(lib, split)
        st.caption(
            safe_text.md_escape(
                f"Split {split['hash'][:12]} (by {split['by'] or 'item'}, seed {split['seed']}): {len(split['dev'])} dev "
                f"items in {split['groups']['dev']} groups, {len(split['test'])} sealed test items in "
                f"{split['groups']['test']} groups; the test side was used {len(uses)} time(s) by "
                f"{len({u['prompt_id'] for u in uses})} prompt(s)."
            )
        )
        return
    grouped = all(i.group for i in lib.dataset_items(dataset.id))
    c1, c2, c3 = st.columns(3)
    dev = c1.slider(
        "Dev share",
        0.2,
        0.9,
        0.6,
        0.05,
        key=key + "dev",
        help="Of the groups (documents): no group is on both sides."
        if grouped
        else "Of the items (this dataset has no groups).",
    )
    seed = int(c2.number_input("Seed", min_value=0, value=0, key=key + "seed"))
    if c3.button("Split into dev and sealed test", key=key + "make"):
        make_split(lib, dataset.id, dev, "group" if grouped else None, seed)
        st.rerun()


def describe(scope: Scope) -> str:
    """'Dev side of split 1a2b3c4d5e6f (72 items); 2 example items of the prompt left out.'"""
    parts = []
    if scope.side:
        parts.append(
            f"{scope.side.capitalize()} side of split {(scope.split or '')[:12]} ({len(scope.ids or ())} items)"
        )
    if scope.side == "test":
        parts.append(
            f"recorded: {scope.candidates_on_test} prompt{'' if scope.candidates_on_test == 1 else 's'} "
            "evaluated on this test side"
        )
    if scope.examples_left_out:
        parts.append(f"{scope.examples_left_out} example item(s) of the prompt left out")
    return "; ".join(parts) + "." if parts else ""


def _keep(scope: Scope) -> Scope:
    st.session_state[CURRENT] = scope
    return scope


def current() -> Scope | None:
    """The scope the page chose on this run of the script (None before any)."""
    return st.session_state.get(CURRENT)


def scoped(store):
    """The store seen through the current scope (diagnostics read judgments through it)."""
    from geval_core.run.splits import ScopedStore

    scope = current()
    return store if scope is None or scope.ids is None else ScopedStore(store, scope.ids)


def cache_key() -> str:
    """The current scope's key, for the caches of figures."""
    scope = current()
    return scope.key if scope else "all"
