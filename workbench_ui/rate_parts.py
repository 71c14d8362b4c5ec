"""The Rate page's parts: the rater's name, the queue, one item with its rating buttons, saving a version."""

from __future__ import annotations

from typing import Any

import streamlit as st

from geval_core.diagnostics.review import ORDERS, next_item, progress, review_queue
from geval_core.records import Dataset, Run
from geval_core.types import FrozenPrompt, Item
from workbench_ui import cached_reads, people, safe_text, state

K = "rate_"
RATER_KEY = "rater_name"  # kept outside the widget's own key so the name survives page switches
SAID_KEY = K + "said"
SKIP_KEY, CANNOT_KEY, UNDO_KEY = "S", "X", "U"  # C and R are reserved by Streamlit


def rater_name() -> str:
    """The rater's name, typed in the sidebar (kept for the session and in the library for the next one)."""
    st.session_state.setdefault(RATER_KEY, state.remembered(RATER_KEY) or "")

    def keep() -> None:
        st.session_state[RATER_KEY] = st.session_state[K + "name_box"].strip()
        state.remember(RATER_KEY, st.session_state[RATER_KEY])

    st.sidebar.text_input(
        "Rater name",
        value=st.session_state[RATER_KEY],
        key=K + "name_box",
        on_change=keep,
        help="Your ratings are stored under this name; another name is another rater.",
    )
    return st.session_state[RATER_KEY]


def shortcut(point: int, points: tuple[int, ...] | list[int] = ()) -> str | None:
    """The key that gives this rating: its digit for 0-9, and 0 for the 10 of a scale without a 0 (1-10)."""
    if 0 <= point <= 9:
        return str(point)
    return "0" if point == 10 and 0 not in points else None


def button_label(point: int, anchor: str, points: tuple[int, ...] | list[int] = ()) -> str:
    """A rating button's words: the anchor's first words (the key badge beside them shows the digit), with the
    point itself when its key is not its digit (10 on 0, points without a key); "Rate N" without an anchor."""
    words = " ".join(anchor.split()).split(". ")[0].rstrip(".")
    short = words if len(words) <= 28 else words[:27].rstrip() + "…"
    if not short:
        return f"Rate {point}"
    return short if shortcut(point, points) == str(point) else f"{point}: {short}"


def key_hint(points: tuple[int, ...] | list[int]) -> str:
    """How to rate from the keyboard, for the scale shown."""
    ten = 10 in points and shortcut(10, points) == "0"
    return "press the digit to rate" + (", 0 for 10" if ten else "")


def queue_order(lib, dataset: Dataset, prompt: FrozenPrompt, run: Run | None, order: str) -> list[str]:
    """Item ids in the order they are offered: dataset order, or the review queue of a run."""
    items = cached_reads.dataset_items(dataset.id)
    ids = [i.id for i in items]
    if run is None or order == "dataset":
        return ids
    judged = {r["item_id"]: r for r in cached_reads.judgments(run)}
    human = lib.human_means(dataset.id, prompt.name)
    return [r["item"] for r in review_queue(ids, judged, human, order)]


def order_options(runs: list[dict]) -> dict[str, str]:
    """The orders on offer: dataset order, and the review queue's orders when a run is chosen."""
    options = {"dataset": "dataset order"}
    if runs:
        options.update({k: f"review queue: {v}" for k, v in ORDERS.items()})
    return options


def act(
    dataset_id: str,
    item_id: str,
    dimension: str,
    prompt_id: str,
    rater: str,
    rating: float | None,
    status: str,
) -> None:
    """Button callback: append one act (a rating, a skip or 'cannot judge')."""
    state.library().add_rating(dataset_id, item_id, dimension, rater, rating, status, prompt_id)
    shown = safe_text.fmt_rating(rating) if status == "rated" else status.replace("_", " ")
    st.session_state[SAID_KEY] = f"{item_id}: {shown}"


def undo(dataset_id: str, dimension: str, rater: str) -> None:
    """Button callback: take back the rater's last act still standing."""
    last = state.library().undo_rating(dataset_id, dimension, rater)
    st.session_state[SAID_KEY] = (
        f"undid {last['item_id']} ({last['status'].replace('_', ' ')})" if last else "nothing to undo"
    )


def progress_bar(counts: dict[str, int]) -> None:
    """Done share and the counts of this rater's acts."""
    done = counts["rated"] + counts["cannot_judge"]
    st.progress(
        done / max(counts["total"], 1),
        text=f"{counts['rated']} rated · {counts['cannot_judge']} cannot judge · {counts['skipped']} "
        f"skipped · {counts['left']} not seen · {counts['total']} items",
    )


def show_prompt(prompt: FrozenPrompt) -> None:
    """The definition and every anchor, shown as text."""
    dim = prompt.dimension
    with st.expander(f"Definition and scale of {safe_text.md_escape(prompt.label)}", expanded=True):
        safe_text.show_text("Definition", dim.definition)
        anchors = "\n".join(f"{p}: {dim.anchors.get(p, '')}" for p in dim.scale.points)
        safe_text.show_text(f"Scale {dim.scale} ({key_hint(dim.scale.points)})", anchors)


def show_item(item: Item, prompt: FrozenPrompt, judged: dict[str, Any] | None, show_judge: bool) -> None:
    """The item's inputs as text, and the judge's score only when asked."""
    st.subheader(f"Item {safe_text.md_escape(item.id)}")
    for name in prompt.dimension.inputs:
        safe_text.show_text(name, item.fields.get(name, ""))
    if show_judge:
        score = (judged or {}).get("score")
        st.caption(f"Judge's weighted score: {safe_text.fmt(score)}")


def rating_buttons(ctx: dict[str, Any], item: Item, prompt: FrozenPrompt) -> None:
    """One button per scale point (keys 1-9), then skip, cannot judge and undo."""
    points = prompt.dimension.scale.points
    cols = st.columns(len(points)) if len(points) <= 11 else None
    for n, point in enumerate(points):
        where = cols[n] if cols else st
        anchor = prompt.dimension.anchors.get(point, "")
        where.button(
            safe_text.md_escape(button_label(point, anchor, points)),
            key=f"{K}point_{point}",
            shortcut=shortcut(point, points),
            width="stretch",
            help=safe_text.md_escape(anchor) or None,
            on_click=act,
            args=(*ctx["where"], item.id, ctx["dimension"], prompt.id, ctx["rater"], float(point), "rated"),
        )
    c = st.columns(3)
    c[0].button(
        "Skip",
        key=K + "skip",
        shortcut=SKIP_KEY,
        on_click=act,
        args=(*ctx["where"], item.id, ctx["dimension"], prompt.id, ctx["rater"], None, "skipped"),
    )
    c[1].button(
        "Cannot judge",
        key=K + "cannot",
        shortcut=CANNOT_KEY,
        on_click=act,
        args=(*ctx["where"], item.id, ctx["dimension"], prompt.id, ctx["rater"], None, "cannot_judge"),
    )
    undo_button(ctx, c[2])


def undo_button(ctx: dict[str, Any], where) -> None:
    """Undo the last act (also when every item is done)."""
    where.button(
        "Undo last",
        key=K + "undo",
        shortcut=UNDO_KEY,
        on_click=undo,
        args=(*ctx["where"], ctx["dimension"], ctx["rater"]),
    )


def rate_next(
    lib, ctx: dict[str, Any], prompt: FrozenPrompt, order: list[str], run: Run | None, show_judge: bool
) -> None:
    """Progress, then the next item for this rater (resuming where they left), or 'all done'."""
    acts = lib.current_ratings(ctx["where"][0], ctx["dimension"]).get(ctx["rater"], {})
    progress_bar(progress(order, acts))
    said = st.session_state.pop(SAID_KEY, None)
    if said:
        st.caption(f"Last: {safe_text.md_escape(said)}")
    item_id = next_item(order, acts)
    if item_id is None:
        st.success("Every item has your rating (or 'cannot judge'). Save a dataset version below.")
        undo_button(ctx, st)
        return
    judged = {r["item_id"]: r for r in cached_reads.judgments(run)} if run else {}
    item = cached_reads.items_by_id(ctx["where"][0])[item_id]
    if acts.get(item_id, {}).get("status") == "skipped":
        st.caption("You skipped this item earlier; it comes back once the others are done.")
    show_item(item, prompt, judged.get(item_id), show_judge)
    rating_buttons(ctx, item, prompt)


def raters_table(lib, dataset_id: str, dimension: str) -> None:
    """Every rater's counts on this dataset version and dimension."""
    rows = []
    for rater, acts in lib.current_ratings(dataset_id, dimension).items():
        statuses = [a["status"] for a in acts.values()]
        rows.append(
            {
                "rater": rater,
                "rated": statuses.count("rated"),
                "cannot judge": statuses.count("cannot_judge"),
                "skipped": statuses.count("skipped"),
            }
        )
    if rows:
        st.dataframe(rows, hide_index=True)


def save_version(lib, dataset: Dataset, dimension: str) -> None:
    """'Save as dataset version': every rater's current rating per item and their mean, as a new version; then
    whether this version still lacks Rate-page ratings (which version has them, once saved)."""
    if st.button("Save as dataset version", key=K + "save", type="primary", help=people.RULE):
        result = lib.save_ratings_version(dataset.id, dimension)
        verb = "Saved as" if result["created"] else "Identical ratings already stored as"
        missing = result.get("human_missing", {}).get(dimension, 0)
        st.success(
            safe_text.md_escape(
                f"{verb} {result['label']}: {dimension} from {len(result['raters'])} raters "
                f"({', '.join(result['raters'])}); {missing} items without a rating."
            )
        )
    people.unsaved_notice(lib, dataset.id, dimension)
