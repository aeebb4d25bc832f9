"""The paired difference of two systems' scores on the same items, with a bootstrap interval.

The gate (:mod:`judge_engine.gate`) asks whether a new system scores lower than the old one by one judge: each
item has a score for both, so the figure is the mean of the per-item differences. Items that share a source (a
group) are not independent (an article both systems summarise badly drags both down), so where the items have
enough groups whole groups are resampled; with few groups the interval of a group bootstrap rests on a handful
of atoms and is too narrow, so the items are resampled instead and the record says so (the same lesson as
:data:`judge_engine.trust.MIN_GROUPS_FOR_SIGN`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

MIN_GROUPS_FOR_GROUP_BOOTSTRAP = 20
"""Fewest groups whose resampling gives the interval; with fewer, the items are resampled (and it is said)."""

MIN_PAIRS = 5
"""Fewest items scored on both sides for which an interval is given (as metrics.MIN_BOOTSTRAP_UNITS)."""


@dataclass(frozen=True)
class PairedDifference:
    """Mean of ``new - base`` over items scored on both sides, and its percentile bootstrap interval."""

    diff: float
    """Mean per-item difference on the full data (never the bootstrap mean); NaN with no pair."""
    low: float
    """Lower bound of the interval; NaN when none is given (fewer than :data:`MIN_PAIRS` pairs)."""
    high: float
    """Upper bound of the interval; NaN when none is given."""
    n: int
    """Pairs used."""
    n_groups: int
    """Distinct groups among them (``n`` when the items have no groups)."""
    resampled: str
    """``"groups"`` (whole groups drawn) or ``"items"``."""
    note: str = ""
    """Why the interval is missing or why items were resampled although the items have groups."""


def paired_mean_difference(new: Sequence[float], base: Sequence[float], *, groups: Sequence[str] | None = None,
                           n_bootstrap: int = 2000, confidence: float = 0.95, seed: int = 0) -> PairedDifference:
    """Mean of ``new - base`` with a percentile bootstrap interval, pairs drawn together (whole groups when given
    and at least :data:`MIN_GROUPS_FOR_GROUP_BOOTSTRAP` of them).

    Pairs where either score is NaN are dropped here; the caller counts them (a missing score is never a number).
    """
    from . import _block_sizes, _resample_weights

    a, b = np.asarray(new, dtype=float), np.asarray(base, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    d = (a - b)[keep]
    labels = [str(g) for g, k in zip(groups, keep) if k] if groups is not None else None
    n = int(d.size)
    if labels is not None:
        _, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
        n_groups = int(codes.max()) + 1 if n else 0
    else:
        codes, n_groups = np.arange(n), n
    if n < MIN_PAIRS:
        return PairedDifference(float(d.mean()) if n else math.nan, math.nan, math.nan, n, n_groups, "items",
                                f"{n} item(s) scored on both sides: too few for an interval (at least {MIN_PAIRS})")
    note = ""
    if labels is not None and n_groups < n and n_groups < MIN_GROUPS_FOR_GROUP_BOOTSTRAP:
        note = (f"{n_groups} groups are too few to resample whole groups (at least "
                f"{MIN_GROUPS_FOR_GROUP_BOOTSTRAP}); the items were resampled, which ignores that items of a group "
                "go together")
        codes, n_groups_used = np.arange(n), n
    else:
        n_groups_used = n_groups
    sums = np.bincount(codes, weights=d, minlength=n_groups_used)
    counts = np.bincount(codes, minlength=n_groups_used).astype(float)
    rng = np.random.default_rng(seed)
    reps = []
    for rows in _block_sizes(n_bootstrap, n_groups_used):
        w = _resample_weights(rng, n_groups_used, rows).astype(float)
        reps.append((w @ sums) / (w @ counts))
    replicates = np.concatenate(reps)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    resampled = "groups" if n_groups_used < n else "items"
    return PairedDifference(float(d.mean()), float(low), float(high), n, n_groups, resampled, note)
