"""Figures of the HypoEval page: the per-hypothesis scores over the test items (plotly)."""

from __future__ import annotations

import math
from typing import Sequence

import plotly.express as px
import plotly.graph_objects as go


def per_hypothesis_heatmap(scores: Sequence[Sequence[float | None]], *, hypotheses: Sequence[str],
                           items: Sequence[str]) -> go.Figure:
    """A heatmap of each selected hypothesis' score (columns) on each test item (rows).

    ``scores[i][j]`` is item ``i``'s score under hypothesis ``j`` on the judge
    scale, None when missing (drawn as a gap, never as a value): the rows of
    :func:`judge_engine.methods.hypoeval.per_hypothesis_scores`.
    """
    z = [[math.nan if x is None else x for x in row] for row in scores]
    return px.imshow(z, x=list(hypotheses), y=list(items), aspect="auto", color_continuous_scale="Viridis",
                     labels={"x": "hypothesis", "y": "test item", "color": "score"})
