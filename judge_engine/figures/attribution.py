"""Figures of a white-box aggregator's attributions: permutation importance, mean |SHAP|, one item's SHAP waterfall.

The numbers come from :mod:`judge_engine.explain`; the HD-Eval page and the
comparison dashboard's triage draw them.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from ..explain import mean_abs_shap


def importance_figure(importance: pd.DataFrame, *, title: str = "Permutation importance (out of fold)",
                      labels: dict[str, str] | None = None) -> go.Figure:
    """Horizontal bars of permutation importance with the spread as error bars."""
    frame = importance.sort_values("importance")
    names = [(labels or {}).get(f, f) for f in frame.index]
    fig = go.Figure(go.Bar(x=frame["importance"], y=names, orientation="h",
                           error_x={"type": "data", "array": frame["std"].tolist()},
                           marker_color="#4c78a8"))
    fig.update_layout(title=title, xaxis_title="increase of MSE when shuffled", height=max(260, 24 * len(names)),
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def shap_bar_figure(frame: pd.DataFrame, *, title: str = "Mean |SHAP|",
                    labels: dict[str, str] | None = None) -> go.Figure:
    """Mean absolute SHAP value per feature."""
    series = mean_abs_shap(frame).iloc[::-1]
    names = [(labels or {}).get(f, f) for f in series.index]
    fig = go.Figure(go.Bar(x=series.values, y=names, orientation="h", marker_color="#f58518"))
    fig.update_layout(title=title, xaxis_title="mean |SHAP value|", height=max(260, 24 * len(names)),
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def shap_waterfall_figure(frame: pd.DataFrame, sample_id: str, *, max_features: int = 12,
                          labels: dict[str, str] | None = None) -> go.Figure:
    """Waterfall of one sample: base value, each feature's push, the prediction.

    Criterion names and the sample id are HTML-escaped (plotly reads tags in
    labels; names an LLM wrote are shown as text).
    """
    row = frame.loc[sample_id]
    order = row.abs().sort_values(ascending=False)
    top = list(order.index[:max_features])
    rest = float(row.drop(top).sum()) if len(order) > max_features else 0.0
    names = [html.escape(str((labels or {}).get(f, f))) for f in top] + (
        ["other criteria"] if len(order) > max_features else [])
    values = [float(row[f]) for f in top] + ([rest] if len(order) > max_features else [])
    base = float(frame.attrs.get("base_value", 0.0))
    fig = go.Figure(go.Waterfall(
        orientation="h", measure=["absolute"] + ["relative"] * len(values) + ["total"],
        y=["base value"] + names + ["prediction"], x=[base] + values + [0.0],
        text=[f"{base:.2f}"] + [f"{v:+.2f}" for v in values] + [f"{base + sum(values):.2f}"],
        increasing={"marker": {"color": "#e45756"}}, decreasing={"marker": {"color": "#4c78a8"}}))
    fig.update_layout(title=f"Why sample {html.escape(str(sample_id))} got {base + sum(values):.2f}",
                      yaxis={"autorange": "reversed"},
                      height=max(300, 26 * (len(values) + 2)), margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig
