"""Figures of judge_engine.figures.hypoeval: what the HypoEval page's heatmap holds."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from judge_engine import figures


def test_per_hypothesis_heatmap_has_one_column_per_hypothesis_and_a_gap_for_a_missing_score():
    fig = figures.per_hypothesis_heatmap([[4.0, None], [2.0, 5.0], [1.0, 3.0]], hypotheses=["h1", "h2"],
                                         items=["s1", "s2", "s3"])
    assert isinstance(fig, go.Figure)
    [heat] = fig.data
    assert heat.type == "heatmap"
    assert list(heat.x) == ["h1", "h2"] and list(heat.y) == ["s1", "s2", "s3"]
    z = [list(row) for row in heat.z]
    assert math.isnan(z[0][1])  # a missing score stays missing, not a zero or the scale's bottom
    assert [z[0][0], z[1][0], z[1][1], z[2][1]] == [4.0, 2.0, 5.0, 3.0]
    assert fig.layout.xaxis.title.text == "hypothesis" and fig.layout.yaxis.title.text == "test item"
