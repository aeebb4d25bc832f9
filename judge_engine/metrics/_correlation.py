"""Pearson, Spearman and Kendall tau-b of one set of pairs (:mod:`judge_engine.metrics`' conventions): all three
at once, or one alone."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ._arrays import _as_float_array, _is_constant, _nan_result, _Quiet
from ._records import COEFFICIENTS


def correlations(human: Sequence[float], pred: Sequence[float]) -> dict[str, float]:
    """Pearson, Spearman and Kendall tau-b correlations of one set of pairs.

    Parameters
    ----------
    human, pred : sequence of float
        Paired scores, same length. Pairs where either value is ``None`` or NaN
        are dropped.

    Returns
    -------
    dict
        ``{"pearson": r, "spearman": rho, "kendall": tau_b}``. All three are
        NaN when fewer than two pairs remain or either side is constant. No
        scipy warning escapes.
    """
    pairs = _correlatable(human, pred)
    if pairs is None:
        return _nan_result()
    with _Quiet():
        return {m: float(_COEFFICIENT[m](*pairs)) for m in COEFFICIENTS}


def _correlatable(human: Sequence[float], pred: Sequence[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """The pairs where both sides are finite, or None when no coefficient is defined on them (fewer than two,
    or either side constant)."""
    h = _as_float_array(human, "human")
    p = _as_float_array(pred, "pred")
    if h.shape != p.shape:
        raise ValueError(f"human and pred differ in length: {h.size} != {p.size}")
    keep = np.isfinite(h) & np.isfinite(p)
    h, p = h[keep], p[keep]
    if h.size < 2 or _is_constant(h) or _is_constant(p):
        return None
    return h, p


def _spearman(h: np.ndarray, p: np.ndarray) -> float:
    # Pearson of the average ranks, which is what scipy's spearmanr computes, without its input checks and
    # p-value: a probe takes one per slice, hundreds per run
    from scipy import stats

    return float(np.corrcoef(stats.rankdata(h), stats.rankdata(p))[0, 1])


def _pearson(h: np.ndarray, p: np.ndarray) -> float:
    from scipy import stats

    return stats.pearsonr(h, p)[0]


def _kendall(h: np.ndarray, p: np.ndarray) -> float:
    from scipy import stats

    return stats.kendalltau(h, p, variant="b")[0]


_COEFFICIENT = {"pearson": _pearson, "spearman": _spearman, "kendall": _kendall}


def correlation(human: Sequence[float], pred: Sequence[float], coefficient: str) -> float:
    """One coefficient of :func:`correlations` (same pairs dropped, same NaN), without computing the others:
    where hundreds of slices need only a Spearman, Kendall's tau is most of the time spent."""
    if coefficient not in _COEFFICIENT:
        raise ValueError(f"unknown coefficient {coefficient!r}; one of {', '.join(COEFFICIENTS)}")
    pairs = _correlatable(human, pred)
    if pairs is None:
        return math.nan
    with _Quiet():
        return float(_COEFFICIENT[coefficient](*pairs))
