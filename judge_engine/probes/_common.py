"""What every probe shares: its thresholds, the figure record, the level a correlation is taken at, and how a
p-value is written."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from .. import metrics

ALPHA = 0.05
"""Two-sided level below which a probe calls an effect significant (after correction, where several are tested)."""

N_BOOTSTRAP = 1000
"""Resamples behind every interval of the probes."""

MIN_ITEMS = 8
"""Fewest items both sides scored for a correlation probe; below it the probe says so instead of a figure."""

PROBE_LEVELS = ("sample", "group")
"""Levels a probe can take its correlations at. A system-level probe would rest on a dozen systems, so a page
whose level is ``system`` gets sample-level probes, and says so."""


def words(text: str) -> int:
    """Length of an output in words (whitespace-separated tokens), the unit the length probe reports."""
    return len(str(text or "").split())


def _interval(ci: Any) -> tuple[float | None, float | None]:
    low, high = ci
    return (None if not math.isfinite(low) else float(low), None if not math.isfinite(high) else float(high))


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def format_p(p: float | None) -> str:
    """``p = 0.012``, or ``p < 0.001`` below that (a resampling p of 0 means below its resolution, never 0)."""
    if p is None:
        return "no test"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


@dataclass(frozen=True)
class Figure:
    """A coefficient with its bootstrap interval over the items (or groups) it rests on."""

    value: float | None
    """None when undefined (constant scores, too few items)."""
    ci: tuple[float | None, float | None]
    """95% percentile bootstrap interval; (None, None) with fewer than five resampling units."""
    n: int
    """Items it rests on."""


def probe_level(level: str, groups: Sequence[str] | None) -> str:
    """The level the probes use for a page at ``level``: its own, or sample where a probe cannot follow it."""
    if level == "group" and groups is not None and len(set(groups)) >= 2:
        return "group"
    return "sample"


def _spearman(x: Sequence[float], y: Sequence[float], *, seed: int, level: str = "sample",
              groups: Sequence[str] | None = None) -> Figure:
    """Spearman at ``level``: over items, or the mean of within-group figures with whole groups resampled."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = int((np.isfinite(a) & np.isfinite(b)).sum())
    if level == "group":
        report = metrics.meta_evaluate(a, b, level="group", groups=list(groups or ()), n_bootstrap=N_BOOTSTRAP,
                                       seed=seed)
        c = report.spearman
    else:
        c = metrics.sample_correlation(a, b, statistic="spearman", n_bootstrap=N_BOOTSTRAP, seed=seed)
    return Figure(_finite(c.value), _interval((c.ci_low, c.ci_high)), n)


def rank_difference(human: Sequence[float], judge: Sequence[float],
                    groups: Sequence[str] | None = None) -> np.ndarray:
    """Judge rank minus human rank per item, as a share of the items (positive: the judge ranks it higher).

    Ranks are averaged over ties (:func:`scipy.stats.rankdata`), so a judge that gives most items the same
    score moves those items to the middle of its ranking rather than to an arbitrary order. With ``groups``
    the ranks are taken inside each group, as a group-level correlation compares them.
    """
    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    if h.size == 0:
        return np.zeros(0)
    if groups is None:
        return (stats.rankdata(j) - stats.rankdata(h)) / h.size
    labels = np.asarray(list(groups), dtype=object)
    out = np.zeros(h.size)
    for g in set(labels.tolist()):
        m = labels == g
        out[m] = (stats.rankdata(j[m]) - stats.rankdata(h[m])) / m.sum()
    return out


def fig_text(f: Figure) -> str:
    """``+0.42 [+0.20, +0.61]``; ``(no interval)`` or ``undefined`` where there is none."""
    if f.value is None:
        return "undefined"
    if f.ci[0] is None or f.ci[1] is None:
        return f"{f.value:+.2f} (no interval)"
    return f"{f.value:+.2f} [{f.ci[0]:+.2f}, {f.ci[1]:+.2f}]"
