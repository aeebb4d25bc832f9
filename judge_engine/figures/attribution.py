"""Figures of a white-box aggregator's attributions: permutation importance, mean |SHAP|, one item's SHAP waterfall.

The numbers come from :mod:`judge_engine.explain`; the HD-Eval page and the
comparison dashboard's triage draw them.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..explain import Explanation, mean_abs_shap


def crosses_zero(importance: float | None, std: float | None) -> bool:
    """Whether a permutation importance's interval (its value ± its spread over the repeats) includes zero: the
    criterion has no measurable effect on the fit, whatever the sign of the value (a negative one is noise too)."""
    if importance is None or not np.isfinite(importance):
        return True
    spread = std if std is not None and np.isfinite(std) else 0.0
    return importance - spread <= 0.0 <= importance + spread


IMPORTANCE_AXIS = "increase of the fit's error (MSE) when the criterion's scores are shuffled"


def importance_figure(importance: pd.DataFrame, *, title: str = "Permutation importance (out of fold)",
                      labels: dict[str, str] | None = None) -> go.Figure:
    """Horizontal bars of permutation importance with the spread as error bars; a bar whose interval includes
    zero is grey and named "no measurable effect" (a negative value there is noise, not a harmful criterion)."""
    frame = importance.sort_values("importance")
    names = [(labels or {}).get(f, f) for f in frame.index]
    null = [crosses_zero(v, s) for v, s in zip(frame["importance"], frame["std"])]
    fig = go.Figure(go.Bar(x=frame["importance"], y=names, orientation="h",
                           error_x={"type": "data", "array": frame["std"].tolist()},
                           marker_color=["#bbbbbb" if n else "#4c78a8" for n in null],
                           customdata=[f"± {s:.3f}: " + ("no measurable effect (the interval includes 0)" if n
                                                         else "a measurable effect")
                                       for s, n in zip(frame["std"], null)],
                           hovertemplate="%{y}: %{x:.3f} %{customdata}<extra></extra>"))
    if any(null):
        title += f" · grey: no measurable effect ({sum(null)} of {len(null)})"
    fig.update_layout(title=title, xaxis_title=IMPORTANCE_AXIS, height=max(260, 24 * len(names)),
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
    """Waterfall of one row of a SHAP frame (see :func:`explain_row`), drawn by :func:`explanation_figure`.

    The frame carries no scale: the prediction is drawn unclipped. Prefer
    :func:`explain_prediction` with the aspect's scale.
    """
    row = frame.loc[sample_id]
    base = float(frame.attrs.get("base_value", 0.0))
    why = Explanation(str(sample_id), str(frame.attrs.get("target", "")), base,
                      {str(f): float(v) for f, v in row.items()}, base + float(row.sum()))
    return explanation_figure(why, max_features=max_features, labels=labels)


def _fmt(value: float) -> str:
    return f"{value:g}"


def explanation_figure(why: Explanation, *, max_features: int = 12,
                       labels: dict[str, str] | None = None) -> go.Figure:
    """One waterfall trace: the output's base value, each criterion's push, clipping, the score.

    The bars end at :attr:`Explanation.score`, the number in the title and in
    the verdict; when the prediction left the aspect's scale, a "clipped to
    the scale" step shows the difference instead of hiding it. The scale is
    shaded (a layout shape, not a trace). Criterion names, the aspect and
    the sample id are HTML-escaped (plotly reads tags in labels; names an LLM
    wrote are shown as text).
    """
    row = pd.Series(dict(why.contributions), dtype=float)
    order = row.abs().sort_values(ascending=False)
    top = list(order.index[:max_features])
    names = [html.escape(str((labels or {}).get(f, f))) for f in top]
    values = [float(row[f]) for f in top]
    if len(order) > max_features:
        names.append("other criteria")
        values.append(float(row.drop(top).sum()))
    has_scale = why.low is not None and why.high is not None
    scale_text = f"{_fmt(why.low)}-{_fmt(why.high)}" if has_scale else ""
    if abs(why.clipped) > 1e-12:
        names.append(f"clipped to the scale {scale_text}".strip())
        values.append(why.clipped)
    fig = go.Figure(go.Waterfall(
        orientation="h", measure=["absolute"] + ["relative"] * len(values) + ["total"],
        y=["base value"] + names + ["score" if has_scale else "prediction"], x=[why.base] + values + [0.0],
        text=[f"{why.base:.2f}"] + [f"{v:+.2f}" for v in values] + [f"{why.score:.2f}"],
        increasing={"marker": {"color": "#e45756"}}, decreasing={"marker": {"color": "#4c78a8"}}))
    # x range over the scale and every running total, so bars never run off the plot
    running = np.cumsum([why.base] + values)
    edges = [0.0, *running.tolist()] + ([why.low, why.high] if has_scale else [])
    lo, hi = min(edges), max(edges)
    pad = 0.05 * (hi - lo or 1.0)
    if has_scale:
        fig.add_vrect(x0=why.low, x1=why.high, fillcolor="#54a24b", opacity=0.08, line_width=0, layer="below")
    aspect = f" on {html.escape(why.target)}" if why.target else ""
    scale_note = f" (scale {scale_text})" if has_scale else ""
    fig.update_layout(title=f"Why sample {html.escape(str(why.sample_id))} got {why.score:.2f}{aspect}{scale_note}",
                      xaxis={"range": [lo - pad, hi + pad]}, yaxis={"autorange": "reversed"}, showlegend=False,
                      height=max(300, 26 * (len(values) + 2)), margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig
