"""Tests behind the probes: a slice against the rest of the items, the judge's spread against the humans', and
an interval on a rate. Each is a call into :mod:`scipy.stats`; this module only fixes how the probes use it.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ._arrays import _Quiet


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def slice_difference_tests(values: Sequence[float], masks: Sequence[np.ndarray], *,
                           alternatives: Sequence[str], n_resamples: int = 999,
                           seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each slice's mean of ``values`` against the rest's, by permutation, with Benjamini-Hochberg correction.

    Many slices are looked at at once (systems, groups, length terciles, human-score bands), so the smallest
    of their raw p-values is small for any judge: only the corrected ones (``q``) may be read as findings.

    Parameters
    ----------
    values : per-item quantity (a residual, its absolute value).
    masks : one boolean mask per slice; a slice must leave at least one item outside it.
    alternatives : per slice, ``"greater"`` (the slice's mean is higher) or ``"two-sided"``.

    Returns
    -------
    (effects, p, q)
        Slice mean minus rest mean, the permutation p-values (:func:`scipy.stats.permutation_test`, items
        exchanged between the slice and the rest) and the Benjamini-Hochberg adjusted ones
        (:func:`scipy.stats.false_discovery_control`). Empty arrays for no slice.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    effects, ps = [], []
    for k, (mask, alternative) in enumerate(zip(masks, alternatives)):
        inside, rest = x[mask], x[~mask]
        effects.append(float(inside.mean() - rest.mean()))
        if np.ptp(x) == 0:  # every item has the same value: no slice can differ
            ps.append(1.0)
            continue
        found = stats.permutation_test((inside, rest), _mean_difference, permutation_type="independent",
                                       vectorized=True, n_resamples=n_resamples, alternative=alternative,
                                       random_state=np.random.default_rng([seed, k]))
        ps.append(float(found.pvalue))
    p = np.asarray(ps, dtype=float)
    q = stats.false_discovery_control(p, method="bh") if p.size else p
    return np.asarray(effects, dtype=float), p, np.asarray(q, dtype=float)


def spread_ratio(human: Sequence[float], judge: Sequence[float], *, n_bootstrap: int = 1000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float, float]:
    """The judge's standard deviation over the humans', on the same items, with a paired bootstrap interval.

    Both scores are on the aspect's scale, so a ratio far below one says the judge uses a sliver of the range
    the humans use (a near-constant judge), whether or not its scores tie exactly. NaN (all three) when the
    humans gave every item the same score or there are fewer than 3 items; NaN bounds when no interval can be
    drawn (:func:`scipy.stats.bootstrap`, percentile method, items resampled in pairs).
    """
    from scipy import stats

    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    if h.size < 3 or np.ptp(h) == 0:
        return math.nan, math.nan, math.nan

    def ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.std(b, axis=axis, ddof=1) / np.std(a, axis=axis, ddof=1)

    value = float(ratio(h, j))
    with _Quiet():
        found = stats.bootstrap((h, j), ratio, paired=True, vectorized=True, n_resamples=n_bootstrap,
                                confidence_level=confidence, method="percentile",
                                random_state=np.random.default_rng(seed))
    low, high = (float(found.confidence_interval.low), float(found.confidence_interval.high))
    return value, low, high


def rate_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson interval of a proportion (:meth:`scipy.stats.binomtest.proportion_ci`); NaN bounds for n = 0."""
    from scipy import stats

    if n <= 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)
