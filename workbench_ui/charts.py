"""Plotly figures for the pages; they draw numbers geval_core computed, never compute scores."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from geval_core.stats.paired import to_floats  # None as NaN, which plotly leaves out as it leaves out null

OTHER = "other tokens"
_LAYOUT = {"margin": {"l": 40, "r": 10, "t": 40, "b": 40}, "height": 320}


def _safe(text: object) -> str:
    # Plotly renders a subset of HTML in labels; escape untrusted text so it shows literally.
    return html.escape(str(text))


def distribution_figure(
    distribution: dict[int, float], valid_mass: float | None, points: Sequence[int], title: str = ""
) -> go.Figure:
    """Probability on every rating plus the mass the judge put on non-rating tokens.

    The stored distribution is renormalised over the ratings; multiplying back by the valid mass
    gives the judge's own probabilities, so the bars add up to 1 with the "other tokens" bar.
    """
    mass = 1.0 if valid_mass is None else float(valid_mass)
    labels = [str(p) for p in points] + [OTHER]
    values = [float(distribution.get(p, 0.0)) * mass for p in points] + [max(0.0, 1.0 - mass)]
    colors = ["#4C78A8"] * len(points) + ["#BAB0AC"]
    fig = go.Figure(
        go.Bar(
            x=labels, y=values, marker_color=colors, text=[f"{v:.3f}" for v in values], textposition="outside"
        )
    )
    fig.update_layout(
        title=_safe(title), xaxis_title="rating", yaxis_title="probability", yaxis_range=[0, 1.08], **_LAYOUT
    )
    fig.update_xaxes(type="category")
    return fig


def score_histogram(weighted: Sequence[float], top: Sequence[float], points: Sequence[int]) -> go.Figure:
    """Weighted scores (bins of 0.1) against top-token ratings (one bar per rating)."""
    lo, hi = min(points) - 0.5, max(points) + 0.5
    fig = go.Figure()
    # numpy arrays travel as binary (base64) in the figure's JSON: ten times faster than lists of 20,000 floats.
    fig.add_trace(
        go.Histogram(
            x=np.asarray(top, dtype=float),
            name="top-token score",
            opacity=0.55,
            xbins={"start": lo, "end": hi, "size": 1.0},
            marker_color="#BAB0AC",
        )
    )
    fig.add_trace(
        go.Histogram(
            x=np.asarray(weighted, dtype=float),
            name="weighted score",
            opacity=0.85,
            xbins={"start": lo, "end": hi, "size": 0.1},
            marker_color="#4C78A8",
        )
    )
    fig.update_layout(
        barmode="overlay",
        xaxis_title="score",
        yaxis_title="items",
        title="Scores: weighted vs top-token",
        **_LAYOUT,
    )
    # The whole scale, always: zoomed to the data, one top-token bar would fill the plot.
    fig.update_xaxes(range=[lo, hi], dtick=1)
    return fig


def scatter_figure(
    x: Sequence[float],
    y: Sequence[float],
    labels: Sequence[object],
    x_title: str,
    y_title: str,
    title: str = "",
) -> go.Figure:
    """One point per item (hover shows the item id, escaped), drawn with WebGL; None is no point."""
    fig = go.Figure(
        go.Scattergl(
            x=to_floats(x),
            y=to_floats(y),
            mode="markers",
            text=np.array([_safe(t) for t in labels], dtype=object),
            hovertemplate="%{text}<br>%{x:.3f}, %{y:.3f}<extra></extra>",
            marker={"size": 7, "opacity": 0.6, "color": "#4C78A8"},
        )
    )
    fig.update_layout(title=_safe(title), xaxis_title=_safe(x_title), yaxis_title=_safe(y_title), **_LAYOUT)
    return fig


def curve_figure(ks: Sequence[int], series: dict[str, Sequence[float | None]], title: str) -> go.Figure:
    """Lines against k replies (e.g. Spearman and tie rate of the averaged score)."""
    fig = go.Figure()
    for name, values in series.items():
        fig.add_trace(go.Scatter(x=list(ks), y=list(values), mode="lines+markers", name=_safe(name)))
    fig.update_layout(title=_safe(title), xaxis_title="replies averaged (k)", xaxis_type="log", **_LAYOUT)
    return fig


def difference_histogram(diffs: Sequence[float]) -> go.Figure:
    """Per-item score differences between two runs."""
    fig = go.Figure(go.Histogram(x=list(diffs), nbinsx=40, marker_color="#F58518"))
    fig.update_layout(
        title="Score difference (run A − run B)", xaxis_title="difference", yaxis_title="items", **_LAYOUT
    )
    return fig


def tie_clusters_figure(clusters: dict[str, list[dict]]) -> go.Figure:
    """The largest sets of tied items per score kind; bar text says how many human ratings each hides."""
    fig = go.Figure()
    for kind, rows in clusters.items():
        hidden = [r["human_distinct"] for r in rows]
        text = [
            f"{r['size']} items" + ("" if h is None else f", {h} human ratings")
            for r, h in zip(rows, hidden, strict=True)
        ]
        fig.add_trace(
            go.Bar(
                x=[f"{r['score']:.3f}" for r in rows],
                y=[r["size"] for r in rows],
                name=_safe(kind),
                text=text,
                textposition="outside",
                hovertemplate="score %{x}: %{text}<extra>" + _safe(kind) + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        title="Largest tie clusters (weighted and top-token scores)",
        xaxis_title="shared score",
        yaxis_title="items tied",
        **_LAYOUT,
    )
    fig.update_xaxes(type="category")
    return fig


def cascade_figure(curve: Sequence[dict]) -> go.Figure:
    """A cascade's Spearman with people (95% interval as error bars) and with the strong judge, against the
    share of items each threshold sends to the strong judge."""
    share = [row["routed_share"] for row in curve]
    spearman = to_floats([row["spearman"] for row in curve])
    low = [row["interval"][0] if row["interval"] else None for row in curve]
    high = [row["interval"][1] if row["interval"] else None for row in curve]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=share,
            y=spearman,
            mode="lines+markers",
            name="with people",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": to_floats(high) - spearman,
                "arrayminus": spearman - to_floats(low),
            },
        )
    )
    fig.add_trace(
        go.Scatter(
            x=share,
            y=to_floats([row["with_strong"] for row in curve]),
            mode="lines+markers",
            name="with the strong judge",
            line={"dash": "dot"},
        )
    )
    fig.update_layout(
        title="The cascade's agreement against what it sends to the strong judge",
        xaxis_title="share of items the strong judge scores",
        yaxis_title="Spearman",
        xaxis_tickformat=".0%",
        **_LAYOUT,
    )
    return fig
