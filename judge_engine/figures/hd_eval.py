"""Figures of the HD-Eval page: the criteria tree and correlation by layer (plotly).

The attribution figures (permutation importance, SHAP bar and waterfall)
are in :mod:`judge_engine.figures.attribution`.
"""

from __future__ import annotations

import html
from typing import Any, Mapping

import plotly.graph_objects as go

PROVENANCE = {"aspect": "human aspect", "llm": "LLM", "human": "human-added"}
PRUNED_COLOR = "#d0d0d0"


def provenance(node: Mapping[str, Any]) -> str:
    """How a node came to be: human aspect, LLM, LLM then human-edited, or human-added."""
    label = PROVENANCE.get(node.get("origin", "llm"), "LLM")
    return f"{label}, human-edited" if node.get("edited") and node.get("origin") == "llm" else label


def tree_sunburst(tree: Mapping[str, Any], importance: Mapping[str, Mapping[str, float]] | None = None,
                  *, root: str = "task") -> go.Figure:
    """The criteria tree as a sunburst: layer 1 inside, children outward.

    Colour = permutation importance (darker is more important); nodes taken
    out of the aggregator are grey; deleted nodes are not drawn.
    """
    nodes = [n for n in tree["nodes"] if not n.get("deleted")]
    alive = {n["id"] for n in nodes}
    nodes = [n for n in nodes if n.get("parent") is None or n["parent"] in alive]
    imp = {k: max(0.0, float(v.get("importance") or 0.0)) for k, v in (importance or {}).items()}
    top = max(imp.values(), default=0.0) or 1.0
    ids, labels, parents, colors, hover = [root], [root], [""], ["#ffffff"], ["the evaluation task"]
    for n in nodes:
        ids.append(n["id"])
        labels.append(n["name"])
        parents.append(n["parent"] or root)
        if not n.get("in_aggregator", True):
            colors.append(PRUNED_COLOR)
        else:
            share = imp.get(n["id"], 0.0) / top
            colors.append(f"rgba(76,120,168,{0.15 + 0.85 * share:.2f})")
        flags = [provenance(n)] + (["removed from the aggregator"] if not n.get("in_aggregator", True) else []) \
            + (["marked to expand"] if n.get("expand") else []) + (["to re-decompose"] if n.get("redecompose") else [])
        hover.append(f"{html.escape(n.get('definition', ''))}<br><i>{', '.join(flags)}</i>"
                     f"<br>importance {imp.get(n['id'], 0.0):.3f}")
    fig = go.Figure(go.Sunburst(ids=ids, labels=[html.escape(x) for x in labels], parents=parents,
                                marker={"colors": colors, "line": {"width": 1, "color": "#ffffff"}},
                                hovertext=hover, hoverinfo="label+text", insidetextorientation="radial",
                                maxdepth=4))
    fig.update_layout(margin={"l": 0, "r": 0, "t": 10, "b": 0}, height=520)
    return fig


def layer_correlation_figure(layers: list[Mapping[str, Any]], aspect: str) -> go.Figure:
    """Out-of-fold training correlation of the aggregator after each layer: does decomposition help?"""
    xs = [f"layer ≤ {l['layer']} ({len(l['features'])} criteria)" for l in layers]
    fig = go.Figure()
    for stat, color in (("pearson", "#4c78a8"), ("spearman", "#f58518")):
        ys = [((l.get("cv") or {}).get(aspect) or {}).get(stat) for l in layers]
        fig.add_bar(x=xs, y=ys, name=stat.capitalize(), marker_color=color)
    fig.update_layout(barmode="group", yaxis_title=f"{aspect}: out-of-fold r on train", height=320,
                      margin={"l": 10, "r": 10, "t": 20, "b": 10})
    return fig


def node_score_histogram(scores: list[float]) -> go.Figure:
    """Distribution of one criterion's 1-5 scores on the training split (imputed values included)."""
    fig = go.Figure(go.Histogram(x=scores, xbins={"start": 0.5, "end": 5.5, "size": 1}, marker_color="#4c78a8"))
    fig.update_layout(height=220, xaxis_title="criterion score on train (1-5)", yaxis_title="items",
                      margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return fig
