"""Attribution pruning (HD-Eval §2.3, Eq. 3): permutation importance picks the criteria decomposed next.

Importance is measured out of fold (:mod:`judge_engine.explain`); what a
fit kept (decomposed further) and pruned per layer is in
``judge.state["pruning"]`` and, flat, ``judge.state["expanded_nodes"]`` /
``judge.state["pruned_nodes"]``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...aggregate import Aggregator
from ...explain import permutation_importance_oof


def attribution_importance(aggs: Sequence[Aggregator], *, n_repeats: int) -> dict[str, dict[str, float]]:
    """Permutation importance of each criterion (out of fold), pooled over the aspect groups.

    Each group's importance (an MSE increase) is divided by the variance of
    its human scores, so groups on different ranges weigh alike.
    """
    pooled: dict[str, list[tuple[float, float]]] = {}
    for agg in aggs:
        frame = permutation_importance_oof(agg, n_repeats=n_repeats)
        var = float(np.mean(np.var(agg.y, axis=0))) or 1.0
        for feature, row in frame.iterrows():
            pooled.setdefault(str(feature), []).append((row["importance"] / var, row["std"] / var))
    return {f: {"importance": float(np.mean([v[0] for v in vals])), "std": float(np.mean([v[1] for v in vals]))}
            for f, vals in pooled.items()}


def prune_by_attribution(candidates: Sequence[str], importance: dict[str, dict[str, float]],
                         k_expand: int) -> list[str]:
    """Eq. 3: the ``k_expand`` most important candidates (current layer only) are decomposed next.

    The others are "pruned" in the paper's sense: not decomposed, but they
    stay inputs of the aggregator. Ties keep the tree order.
    """
    ranked = sorted(candidates, key=lambda c: -importance.get(c, {}).get("importance", -math.inf))
    return ranked[:k_expand]

