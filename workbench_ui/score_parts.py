"""The Score page's parts: judge choice, cost box, run summary, the item table and one item."""

from __future__ import annotations

import functools
import hashlib
import io
import json
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from geval_core import prompts
from geval_core.files.prompt_files import write_judgments
from geval_core.judgment import single_rating
from geval_core.records import Run
from geval_core.stats.confidence import describe
from geval_core.types import FrozenPrompt, JudgeSettings
from workbench_ui import cached_reads, charts, prices, safe_text, state

CONFIDENCE_HELP = {
    "entropy": "bits of uncertainty in the judge's distribution (0: certain)",
    "sd": "standard deviation of the distribution over the scale (sampling: of the replies)",
    "margin": "probability of the likeliest rating minus the next one (1: certain)",
}
MOSTLY_LOW = 0.25  # warn when more than this share of items put little mass on the scale


@st.cache_data(show_spinner=False, max_entries=32)
def _estimate(
    prompt_id: str,
    dataset_id: str,
    ids: str,
    settings: str,
    prices: str,
    concurrency: int,
    _prompt: FrozenPrompt,
    _items: list,
    _settings: JudgeSettings,
    _table: dict,
) -> dict[str, Any]:
    from geval_core.run.cost import estimate_cost

    return estimate_cost(_prompt, _items, _settings, prices=_table, concurrency=concurrency)


def estimate(
    prompt: FrozenPrompt,
    items: list,
    settings: JudgeSettings,
    table: dict,
    dataset_id: str,
    concurrency: int = 1,
) -> dict[str, Any]:
    """geval_core's estimate, cached per prompt, dataset version, chosen items, judge, prices and concurrency: it
    renders every item's prompt (seconds for 20,000 items), and a version's items never change."""
    ids = hashlib.sha256("\n".join(i.id for i in items).encode()).hexdigest()
    return _estimate(
        prompt.id,
        dataset_id,
        ids,
        repr(settings),
        json.dumps(table, sort_keys=True, default=str),
        concurrency,
        prompt,
        items,
        settings,
        table,
    )


def cost_box(
    lib, prompt: FrozenPrompt, items: list, settings: JudgeSettings, dataset_id: str, concurrency: int = 1
) -> None:
    """The cost estimate, shown before any run starts, from the price table the user can edit; `concurrency`
    (requests in flight) decides how many of a document's items find its prefix cached."""
    from geval_core.run.cost import load_prices

    table = load_prices(store=lib)  # read once: the estimate and the editor show the same table
    est = estimate(prompt, items, settings, table, dataset_id, concurrency)
    c = st.columns(5)
    c[0].metric("Items", est["items"])
    c[1].metric("Input tokens (est.)", f"{est['input_tokens']:,}")
    c[2].metric(
        "of which cached (est.)",
        f"{est['cached_input_tokens']:,}" if est.get("cache_predicted") else "not predicted",
        help="input tokens the provider's prompt cache should serve at its cached rate, by its documented "
        "rule, with items that share their source document sent together; not predicted for a judge without "
        "a documented rule (the run records what the judge reports)",
    )
    c[3].metric("Output tokens (max)", f"{est['output_tokens']:,}")
    c[4].metric(
        "Cost (est.)",
        "unknown"
        if est["usd"] is None
        else f"${est['usd']:.4f}" + (" at most" if est.get("usd_upper_bound") else ""),
    )
    st.caption(safe_text.md_escape(est.get("note", "")))
    prices.price_editor(lib, settings, table)


def run_item_ids(run: Run) -> set[str] | None:
    """The run's chosen item ids (None: the whole dataset); lib.get_run has decoded them."""
    ids = run.item_ids
    return set(ids) if ids else None


def summary(lib, run: Run, prompt: FrozenPrompt, rows: list[dict[str, Any]]) -> None:
    """Run-level figures: ties weighted vs top-token, unparsed, low mass, tokens and cost."""
    s = cached_reads.run_summary(run, rows)
    total = run.items_total or len(rows)
    c: tuple[DeltaGenerator, ...] = st.columns(6)
    c[0].metric("Judged", f"{len(rows)} / {total}")
    c[1].metric("Tie rate, weighted", safe_text.fmt(s["tie_weighted"]))
    c[2].metric("Tie rate, top-token", safe_text.fmt(s["tie_top"]))
    c[3].metric("Unparsed replies", s["unparsed"])
    c[4].metric("Low valid mass", s["low_mass"], help=f"items with valid mass < {cached_reads.LOW_MASS}")
    c[5].metric("Errors", s["errors"])
    c = st.columns(4)
    c[0].metric("Input tokens", f"{s['input_tokens']:,}")
    c[1].metric(
        "of which cached",
        f"{run.extra.get('cached_input_tokens') or 0:,}",
        help="read from the judge's prompt cache, as its API reported them; priced at the cached rate",
    )
    c[2].metric("Output tokens", f"{s['output_tokens']:,}")
    cost = run.cost_usd
    c[3].metric(
        "Cost",
        "—" if cost is None else f"${cost:.4f}" + (" at most" if run.extra.get("cost_upper_bound") else ""),
    )
    st.caption(f"Model version the judge reported: {safe_text.md_escape(run.model_version or '—')}")
    if s["low_mass"] > MOSTLY_LOW * len(rows):
        st.warning(
            f"The judge put little probability on the scale for {s['low_mass']} of {len(rows)} items "
            f"(valid mass < {cached_reads.LOW_MASS}): their weighted scores rest on a small share of its "
            "belief. The tiny local model does this; a stronger judge or priming helps."
        )
    points = prompt.dimension.scale.points
    st.plotly_chart(
        cached_reads.per_run(
            run, "histogram", lambda: charts.score_histogram(s["weighted"], s["top"], points), tuple(points)
        ),
        key="score_hist",
    )
    tie_clusters_view(run, prompt, rows)


def tie_clusters_view(run: Run, prompt: FrozenPrompt, rows: list[dict[str, Any]]) -> None:
    """The largest sets of items sharing one score, and how many distinct human ratings each hides."""
    from geval_core.stats import tie_clusters

    key = cached_reads.chosen_human(cached_reads.human_names(run.dataset_id), prompt)

    def build() -> tuple[dict[str, list], Any]:
        human = [r.get(f"human_{key}") for r in rows] if key else None
        clusters = {
            "weighted": tie_clusters([r.get("score") for r in rows], human, top=8),
            "top-token": tie_clusters([single_rating(r) for r in rows], human, top=8),
        }
        return clusters, charts.tie_clusters_figure(clusters) if any(clusters.values()) else None

    clusters, figure = cached_reads.per_run(run, "tie_clusters", build, key)
    if figure is None:
        return
    st.plotly_chart(figure, key="score_tie_clusters")
    costly = [c for c in clusters["weighted"] if (c["human_distinct"] or 0) > 1]
    if costly:
        st.caption(
            f"{len(costly)} weighted-score ties hide items people rated differently (up to "
            f"{max(c['human_distinct'] for c in costly)} distinct ratings): ties that cost agreement."
        )


def table_and_item(run: Run, prompt: FrozenPrompt, rows: list[dict[str, Any]]) -> None:
    """One dataframe for every item (select a row) and one chart for the selected item."""
    items = cached_reads.items_by_id(run.dataset_id)
    key = human_choice(run, prompt)
    frame = cached_reads.per_run(
        run,
        "frame",
        lambda: cached_reads.judgments_frame(
            rows, {i: it.human.get(key) for i, it in items.items()} if key else None
        ),
        key,
    )
    event = st.dataframe(
        frame,
        key="score_table",
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
        height=min(380, 38 + 35 * len(frame)),
        column_config=_columns(),
    )
    ids = cached_reads.per_run(run, "ids", frame["item"].tolist)
    picked = list(event.selection.rows) if event is not None else []
    ss = st.session_state
    if picked and picked != ss.get("score_table_last") and picked[0] < len(ids):
        ss["score_item"] = ids[picked[0]]
    ss["score_table_last"] = picked
    position = cached_reads.per_run(run, "positions", lambda: {i: n for n, i in enumerate(ids)})
    if ss.get("score_item") not in position:
        ss["score_item"] = ids[0]
    item_id = st.selectbox("Open item", ids, key="score_item")
    judgment = rows[position[item_id]]  # the frame has one row per judgment, in the same order
    scored = cached_reads.run_summary(run, rows)["scored"]
    show_item(judgment, items.get(item_id), prompt, key, max(scored - 1, 0))


def human_choice(run: Run, prompt: FrozenPrompt) -> str | None:
    """The human rating the table and the item panel show: as the Agreement page opens, or the one chosen (a
    picker, remembered, when the dataset has several)."""
    humans = cached_reads.human_names(run.dataset_id)
    default = cached_reads.chosen_human(humans, prompt)
    if len(humans) < 2:
        return default
    state.keep_choice("score_human", humans)
    if st.session_state.get("score_human") not in humans:  # another dataset's rating: this one's default
        st.session_state["score_human"] = default
    return state.kept("score_human", st.selectbox("Human rating shown", humans, key="score_human"))


def tie_sentence(judgment: dict[str, Any], others: int) -> str:
    """'Top-token rating tied with 11 of 66 other items at 3.000; 0 after weighting' (and in its group)."""
    if judgment.get("ties_top") is None or judgment.get("score") is None:
        return "No score, so no ties."
    top = single_rating(judgment)
    text = (
        f"Top-token rating tied with {judgment['ties_top']} of {others} other items at {top:.3f}; "
        f"{judgment['ties_weighted']} after weighting (at {judgment['score']:.3f})."
    )
    if judgment.get("ties_top_in_group") is not None:
        text += (
            f" Within its group: {judgment['ties_top_in_group']} top-token, "
            f"{judgment['ties_weighted_in_group']} weighted."
        )
    if judgment.get("reply_agreement") is not None:
        text += f" Replies agreed on {judgment['reply_agreement']:.0%} of pairs."
    return text


def downloads(run: Run, rows: list[dict[str, Any]]) -> None:
    """The run's judgments as CSV and JSONL files (the same columns as `geval runs export`: group,
    human ratings and per-item ties included), written when the button is clicked."""
    st.caption('Download this run\'s judgments (one row per item, the item named "id" as in `geval score`):')
    c1, c2, _ = st.columns([1, 1, 3])
    for column, fmt, mime in ((c1, "csv", "text/csv"), (c2, "jsonl", "application/jsonl")):
        # A callable is run on the click, not on every rerun: writing 20,000 judgments took a second.
        column.download_button(
            f"Download {fmt.upper()}",
            functools.partial(judgments_text, rows, fmt),
            file_name=f"judgments-{run.id}.{fmt}",
            mime=mime,
            key=f"score_dl_{fmt}",
            on_click="ignore",
        )


def judgments_text(rows: list[dict[str, Any]], fmt: str) -> str:
    """One run's judgments written by geval_core.files.prompt_files, as text."""
    out = io.StringIO()
    write_judgments(rows, out, fmt)
    return out.getvalue()


def _columns() -> dict:
    num = st.column_config.NumberColumn
    return {
        "score": num(format="%.3f"),
        "valid mass": num(format="%.3f"),
        "human": num(format="%.2f"),
        "low mass": st.column_config.CheckboxColumn(),
        **{c: num(format="%.3f", help=h) for c, h in CONFIDENCE_HELP.items()},
    }


def show_item(
    judgment: dict[str, Any], item, prompt: FrozenPrompt, human_key: str | None, others: int = 0
) -> None:
    """One item: its numbers, its distribution chart, the replies and the item text (verbatim)."""
    c = st.columns(5)
    c[0].metric("Weighted score", safe_text.fmt(judgment.get("score")))
    sampled = judgment.get("mode") == "sampling"
    c[1].metric(
        "First reply" if sampled else "Top-token score", safe_text.fmt_rating(single_rating(judgment))
    )
    c[2].metric(
        "Parsed share" if sampled else "Valid mass",
        safe_text.fmt(judgment.get("parsed_share" if sampled else "valid_mass")),
    )
    c[3].metric("Unparsed", judgment.get("unparsed") or 0)
    c[4].metric("Human", safe_text.fmt_rating(item.human.get(human_key)) if item and human_key else "—")
    st.caption(tie_sentence(judgment, others))
    st.caption(describe(judgment.get("distribution"), judgment.get("mode") == "sampling"))
    if judgment.get("error"):
        st.error(safe_text.md_escape(judgment["error"]))
    elif judgment.get("note"):  # answered, but no score: why, in the judgment's own words
        st.warning(f"No score: {safe_text.md_escape(judgment['note'])}")
    st.caption(
        f"Answered by {safe_text.md_escape(judgment.get('server') or 'an unrecorded server')} · reply from "
        f"{safe_text.md_escape(judgment.get('source') or 'an unrecorded source')}"
    )
    left, right = st.columns([1, 1], gap="large")
    with left:
        fig = charts.distribution_figure(
            judgment.get("distribution") or {},
            judgment.get("valid_mass"),
            prompt.dimension.scale.points,
            "Probability on each rating",
        )
        st.plotly_chart(fig, key="score_item_chart")
        st.caption(
            f"Mode: {judgment.get('mode')} · model: {safe_text.md_escape(judgment.get('model_version'))}"
            + (" · fell back to sampling" if judgment.get("fallback") else "")
        )
        for n, reply in enumerate(judgment.get("replies") or [], 1):
            safe_text.show_text(f"Reply {n}", reply)
    with right:
        if item is None:
            st.info("The item is not in the dataset any more.")
            return
        for name in prompt.dimension.inputs:
            safe_text.show_text(name, item.fields.get(name, ""))
        with st.expander("The prompt the judge was sent for this item"):
            st.code(prompts.render(prompt, item), language=None, wrap_lines=True, height=400)
