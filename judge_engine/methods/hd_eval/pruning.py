"""Attribution pruning (HD-Eval §2.3, Eq. 3): permutation importance picks the criteria decomposed next.

Importance is measured out of fold (:mod:`judge_engine.explain`); what a
fit kept (decomposed further) and pruned per layer is in
``judge.state["pruning"]`` and, flat, ``judge.state["expanded_nodes"]`` /
``judge.state["pruned_nodes"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...aggregate import Aggregator
from ...metrics import MIN_SELECTION_COVERAGE
from ..base import judge_warning
from .aggregation import _finite
from .tree import tree_index


def attribution_importance(aggs: Sequence[Aggregator], *, n_repeats: int) -> dict[str, dict[str, float]]:
    """Permutation importance of each criterion (out of fold), pooled over the aspect groups.

    Each group's importance (an MSE increase) is divided by the variance of
    its human scores, so groups on different ranges weigh alike.
    """
    from ...explain import permutation_importance_oof  # pandas and sklearn: loaded when HD-Eval prunes, not to read a judge

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



@dataclass(frozen=True)
class Expansion:
    """Which criteria of layer ``layer - 1`` are decomposed into layer ``layer``, and why (Algorithm 1, line 17)."""

    layer: int
    """The layer the chosen criteria's children will form."""
    reason: str
    """``all layer-1 aspects``, ``marked by a person``, ``kept from the given tree`` or ``permutation importance``."""
    chosen: list[str]
    """Criteria to decompose (C_D^layer)."""
    pruned: list[str]
    """The other candidates: not decomposed, still inputs of the aggregator."""
    ineligible: list[str]
    """Candidates scored on too few training items to be chosen by importance."""
    candidates: dict[str, dict[str, Any]]
    """Every candidate's importance, coverage and ``in_aggregator``."""
    warning: dict[str, Any] | None = None
    """``no_expansion`` when attribution could choose none of the active candidates."""

    def to_record(self) -> dict[str, Any]:
        """The entry of ``judge.state["pruning"]``."""
        return {"layer": self.layer, "reason": self.reason, "expanded": list(self.chosen), "pruned": self.pruned,
                "ineligible": self.ineligible, "candidates": self.candidates}


def choose_expansion(tree: dict[str, Any], layer: int, importance: dict[str, dict[str, float]],
                     coverage: dict[str, float], k_expand: int) -> Expansion:
    """Algorithm 1, line 17 of the layer before: C_D^layer, the layer-``layer - 1`` criteria decomposed next.

    Layer 2 decomposes every human aspect (App. C.2); below that, criteria a
    person marked (``expand``, ``redecompose``) come first, then a layer a
    given tree already has is kept, and only then does attribution choose.

    Coverage-aware choice: a criterion scored on fewer than
    :data:`~judge_engine.metrics.MIN_SELECTION_COVERAGE` of the training
    items is not eligible for decomposition by importance (its importance
    is measured mostly on imputed means); if fewer than ``k_expand`` are
    eligible, fewer are decomposed. The sign of a criterion's correlation
    does not matter here: the aggregator learns its weight, so an
    anti-correlated criterion can be informative.
    """
    nodes = tree_index(tree)
    candidates = [nid for nid, n in nodes.items() if n["layer"] == layer - 1]
    marked = [c for c in candidates if nodes[c].get("expand") or nodes[c].get("redecompose")]
    ineligible: list[str] = []
    warning = None
    if layer == 2:
        chosen = candidates  # App. C.2: every human aspect is decomposed
        reason = "all layer-1 aspects"
    elif marked:
        chosen = marked
        reason = "marked by a person"
    elif any(n["layer"] == layer for n in nodes.values()):
        chosen = [c for c in candidates if nodes[c].get("decomposed")]
        reason = "kept from the given tree"
    else:
        active = [c for c in candidates if nodes[c].get("in_aggregator", True)]
        ineligible = [c for c in active if coverage.get(c, 0.0) < MIN_SELECTION_COVERAGE]
        chosen = prune_by_attribution([c for c in active if c not in ineligible], importance, k_expand)
        reason = "permutation importance"
        if active and not chosen:
            warning = judge_warning(
                "no_expansion", f"layer {layer}: no layer-{layer - 1} criterion was scored on at least "
                f"{MIN_SELECTION_COVERAGE:.0%} of the training items, so none was decomposed further",
                len(ineligible))
    return Expansion(layer=layer, reason=reason, chosen=list(chosen), pruned=[c for c in candidates if c not in chosen],
                     ineligible=ineligible,
                     candidates={c: {"importance": _finite(importance.get(c, {}).get("importance")),
                                     "coverage": _finite(coverage.get(c)),
                                     "in_aggregator": bool(nodes[c].get("in_aggregator", True))}
                                 for c in candidates},
                     warning=warning)
