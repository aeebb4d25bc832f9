"""Figures of the HPSS page: the search's fitness per evaluated strategy and each factor value's advantage (plotly).

Built from what :func:`judge_engine.methods.hpss.search_trace` reads out of a
run's events, live while the search runs and once it is done:

* :func:`history_frame` — one row per evaluated strategy (the table the page
  shows, and what :func:`fitness_figure` plots);
* :func:`fitness_figure` — validation fitness per evaluated strategy, coloured
  by search stage, with the best fitness so far as a step line;
* :func:`advantage_heatmap` — the advantage A_ij of each factor value (Eq. 2, then
  updated by Eq. 5-6) that steers the search's proposals (Wen et al., 2025, §3.3).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from judge_engine.methods.hpss import FACTOR_NAMES, FACTOR_TITLES, VALUE_TITLES, describe, parse_strategy

FITNESS = "fitness (ρ×100×coverage)"
"""Column of :func:`history_frame` holding a strategy's validation fitness."""

X_AXES = {"evaluation": "#", "LLM calls": "calls"}
"""The x axes :func:`fitness_figure` can use, by the name a page offers, to the column they read."""


def history_frame(evaluated: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per evaluated strategy (``search_trace(...)["evaluated"]``), its factor values written out.

    Payloads from runs recorded before coverage was counted lack ``correlation``,
    ``coverage`` and ``selectable``: the correlation is then the fitness, and a
    strategy with a fitness counts as selectable.
    """
    rows = []
    for e in evaluated:
        row = {"#": e["index"], "stage": e["stage"], FITNESS: e["fitness"],
               "ρ×100 (items scored)": e.get("correlation", e["fitness"]), "coverage": e.get("coverage"),
               "selectable": e.get("selectable", e["fitness"] is not None),
               "best so far": e["best_so_far"], "calls": e["calls"], "asked again": e.get("retried", 0),
               "read as JSON": e.get("read_json"), "read by fallback": e.get("read_text"),
               "from alternatives": e.get("from_alternatives"), "unparsed": e["unparsed"],
               "missing auxiliary": e["missing_aux"]}
        row.update(describe(parse_strategy(e["strategy"])))
        row["strategy"] = e["strategy"]
        rows.append(row)
    return pd.DataFrame(rows)


def fitness_figure(frame: pd.DataFrame, *, x: str = "evaluation") -> go.Figure:
    """Validation fitness per evaluated strategy (a :func:`history_frame`), with the best so far as a step line.

    ``x`` is a key of :data:`X_AXES`: the evaluation order, or the LLM calls spent so far.
    """
    xcol = X_AXES[x]
    fig = px.scatter(frame, x=xcol, y=FITNESS, color="stage", hover_data=["strategy", "coverage"],
                     title="Validation fitness per evaluated strategy")
    fig.add_trace(go.Scatter(x=frame[xcol], y=frame["best so far"], mode="lines", name="best so far",
                             line_shape="hv"))
    return fig


def advantage_heatmap(advantages: Mapping[str, Mapping[str, float]]) -> go.Figure:
    """Each factor value's advantage (``search_trace(...)["advantages"]``): one row per factor, in the paper's order.

    Factors with fewer values than the widest are padded with empty cells.
    """
    rows = [FACTOR_TITLES[f] for f in FACTOR_NAMES]
    width = max(len(v) for v in advantages.values())
    z, text = [], []
    for f in FACTOR_NAMES:
        values = list(advantages.get(f, {}).items())
        z.append([a for _, a in values] + [None] * (width - len(values)))
        text.append([VALUE_TITLES[f][v] for v, _ in values] + [""] * (width - len(values)))
    fig = go.Figure(go.Heatmap(z=z, y=rows, text=text, texttemplate="%{text}<br>%{z:.1f}", colorscale="RdBu",
                               zmid=0, showscale=True))
    fig.update_layout(title="Advantage per factor value (Spearman × 100)", height=380, xaxis_visible=False,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig
