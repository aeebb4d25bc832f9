"""Does the judge follow output length more than the humans do?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import compare, evidence
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
    """judge minus human Spearman with length (paired bootstrap; whole groups resampled at group level)."""
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
"""Fewest groups for a group-level length test (the one rule, :mod:`judge_engine.evidence`): resampling 2 to 5
groups put a judge that ignores length over the line in 13-23% of draws (bench verdicts, 100 draws), and 10
groups in 5.8% [3.7, 8.8] (issue 63), so below this the probe reports and never flags."""


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
        flagged = False
        note = (f"only {n_groups} groups: too few to resample (at least {MIN_GROUPS}), so this is shown, not tested"
                if not note else note)
    return LengthBias(n, judge_fig, human_fig, excess, p, residual, flagged, note, level)
