"""Human preference-guided aggregation (HD-Eval §2.2, Eq. 2, App. C.3): the white-box aggregator.

One multi-output model of :mod:`judge_engine.aggregate` per group of aspects
sharing a range (footnote 11), from all criterion scores to the human scores.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...aggregate import Aggregator
from ...records import Aspect, Sample


def aspect_groups(aspects: Sequence[Aspect]) -> list[list[Aspect]]:
    """Aspects sharing a human range; each group gets its own aggregator (footnote 11)."""
    groups: dict[tuple[float, float], list[Aspect]] = {}
    for a in aspects:
        groups.setdefault((a.low, a.high), []).append(a)
    return list(groups.values())


def fit_aggregator(samples: Sequence[Sample], scores: dict[str, list[float]],
                                  features: Sequence[str], aspects: Sequence[Aspect], *, kind: str,
                                  random_state: int) -> list[Aggregator]:
    """Eq. 2: one multi-output regressor per aspect group, from all criterion scores to the human scores."""
    x = np.array([[scores[f][i] for f in features] for i in range(len(samples))], dtype=float)
    x = x.reshape(len(samples), len(features))
    aggs = []
    for group in aspect_groups(aspects):
        y = [[s.human[a.name] for a in group] for s in samples]
        aggs.append(Aggregator.fit(x, y, kind=kind, features=list(features), targets=[a.name for a in group],
                                   random_state=random_state))
    return aggs


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _clean_corr(corr: dict[str, dict[str, float]]) -> dict[str, dict[str, float | None]]:
    return {t: {k: _finite(v) for k, v in c.items()} for t, c in corr.items()}

