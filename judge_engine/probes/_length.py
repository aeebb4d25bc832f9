"""Does the judge follow output length more than the humans do?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from scipy import stats

from .. import compare, evidence, metrics
from ._common import ALPHA, MIN_ITEMS, N_BOOTSTRAP, Figure, _finite, _spearman, rank_difference


@dataclass(frozen=True)
class LengthBias:
    """How the judge's and the humans' scores follow output length (in words), on the same items."""

    n: int
    judge: Figure
    """Spearman of the judge's score with length (at ``level``)."""
    human: Figure
    """Spearman of the human score with length."""
    excess: float | None
    """judge minus human Spearman with length (paired bootstrap; whole groups resampled at group level; below
    :data:`MIN_GROUPS` groups the mean of the groups' own differences, tested by flipping their signs)."""
    excess_p: float | None
    """Two-sided p-value of ``excess``."""
    residual: Figure
    """Spearman of (judge rank minus human rank) with length: positive when the judge over-scores longer outputs
    relative to the humans, negative when it under-scores them."""
    flagged: bool
    """The judge follows length significantly more than the humans do (``excess`` > 0, p < :data:`ALPHA`)."""
    note: str = ""
    level: str = "sample"
    """``sample`` (over all items) or ``group`` (within each group, averaged: longer outputs of the same input)."""

    @property
    def direction(self) -> str:
        """``longer over-scored``, ``longer under-scored`` or ``no direction`` (the residual's interval spans 0)."""
        low, high = self.residual.ci
        if low is not None and low > 0:
            return "longer over-scored"
        if high is not None and high < 0:
            return "longer under-scored"
        return "no direction"


MIN_GROUPS = evidence.MIN_GROUPS_FOR_GROUP_CORRELATION
"""Fewest groups for the group-level paired bootstrap (the one rule, :mod:`judge_engine.evidence`): resampling 2 to
5 groups put a judge that ignores length over the line in 13-23% of draws (bench verdicts, 100 draws), and 10
groups in 5.8% [3.7, 8.8] (issue 63). From :data:`judge_engine.evidence.MIN_UNITS` groups to this, the groups'
own differences are tested by flipping their signs (:func:`_sign_flip`)."""

SIGN_FLIPS = 9999
"""Sign patterns drawn by the sign-flip test; up to 13 groups every one of the 2^k patterns is enumerated (exact)."""


def _sign_flip(length: np.ndarray, j: np.ndarray, h: np.ndarray, groups: Sequence[str],
               seed: int) -> tuple[float | None, float | None, int]:
    """Mean over groups of (judge minus human within-group Spearman with length), its two-sided sign-flip p-value and
    the groups it rests on (those where both are defined).

    Where the judge follows length no more than the humans, a group's difference is as likely to be d as -d (the
    lengths' ranks reversed within a group swap the signs of both correlations), so flipping signs gives the exact
    law of the mean whatever the number of groups: a bootstrap over 10 groups is too narrow (5.8% [3.7, 8.8]
    false alarms, issue 63)."""
    codes, labels = metrics._codes(list(groups), length.size, "groups")
    col = metrics.COEFFICIENTS.index("spearman")
    d = (metrics._group_table(length, j, codes, len(labels))[:, col]
         - metrics._group_table(length, h, codes, len(labels))[:, col])
    d = d[np.isfinite(d)]
    if d.size < evidence.MIN_UNITS:
        return (float(d.mean()) if d.size else None), None, int(d.size)
    found = stats.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                                   n_resamples=SIGN_FLIPS, alternative="two-sided",
                                   random_state=np.random.default_rng(seed))
    return float(d.mean()), float(found.pvalue), int(d.size)


def length_bias(lengths: Sequence[float], human: Sequence[float], judge: Sequence[float], *,
                seed: int = 0, level: str = "sample", groups: Sequence[str] | None = None) -> LengthBias:
    """Does the judge follow output length more than the humans? Items are the ones both sides scored.

    At ``level="group"`` every figure is a within-group one and the bootstrap draws whole groups, so the items
    of one source, which are not independent, are never counted as independent evidence.
    """
    length, h, j = (np.asarray(x, dtype=float) for x in (lengths, human, judge))
    n = int(h.size)
    empty = Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return LengthBias(n, empty, empty, None, None, empty, False,
                          note=f"{n} items both scored: too few for a length probe (at least {MIN_ITEMS})", level=level)
    if np.ptp(length) == 0:
        return LengthBias(n, empty, empty, None, None, empty, False,
                          note=f"all {n} outputs have the same length ({int(length[0])} words)", level=level)
    g = list(groups) if level == "group" and groups is not None else None
    judge_fig = _spearman(length, j, seed=seed, level=level, groups=g)
    human_fig = _spearman(length, h, seed=seed, level=level, groups=g)
    residual = _spearman(length, rank_difference(h, j, g), seed=seed, level=level, groups=g)
    excess, p = compare.paired_bootstrap(length, j, h, statistic="spearman", n_bootstrap=N_BOOTSTRAP, seed=seed,
                                         level=level, groups=g)
    excess, p = _finite(excess), _finite(p)
    flagged = bool(excess is not None and p is not None and excess > 0 and p < ALPHA)
    note = "" if judge_fig.value is not None else "the judge gave every item the same score"
    n_groups = len(set(g)) if g is not None else 0
    if g is not None and n_groups < MIN_GROUPS:
        excess, p, used = _sign_flip(length, j, h, g, seed)
        flagged = bool(excess is not None and p is not None and excess > 0 and p < ALPHA)
        if not note:
            note = (f"{used} groups: tested by flipping the signs of the groups' own differences (exact sign-flip "
                    f"test; a bootstrap needs at least {MIN_GROUPS} groups)" if p is not None else
                    f"only {used} groups where both sides vary: too few to test (at least {evidence.MIN_UNITS}), "
                    "so this is shown, not tested")
    return LengthBias(n, judge_fig, human_fig, excess, p, residual, flagged, note, level)
