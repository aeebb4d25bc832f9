"""Selection figures: a candidate's fitness shrunk by what it failed to score, and the significance of a
training correlation from its figure and count alone (the stored form of a selection's evidence)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ._arrays import _as_float_array
from ._correlation import correlations
from ._records import COEFFICIENTS, _nan_to_none

MIN_SELECTION_COVERAGE = 0.8
"""Share of the items a candidate must score to be selected automatically (see :func:`coverage_adjusted`)."""


@dataclass(frozen=True)
class SelectionFitness:
    """How a candidate (hypothesis, prompt strategy, demonstration set) did on the items it was tried on.

    Attributes
    ----------
    value : float
        What selection ranks by: ``correlation * coverage``; NaN when the
        candidate is not eligible (too few items scored, undefined correlation).
    correlation : float
        The coefficient on the items it scored (NaN when undefined).
    coverage : float
        Share of the items it gave a score for.
    n_scored, n : int
        Items scored, items tried.
    reason : str
        Why ``value`` is NaN ("" when it is defined).
    """

    value: float
    correlation: float
    coverage: float
    n_scored: int
    n: int
    reason: str = ""

    @property
    def selectable(self) -> bool:
        """Whether selection may keep it on its own: eligible and agreeing with the humans (correlation > 0).

        A candidate at or below zero correlation on the training items is never
        adopted silently; a person may still accept it.
        """
        return math.isfinite(self.value) and self.correlation > 0

    def to_dict(self) -> dict[str, Any]:
        return {"value": _nan_to_none(self.value), "correlation": _nan_to_none(self.correlation),
                "coverage": round(self.coverage, 4), "n_scored": self.n_scored, "n": self.n, "reason": self.reason}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SelectionFitness":
        """The record :meth:`to_dict` stored (its nulls read back as NaN)."""
        def number(key: str) -> float:
            return math.nan if d.get(key) is None else float(d[key])
        return cls(value=number("value"), correlation=number("correlation"), coverage=float(d.get("coverage") or 0.0),
                   n_scored=int(d.get("n_scored") or 0), n=int(d.get("n") or 0), reason=str(d.get("reason") or ""))


def correlation_p_value(r: float, n: int) -> float:
    """Two-sided p-value of a correlation ``r`` over ``n`` items under no relation (NaN when undefined).

    The t-test with ``n - 2`` degrees of freedom that :func:`scipy.stats.pearsonr` performs (and that
    :func:`scipy.stats.spearmanr` uses as its approximation), computed from the figure alone, because the
    training figures a judge is chosen on are stored as a coefficient and a count, not as the items.
    """
    from scipy import stats

    if n < 3 or r is None or not math.isfinite(r):
        return math.nan
    r = min(1.0, abs(float(r)))
    if r >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 2) / (1.0 - r * r))
    return float(2.0 * stats.t.sf(t, n - 2))


def items_for_significance(r: float, *, alpha: float = 0.05, limit: int = 100_000) -> int | None:
    """Fewest items on which a positive correlation as large as ``r`` is significant at two-sided ``alpha``.

    None when ``r`` is not positive or would need more than ``limit`` items. The p-value falls with n for a
    fixed r, so a bisection over n finds the threshold.
    """
    if r is None or not math.isfinite(r) or r <= 0:
        return None
    if correlation_p_value(r, limit) >= alpha:
        return None
    low, high = 3, limit
    while low < high:
        mid = (low + high) // 2
        if correlation_p_value(r, mid) < alpha:
            high = mid
        else:
            low = mid + 1
    return low


def coverage_adjusted(correlation: float, n_scored: int, n: int, *,
                      min_coverage: float = MIN_SELECTION_COVERAGE) -> SelectionFitness:
    """A candidate's selection fitness: its correlation shrunk by the share of items it failed to score.

    A correlation computed on the items a candidate happened to score says
    nothing about the items it could not score, so a prompt that parses on 2
    of 10 items and correlates perfectly there must not beat one that scores
    all 10 slightly less well. The rule: below ``min_coverage`` (default
    :data:`MIN_SELECTION_COVERAGE`) a candidate is not eligible (value NaN);
    above it the fitness is ``correlation * coverage``, as if every unscored
    item had contributed no agreement at all.

    Examples
    --------
    >>> coverage_adjusted(0.9, 2, 10).selectable
    False
    >>> coverage_adjusted(0.6, 9, 10).value < coverage_adjusted(0.56, 10, 10).value
    True
    """
    coverage = n_scored / n if n else 0.0
    if not math.isfinite(correlation):
        return SelectionFitness(math.nan, math.nan, coverage, n_scored, n,
                                "no correlation (fewer than 2 items scored, or constant scores)")
    if coverage < min_coverage:
        return SelectionFitness(math.nan, correlation, coverage, n_scored, n,
                                f"scored {n_scored} of {n} items (needs {min_coverage:.0%})")
    return SelectionFitness(correlation * coverage, correlation, coverage, n_scored, n)


def selection_fitness(human: Sequence[float], pred: Sequence[float], *, coefficient: str = "pearson",
                      min_coverage: float = MIN_SELECTION_COVERAGE) -> SelectionFitness:
    """:func:`coverage_adjusted` of a sample-level ``coefficient`` (missing predictions are NaN/None)."""
    if coefficient not in COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {COEFFICIENTS}, not {coefficient!r}")
    p = _as_float_array(pred, "pred")
    n_scored = int(np.isfinite(p).sum())
    return coverage_adjusted(correlations(human, pred)[coefficient], n_scored, len(p), min_coverage=min_coverage)
