"""Did the judge's scores collapse: few distinct values, or a spread far narrower than the humans'?"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import metrics
from ._common import N_BOOTSTRAP, Figure, _finite, _interval

SPREAD_FLOOR = 0.25
"""A judge whose standard deviation is below this share of the humans' (the whole interval below it) uses a
sliver of their range: collapsed, whether or not its scores tie exactly (a probability-weighted judge whose
scores all lie within 3.96-4.04 never ties)."""


@dataclass(frozen=True)
class Spread:
    """How a set of scores spreads over the scale."""

    n: int
    distinct: int
    """How many different scores were given (at 6 decimals)."""
    modal: float | None
    """The most frequent score (the lowest, on a tie)."""
    modal_share: float | None
    """Share of items that got it."""
    sd: float | None = None
    """Standard deviation (None under 2 items)."""


@dataclass(frozen=True)
class Collapse:
    """The judge's spread of scores beside the humans', on the items both scored."""

    judge: Spread
    human: Spread
    collapsed: bool
    """Every item got the same score from the judge; or the judge gave at most half as many distinct scores as
    the humans (counted at the judge's resolution: the raters' means rounded as the judge's scores are) while its
    most frequent score covers more than half the items and more than the humans' most frequent (rounded) one;
    or its standard deviation is, with its whole interval, below :data:`SPREAD_FLOOR` of the humans'."""
    note: str = ""
    sd_ratio: Figure = Figure(None, (None, None), 0)
    """Judge standard deviation over the humans', with a paired bootstrap interval (None when the humans gave
    every item the same score: ``note`` says so)."""


def _spread(x: np.ndarray) -> Spread:
    if x.size == 0:
        return Spread(0, 0, None, None)
    counts = Counter(np.round(x, 6).tolist())
    top = max(counts.values())
    modal = min(v for v, c in counts.items() if c == top)
    sd = float(np.std(x, ddof=1)) if x.size >= 2 else None
    return Spread(int(x.size), len(counts), float(modal), round(top / x.size, 4), sd)


RESOLUTIONS = (1.0, 0.5, 0.25, 0.1)
"""Grids a judge's scores may lie on (an integer reply, halves, quarters, tenths); finer scores are continuous."""


def _resolution(x: np.ndarray) -> float | None:
    """The coarsest grid of :data:`RESOLUTIONS` every score lies on (None: continuous scores)."""
    if x.size == 0:
        return None
    for step in RESOLUTIONS:
        if np.all(np.abs(x / step - np.round(x / step)) < 1e-6):
            return step
    return None


def _at_resolution(x: np.ndarray, step: float | None) -> np.ndarray:
    return x if step is None else np.round(x / step) * step


def collapse(human: Sequence[float], judge: Sequence[float], *, seed: int = 0) -> Collapse:
    """The judge's and the humans' spread of scores, and the ratio of their standard deviations."""
    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    js, hs = _spread(j), _spread(h)
    if js.n == 0:
        return Collapse(js, hs, False, note="no item has a score from both the judge and the humans")
    value, low, high = metrics.spread_ratio(h, j, n_bootstrap=N_BOOTSTRAP, seed=seed)
    ratio = Figure(_finite(value), _interval((low, high)), js.n)
    narrow = ratio.ci[1] is not None and ratio.ci[1] < SPREAD_FLOOR
    # the humans' distinct values at the judge's resolution: raters' means (3.33, 3.67, ...) have many more
    # distinct values than an integer judge can give, and a healthy integer judge (Spearman +0.87) was called
    # collapsed in 2% of draws at 20 items against them (issue 63)
    hr = _spread(_at_resolution(h, _resolution(j)))
    few = js.distinct * 2 <= hr.distinct and (js.modal_share or 0) > max(0.5, hr.modal_share or 0)
    collapsed = js.distinct == 1 or few or narrow
    if js.distinct == 1:
        note = f"all {js.n} items got the same score ({js.modal:g}): the judge cannot order them"
    elif ratio.value is None:
        note = ("the humans gave every item the same score: the spreads cannot be compared" if hs.distinct == 1
                else f"{js.n} items: too few to compare the spreads")
    elif narrow:
        note = (f"the judge's scores spread {ratio.value:.2f} times as wide as the humans' (interval up to "
                f"{ratio.ci[1]:.2f}): it uses a sliver of their range")
    else:
        note = ""
    return Collapse(js, hs, bool(collapsed), note, ratio)
