"""One coefficient over items with its interval, and the agreement of repeated scorings of the same items."""

from __future__ import annotations

import math
from typing import Hashable, Sequence

import numpy as np

from ._arrays import _codes, _Quiet
from ._bootstrap import MIN_BOOTSTRAP_UNITS, _resampled_spearman, _rowwise_correlations, grouped_tail
from ._correlation import correlation, correlations
from ._records import COEFFICIENTS, Correlation
from ._resample import _resample_weights, group_resamples


def sample_correlation(x: Sequence[float], y: Sequence[float], *, statistic: str = "spearman",
                       n_bootstrap: int = 1000, confidence: float = 0.95, seed: int | None = 0,
                       groups: Sequence[Hashable] | None = None) -> Correlation:
    """One coefficient over items (sample level) with its bootstrap percentile interval.

    The same point estimate and resampling as :func:`meta_evaluate` at sample level, computing only the
    asked coefficient per resample: meta_evaluate computes all three, and Kendall's tau, one scipy call per
    resample, is most of its time. Where ``groups`` is given and a group holds two items, whole groups are
    resampled, as meta_evaluate does. Items where either side is missing are dropped; with fewer than
    :data:`MIN_BOOTSTRAP_UNITS` units (items, or groups) the bounds are NaN.
    """
    if statistic not in COEFFICIENTS:
        raise ValueError(f"statistic must be one of {COEFFICIENTS}, got {statistic!r}")
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    value = correlation(a, b, statistic) if a.size else math.nan
    low = high = math.nan
    codes, labels = _codes([k for k, kept in zip(groups, keep) if kept], int(a.size), "groups") \
        if groups is not None else (None, [])
    grouped = codes is not None and len(labels) < a.size
    units = len(labels) if grouped else a.size
    if n_bootstrap > 0 and units >= MIN_BOOTSTRAP_UNITS and math.isfinite(value):
        rng = np.random.default_rng(seed)
        if grouped:
            buckets, _ = group_resamples(codes, len(labels), n_bootstrap, rng)
            col = COEFFICIENTS.index(statistic)
            reps = np.concatenate([_rowwise_correlations(a[idx], b[idx], only=statistic)[:, col] for idx in buckets])
        elif statistic == "spearman":  # the same resamples, as draw counts: no resample is sorted
            reps = _resampled_spearman(a, b, _resample_weights(rng, a.size, n_bootstrap))
        else:
            idx = rng.integers(0, a.size, size=(n_bootstrap, a.size))
            reps = _rowwise_correlations(a[idx], b[idx], only=statistic)[:, COEFFICIENTS.index(statistic)]
        alpha = grouped_tail(confidence, units) if grouped else (1.0 - confidence) / 2.0
        with _Quiet():
            low, high = np.nanpercentile(reps, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return Correlation(float(value), float(low), float(high))


def retest_agreement(scores: np.ndarray, *, statistic: str = "spearman", n_bootstrap: int = 1000,
                     confidence: float = 0.95, seed: int | None = 0) -> tuple[Correlation, int]:
    """Test-retest agreement of repeated scorings: the mean pairwise coefficient between repeats.

    ``scores`` has one row per repeat and one column per item; items missing in any repeat are dropped.
    The interval resamples items (the same items for every pair). Returns the figure and the number of
    items it rests on; with fewer than two repeats, or :data:`MIN_BOOTSTRAP_UNITS` items, bounds are NaN.
    """
    if statistic not in COEFFICIENTS:
        raise ValueError(f"statistic must be one of {COEFFICIENTS}, got {statistic!r}")
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2:
        return Correlation(math.nan, math.nan, math.nan), int(x.shape[-1]) if x.ndim else 0
    x = x[:, np.all(np.isfinite(x), axis=0)]
    n = x.shape[1]
    pairs = [(a, b) for a in range(x.shape[0]) for b in range(a + 1, x.shape[0])]
    with _Quiet():
        value = float(np.nanmean([correlations(x[a], x[b])[statistic] for a, b in pairs])) if n >= 2 else math.nan
    low = high = math.nan
    if n_bootstrap > 0 and n >= MIN_BOOTSTRAP_UNITS and math.isfinite(value):
        idx = np.random.default_rng(seed).integers(0, n, size=(n_bootstrap, n))
        col = COEFFICIENTS.index(statistic)
        reps = np.stack([_rowwise_correlations(x[a][idx], x[b][idx], only=statistic)[:, col] for a, b in pairs])
        alpha = (1.0 - confidence) / 2.0
        with _Quiet():
            means = np.nanmean(reps, axis=0)
            low, high = np.nanpercentile(means, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return Correlation(value, float(low), float(high)), n
