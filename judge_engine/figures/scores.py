"""Plotly figures for the workbench: pure functions of engine records, no Streamlit.

Every function returns a :class:`plotly.graph_objects.Figure`; a page only calls
``st.plotly_chart(fig)``, and tests inspect the traces directly.

- :func:`human_histograms` -- the distribution of human scores of a dataset, one
  panel per aspect (or a single aspect).
- :func:`human_vs_judge_scatter` -- human score against judge score for one run,
  jittered so that tied scores stay visible, with a least-squares trend line and
  the ``y = x`` diagonal when both are on the same scale.
- :func:`correlation_bars` -- Pearson / Spearman / Kendall per meta-evaluation
  level with their bootstrap confidence intervals.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..records import Dataset

__all__ = ["human_histograms", "human_vs_judge_scatter", "correlation_bars", "COEFFICIENTS"]

COEFFICIENTS = ("pearson", "spearman", "kendall")
"""Correlation coefficients drawn by :func:`correlation_bars`, in this order."""

MAX_DISTINCT_FOR_BARS = 25
"""Up to this many distinct score values, a histogram shows one bar per value."""

_COLORS = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2")


def _esc(text: Any) -> str:
    """Plotly renders a subset of HTML in titles and hover text; show user text literally."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _finite(values: Sequence[Any]) -> list[float]:
    out = []
    for v in values:
        if v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def _histogram_trace(values: list[float], name: str, color: str) -> go.BaseTraceType:
    """One bar per distinct value for coarse scales, a 20-bin histogram otherwise."""
    counts = Counter(round(v, 6) for v in values)
    if len(counts) <= MAX_DISTINCT_FOR_BARS:
        xs = sorted(counts)
        return go.Bar(x=xs, y=[counts[x] for x in xs], name=name, marker_color=color,
                      hovertemplate="score %{x}<br>%{y} items<extra></extra>")
    return go.Histogram(x=values, nbinsx=20, name=name, marker_color=color,
                        hovertemplate="score %{x}<br>%{y} items<extra></extra>")


def human_histograms(dataset: Dataset, aspect: str | None = None) -> go.Figure:
    """Distribution of the human scores of ``dataset``.

    Parameters
    ----------
    dataset : Dataset
        The dataset whose ``Sample.human`` scores are counted.
    aspect : str, optional
        One aspect (a single panel). ``None`` draws one panel per aspect.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per aspect (a bar per distinct score, or a histogram when the
        scores take more than :data:`MAX_DISTINCT_FOR_BARS` values). Samples
        without a score on the aspect are left out.
    """
    aspects = [dataset.aspect(aspect)] if aspect is not None else list(dataset.aspects)
    n_cols = min(3, max(1, len(aspects)))
    n_rows = max(1, math.ceil(len(aspects) / n_cols))
    titles = []
    values_of = {}
    for a in aspects:
        values = _finite([s.human.get(a.name) for s in dataset.samples])
        values_of[a.name] = values
        titles.append(f"{_esc(a.name)} ({a.low:g}-{a.high:g}, n={len(values)})")
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=titles or None)
    for i, a in enumerate(aspects):
        row, col = i // n_cols + 1, i % n_cols + 1
        fig.add_trace(_histogram_trace(values_of[a.name], a.name, _COLORS[i % len(_COLORS)]), row=row, col=col)
        pad = (a.high - a.low) * 0.05 or 0.5
        fig.update_xaxes(range=[a.low - pad - 0.5 * _bar_width(values_of[a.name]),
                                a.high + pad + 0.5 * _bar_width(values_of[a.name])], row=row, col=col)
        fig.update_yaxes(title_text="items" if col == 1 else None, row=row, col=col)
    fig.update_layout(showlegend=False, bargap=0.1, height=260 * n_rows,
                      margin=dict(l=40, r=20, t=50, b=30),
                      title=(f"Human scores: {_esc(dataset.name)}" if aspect is None
                             else f"Human {_esc(aspect)} scores: {_esc(dataset.name)}"))
    return fig


def _bar_width(values: list[float]) -> float:
    distinct = sorted(set(round(v, 6) for v in values))
    if len(distinct) < 2 or len(distinct) > MAX_DISTINCT_FOR_BARS:
        return 0.0
    return float(min(b - a for a, b in zip(distinct, distinct[1:])))


def human_vs_judge_scatter(human: Sequence[float | None], pred: Sequence[float | None], *,
                           ids: Sequence[str] | None = None, aspect: str = "",
                           low: float | None = None, high: float | None = None,
                           jitter: float = 0.02, seed: int = 0, title: str | None = None) -> go.Figure:
    """Human score (x) against judge score (y), one point per item.

    Parameters
    ----------
    human, pred : sequence of float
        Paired scores. Pairs where either is missing (None or NaN, e.g. a reply
        that did not parse) are left out and counted in the title.
    ids : sequence of str, optional
        Sample ids shown on hover.
    aspect : str
        Aspect name for the axis titles.
    low, high : float, optional
        The aspect's scale. When given, both axes span it and the ``y = x``
        diagonal is drawn.
    jitter : float
        Uniform jitter added to each coordinate, as a fraction of the axis span,
        so tied scores do not hide each other. Hover shows the exact scores.
    seed : int
        Seed of the jitter (the figure is deterministic).
    title : str, optional
        Figure title; default names the aspect and the counts.

    Returns
    -------
    plotly.graph_objects.Figure
        Trace ``"items"`` (markers), trace ``"trend"`` (least-squares line, when
        the judge and human scores both vary) and trace ``"y = x"`` (when
        ``low``/``high`` are given).
    """
    if len(human) != len(pred):
        raise ValueError(f"human and pred must have the same length ({len(human)} != {len(pred)})")
    if ids is not None and len(ids) != len(human):
        raise ValueError(f"ids must have one entry per item ({len(ids)} != {len(human)})")
    keep = [i for i in range(len(human)) if _finite([human[i]]) and _finite([pred[i]])]
    h = np.array([float(human[i]) for i in keep], dtype=float)
    p = np.array([float(pred[i]) for i in keep], dtype=float)
    labels = [_esc(ids[i]) for i in keep] if ids is not None else [str(i) for i in keep]
    n_missing = len(human) - len(keep)

    def span(values: np.ndarray) -> float:
        if low is not None and high is not None:
            return float(high - low)
        return float(values.max() - values.min()) if len(values) else 1.0

    rng = np.random.default_rng(seed)
    jx = rng.uniform(-1, 1, len(h)) * jitter * (span(h) or 1.0)
    jy = rng.uniform(-1, 1, len(p)) * jitter * (span(p) or 1.0)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=h + jx, y=p + jy, mode="markers", name="items",
        marker=dict(size=7, opacity=0.6, color=_COLORS[0]),
        customdata=np.column_stack([h, p]) if len(h) else None, text=labels,
        hovertemplate="sample %{text}<br>human %{customdata[0]:.3g}<br>judge %{customdata[1]:.3g}<extra></extra>"))
    if len(h) >= 2 and np.ptp(h) > 0 and np.ptp(p) > 0:
        slope, intercept = np.polyfit(h, p, 1)
        xs = np.array([h.min(), h.max()])
        fig.add_trace(go.Scatter(x=xs, y=slope * xs + intercept, mode="lines", name="trend",
                                 line=dict(color=_COLORS[1], width=2),
                                 hovertemplate=f"judge = {slope:.2f} x human + {intercept:.2f}<extra></extra>"))
    if low is not None and high is not None:
        fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="y = x",
                                 line=dict(color="grey", dash="dash", width=1), hoverinfo="skip"))
        pad = (high - low) * 0.06
        fig.update_xaxes(range=[low - pad, high + pad])
        fig.update_yaxes(range=[low - pad, high + pad])
    label = _esc(aspect) if aspect else "score"
    missing = f", {n_missing} without a judge score" if n_missing else ""
    fig.update_layout(
        title=_esc(title) if title else f"Human vs judge {label} ({len(h)} items{missing})",
        xaxis_title=f"human {label}", yaxis_title=f"judge {label}",
        height=420, margin=dict(l=50, r=20, t=50, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig


def correlation_bars(levels: Mapping[str, Mapping[str, Any] | None], *,
                     coefficients: Sequence[str] = COEFFICIENTS, natural: str | None = None,
                     title: str = "Correlation with human scores") -> go.Figure:
    """Grouped bars: one trace per coefficient, one bar per level, with CI whiskers.

    Parameters
    ----------
    levels : mapping
        ``{level: correlations}`` as in a run summary's ``levels``: each value has
        ``pearson``, ``spearman``, ``kendall`` (float or None) and ``*_ci``
        (``[low, high]``, entries may be None).
    coefficients : sequence of str
        Which coefficients to draw.
    natural : str, optional
        The dataset's natural level; drawn first and marked "(natural)".

    Returns
    -------
    plotly.graph_objects.Figure
        One ``go.Bar`` trace per coefficient; undefined values are gaps.
    """
    order = [lv for lv in levels if levels[lv]]
    if natural in order:
        order.remove(natural)
        order.insert(0, natural)
    names = [f"{lv} (natural)" if lv == natural else lv for lv in order]
    fig = go.Figure()
    for k, coef in enumerate(coefficients):
        ys, plus, minus = [], [], []
        for lv in order:
            c = levels[lv]
            v = c.get(coef)
            lo, hi = (list(c.get(f"{coef}_ci") or [None, None]) + [None, None])[:2]
            ys.append(v if v is not None else None)
            plus.append(hi - v if v is not None and hi is not None else 0.0)
            minus.append(v - lo if v is not None and lo is not None else 0.0)
        fig.add_trace(go.Bar(x=names, y=ys, name=coef, marker_color=_COLORS[k % len(_COLORS)],
                             error_y=dict(type="data", symmetric=False, array=plus, arrayminus=minus),
                             hovertemplate=f"{coef} %{{y:.3f}}<extra>%{{x}}</extra>"))
    fig.update_layout(barmode="group", title=title, yaxis_title="correlation", height=360,
                      yaxis=dict(range=[-1, 1]), margin=dict(l=50, r=20, t=50, b=40))
    return fig


# --------------------------------------------------------------------------- comparison of runs


def _run_labels(frame: Any) -> list[str]:
    return [_esc(f"#{r} {m}") for r, m in zip(frame["run"], frame["method"])]


def comparison_bars(frame: Any, *, statistic: str = "spearman", ceiling: float | None = None) -> go.Figure:
    """One bar per run: the correlation with its CI as error bars; the human ceiling as a dashed line."""
    values = [float("nan") if v is None else float(v) for v in frame[statistic]]
    cis = [ci if ci is not None else [None, None] for ci in frame[f"{statistic} CI"]]
    # no interval, no bar (a zero-width bar reads as certainty: issue 63, one article's 16 items)
    upper = [(hi - v) if hi is not None and v == v else None for v, (lo, hi) in zip(values, cis)]
    lower = [(v - lo) if lo is not None and v == v else None for v, (lo, hi) in zip(values, cis)]
    colors = [_COLORS[2] if best else _COLORS[0] for best in frame["best"]]
    fig = go.Figure(go.Bar(x=_run_labels(frame), y=values, marker_color=colors,
                           error_y=dict(type="data", array=upper, arrayminus=lower, visible=True),
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    if ceiling is not None and math.isfinite(ceiling):
        fig.add_hline(y=ceiling, line_dash="dash", line_color="gray",
                      annotation_text=f"human ceiling {ceiling:.3f}", annotation_position="top left")
    level = frame["level"].iloc[0] if len(frame) else ""
    fig.update_layout(title=f"{statistic.capitalize()} with human scores ({level} level, 95% CI); best in green",
                      yaxis=dict(range=[-1, 1], title=statistic), height=380, margin=dict(l=40, r=20, t=50, b=40))
    return fig


def correlation_vs_cost(frame: Any, *, statistic: str = "spearman", cost: str = "score calls") -> go.Figure:
    """Correlation against cost (log x axis), one point per run."""
    x = [max(float(c), 0.0) for c in frame[cost]]
    y = [float("nan") if v is None else float(v) for v in frame[statistic]]
    fig = go.Figure(go.Scatter(x=[v if v > 0 else None for v in x], y=y, mode="markers+text",
                               text=_run_labels(frame), textposition="top center",
                               marker=dict(size=11, color=_COLORS[1]),
                               hovertemplate="%{text}<br>" + cost + " %{x}<br>" + statistic + " %{y:.3f}<extra></extra>"))
    fig.update_layout(title=f"{statistic.capitalize()} against {cost} (runs with no cost are not drawn)",
                      xaxis=dict(type="log", title=f"{cost} (log scale)"), yaxis=dict(title=statistic),
                      height=380, margin=dict(l=40, r=20, t=50, b=40))
    return fig


def _paired_counts(human: Sequence[float], pred: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct finite (human, judge) pairs and how many items share each, in order of first appearance."""
    h = np.array([math.nan if v is None else v for v in human], dtype=float)
    p = np.array([math.nan if v is None else v for v in pred], dtype=float)
    keep = np.isfinite(h) & np.isfinite(p)
    if not keep.any():
        return np.empty(0), np.empty(0), np.empty(0, dtype=int)
    pairs, first, counts = np.unique(np.column_stack([h[keep], p[keep]]), axis=0, return_index=True,
                                     return_counts=True)
    order = np.argsort(first, kind="stable")
    return pairs[order, 0], pairs[order, 1], counts[order]


def scatter_grid(human: Sequence[float], scores: Mapping[str, Sequence[float]], *, low: float, high: float,
                 columns: int = 3) -> go.Figure:
    """Human (x) against each judge (y), one panel per run, with the y = x diagonal.

    Parameters
    ----------
    human : sequence of float
        Human score per item.
    scores : mapping of str to sequence of float
        Judge score per item (same order as ``human``) for each run, by panel title; None or NaN is a
        missing score, left out of the panel.
    low, high : float
        The aspect's scale (the diagonal's ends).
    columns : int
        Panels per row.

    Returns
    -------
    plotly.graph_objects.Figure
        Per run, one marker trace and one diagonal trace. Items with the same (human, judge) pair share one
        marker whose area grows with their count (hover gives the count): judges on a 1-5 scale give at
        most 25 markers per panel instead of one per item, which overlapping markers hid anyway and the
        browser had to draw one by one (1,600 items and four runs took about a second).
    """
    names = list(scores)
    rows = max(1, math.ceil(len(names) / columns))
    fig = make_subplots(rows=rows, cols=min(columns, max(1, len(names))),
                        subplot_titles=[_esc(n) for n in names] or None)
    for k, name in enumerate(names):
        r, c = k // columns + 1, k % columns + 1
        xs, ys, counts = _paired_counts(human, scores[name])
        # area proportional to the count, from 6 px (one item) to 30 px (the panel's most frequent pair)
        sizes = 6 + 24 * np.sqrt((counts - 1) / max(1, counts.max(initial=1) - 1)) if len(counts) else counts
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", customdata=counts,
                                 marker=dict(size=sizes, opacity=0.6, color=_COLORS[k % len(_COLORS)]),
                                 name=_esc(name), showlegend=False,
                                 hovertemplate="human %{x}<br>judge %{y:.2f}<br>%{customdata} item(s)<extra></extra>"),
                      row=r, col=c)
        fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", line=dict(dash="dot", color="gray"),
                                 showlegend=False, hoverinfo="skip"), row=r, col=c)
    fig.update_layout(title="Human against judge scores (marker area: items with that pair)", height=300 * rows,
                      margin=dict(l=40, r=20, t=60, b=30))
    return fig


def score_histograms(human: Sequence[float], scores: Mapping[str, Sequence[float]]) -> go.Figure:
    """Distribution of each judge's scores next to the human scores (overlaid, normalised).

    Parameters
    ----------
    human : sequence of float
        Human score per item.
    scores : mapping of str to sequence of float
        Judge scores per run, by trace name; None or NaN is left out.

    Returns
    -------
    plotly.graph_objects.Figure
        One ``go.Bar`` trace for the humans, then one per run, each bar the share of that trace's scores:
        one bar per distinct value when all traces together take at most :data:`MAX_DISTINCT_FOR_BARS`
        values, else 20 bins shared by every trace. The counts are made here rather than by the
        browser's histogram binning, which slowed the Compare page on large runs.
    """
    series = [("human", _finite(human), "gray", 0.6)]
    series += [(_esc(name), _finite(values), _COLORS[k % len(_COLORS)], 0.55)
               for k, (name, values) in enumerate(scores.items())]
    distinct = sorted({round(v, 6) for _, values, _, _ in series for v in values})
    coarse = len(distinct) <= MAX_DISTINCT_FOR_BARS
    if not coarse:
        edges = np.histogram_bin_edges([v for _, values, _, _ in series for v in values], bins=20)
    fig = go.Figure()
    for name, values, color, opacity in series:
        if coarse:
            counts = Counter(round(v, 6) for v in values)
            xs, ys, width = distinct, [counts[x] for x in distinct], None
        else:
            ys, _ = np.histogram(values, bins=edges)
            xs, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])
        share = np.asarray(ys, dtype=float) / max(1, len(values))
        fig.add_trace(go.Bar(x=xs, y=share, width=width, name=name, opacity=opacity, marker_color=color,
                             customdata=np.asarray(ys), hovertemplate="score %{x}<br>%{y:.1%} of items (%{customdata})"
                             "<extra>%{fullData.name}</extra>"))
    fig.update_layout(barmode="overlay", bargap=0.0 if not coarse else 0.2,
                      title="Score distributions: judges and humans", height=360,
                      xaxis_title="score", yaxis_title="share of items", margin=dict(l=40, r=20, t=50, b=40))
    return fig


def report_html(title: str, tables: Mapping[str, Any], figures: Sequence[go.Figure], notes: Sequence[str] = ()) -> str:
    """A self-contained HTML page (tables and interactive figures) for sharing a comparison."""
    import html

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:3px 6px}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(n)}</p>" for n in notes]
    for heading, frame in tables.items():
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(frame.to_html(index=False, escape=True, na_rep="–", float_format=lambda x: f"{x:.3f}"))
    for k, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs="inline" if k == 0 else False))
    parts.append("</body></html>")
    return "\n".join(parts)
