"""Where the judge disagrees: the items it ranks furthest from the humans, and slices tested against the rest.

A slice (a system, a group, a length tercile, a band of human scores) is compared with the rest of the items,
never with the overall figure, and the p-values of all the slices are corrected together (Benjamini-Hochberg):
with thirty slices, the worst of them looks bad for any judge. The per-item quantity is the judge's residual
against a straight line fitted to the human scores (:func:`scipy.stats.linregress`), so a judge that is the
humans plus the same noise everywhere has exchangeable residuals whatever the slice:

- a system, group or length tercile is tested on the size of the residual (does the judge err more there?);
- a band of human scores is tested on its sign (does the judge over- or under-score that band?), because a band
  is narrow and the correlation inside it is low for any judge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from scipy import stats

from .. import metrics
from ..records import Sample
from ._common import ALPHA, MIN_ITEMS, Figure, _finite, _spearman, rank_difference, words

MIN_SLICE = 8
"""Fewest items in a slice for it to be tested and listed (a slice of three items says nothing a test could
resolve; the number left out is counted)."""

TOP_DISAGREEMENTS = 10
"""How many of the most disagreeing items are listed."""

SLICES_WITH_INTERVAL = 12
"""The first slices (flagged ones first) get a bootstrap interval on their Spearman; the rest (a dataset of 100
groups has 100 group slices) are shown with their point figure only, which keeps the probes of 1,600 items to a
second or two."""

PERMUTATIONS = 999
"""Resamples of each slice's permutation test (the smallest p it can give is 1/1000)."""


@dataclass(frozen=True)
class Disagreement:
    """One item the judge ranks far from the humans."""

    sample_id: str
    human: float
    judge: float
    rank_difference: float
    """Judge rank minus human rank, as a share of the items (positive: over-scored)."""
    explanation: str
    output: str


@dataclass(frozen=True)
class Slice:
    """A subset of the items (one system, group, length tercile or human score band), tested against the rest."""

    by: str
    """``system``, ``group``, ``length`` or ``human score``."""
    name: str
    n: int
    spearman: Figure
    """Spearman inside the slice (descriptive: a narrow slice has a low one for any judge)."""
    mean_abs_rank_difference: float
    """Mean of |judge rank - human rank| over the slice's items (ranks over all items), as a share of them."""
    test: str
    """``error`` (mean |residual| in the slice minus the rest's, one-sided) or ``bias`` (mean residual minus the
    rest's, two-sided: positive when the judge over-scores the band against the line through all items)."""
    effect: float
    """The tested difference, in judge score points."""
    p: float
    """Permutation p-value (items exchanged between the slice and the rest)."""
    q: float
    """Benjamini-Hochberg adjusted p-value over all the slices tested."""
    flagged: bool
    """``q`` below :data:`ALPHA`: the only slices promoted to a summary or a headline."""
    sample_ids: tuple[str, ...]

    @property
    def finding(self) -> str:
        """The slice's effect in words, e.g. ``over-scored by 0.62 points`` or ``errs 0.80 points more``."""
        if self.test == "bias":
            return f"{'over' if self.effect > 0 else 'under'}-scored by {abs(self.effect):.2f} points"
        return f"errs {self.effect:.2f} points more than elsewhere"


@dataclass(frozen=True)
class Disagreements:
    n: int
    overall: Figure
    """Spearman over the items both scored, at the probes' level."""
    top: tuple[Disagreement, ...]
    """The items with the largest |rank difference|, largest first."""
    slices: tuple[Slice, ...]
    """Flagged slices first (smallest ``q`` first), then by p-value."""
    note: str = ""
    too_small: int = 0
    """Slices with fewer than :data:`MIN_SLICE` items, neither tested nor listed."""

    @property
    def flagged(self) -> tuple[Slice, ...]:
        """The slices that survive the correction."""
        return tuple(s for s in self.slices if s.flagged)


def _terciles(values: np.ndarray, unit: str) -> list[tuple[str, np.ndarray]]:
    if np.ptp(values) == 0:
        return []
    cuts = np.quantile(values, [1 / 3, 2 / 3])
    codes = np.searchsorted(cuts, values, side="right")
    names = ("shortest third", "middle third", "longest third") if unit == "words" else ("low", "middle", "high")
    out = []
    for k, name in enumerate(names):
        mask = codes == k
        if mask.any():
            lo, hi = values[mask].min(), values[mask].max()
            out.append((f"{name} ({lo:g}-{hi:g} {unit})", mask))
    return out


def _bands(human: np.ndarray) -> list[tuple[str, np.ndarray]]:
    values = sorted(set(np.round(human, 6).tolist()))
    if len(values) <= 5:
        return [(f"human {v:g}", np.isclose(human, v)) for v in values]
    return _terciles(human, "points")


RESIDUAL_TOLERANCE = 1e-9
"""Residuals smaller than this (relative to the judge's scale) are exactly zero: floating-point error, not a slice."""


def residuals(human: np.ndarray, judge: np.ndarray, fit_on: np.ndarray | None = None) -> np.ndarray:
    """The judge's scores minus a straight line fitted on the human scores (judge score points).

    ``fit_on`` restricts the fit to some items (the residuals are still of every item); a fit on items whose
    human scores are all equal cannot give a slope, so it falls back to all items.
    """
    keep = np.ones(human.size, dtype=bool) if fit_on is None else np.asarray(fit_on, dtype=bool)
    if keep.sum() < 3 or np.ptp(human[keep]) == 0:
        keep = np.ones(human.size, dtype=bool)
    fit = stats.linregress(human[keep], judge[keep])
    resid = judge - (fit.intercept + fit.slope * human)
    # a judge that is an exact linear function of the humans leaves floating-point dust (1e-15), which the
    # permutation tests ranked into slices "under-scored by 0.00 points" (issue 63): below the tolerance it is 0
    scale = max(1.0, float(np.max(np.abs(judge))) if judge.size else 1.0)
    return np.where(np.abs(resid) <= RESIDUAL_TOLERANCE * scale, 0.0, resid)


def disagreements(samples: Sequence[Sample], human: Sequence[float], judge: Sequence[float],
                  explanations: Sequence[str], *, seed: int = 0, level: str = "sample") -> Disagreements:
    """The most disagreeing items and the slices that differ from the rest, on the items both scored."""
    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    n = int(h.size)
    groups = [s.group_id for s in samples] if level == "group" else None
    overall = _spearman(h, j, seed=seed, level=level, groups=groups) if n >= 2 else Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return Disagreements(n, overall, (), (), note=f"{n} items both scored: too few to look for where the "
                                                       f"judge disagrees (at least {MIN_ITEMS})")
    diff = rank_difference(h, j)
    order = np.argsort(-np.abs(diff), kind="stable")[:TOP_DISAGREEMENTS]
    top = tuple(Disagreement(samples[i].id, float(h[i]), float(j[i]), round(float(diff[i]), 4),
                             str(explanations[i] or ""), samples[i].output) for i in order)
    if np.ptp(h) == 0:
        return Disagreements(n, overall, top, (), note=f"the humans gave all {n} items the same score: no slice "
                                                        "can be told apart from the rest")
    partitions: list[tuple[str, list[tuple[str, np.ndarray]]]] = []
    for by, labels in (("system", [s.system_id for s in samples]), ("group", [s.group_id for s in samples])):
        kinds = sorted(set(labels))
        if 1 < len(kinds) < n:
            partitions.append((by, [(k, np.array([x == k for x in labels])) for k in kinds]))
    partitions.append(("length", _terciles(np.array([words(s.output) for s in samples], dtype=float), "words")))
    partitions.append(("human score", _bands(h)))
    chosen, too_small = [], 0
    for by, parts in partitions:
        for name, mask in parts:
            size = int(mask.sum())
            if size == n:
                continue
            if size < MIN_SLICE or n - size < 2:
                too_small += 1
                continue
            chosen.append((by, str(name), mask))
    if not chosen:
        return Disagreements(n, overall, top, (), note=f"no slice of at least {MIN_SLICE} items to test ({too_small} smaller "
                                                         "ones left out)",
                             too_small=too_small)
    resid = residuals(h, j)
    tests = ["bias" if by == "human score" else "error" for by, _, _ in chosen]
    effect, p = np.zeros(len(chosen)), np.ones(len(chosen))
    error = [k for k, t in enumerate(tests) if t == "error"]
    if error:  # one call: every slice against the rest on the size of the judge's residual
        e, pe, _ = metrics.slice_difference_tests(np.abs(resid), [chosen[k][2] for k in error],
                                                  alternatives=["greater"] * len(error), n_resamples=PERMUTATIONS,
                                                  seed=seed)
        effect[error], p[error] = e, pe
    bias = [k for k, t in enumerate(tests) if t == "bias"]
    if bias:
        # the line is fitted on all items: fitted on the other bands only, its own error at an end band is not in
        # the permutation null and a judge with no bias was flagged in 20% of simulated draws (a band's bias is
        # thus partly absorbed by the slope: its power is lower, measured in docs/reliability.md)
        e, pb, _ = metrics.slice_difference_tests(resid, [chosen[k][2] for k in bias],
                                                  alternatives=["two-sided"] * len(bias), n_resamples=PERMUTATIONS,
                                                  seed=seed + 1)
        effect[bias], p[bias] = e, pb
    q = stats.false_discovery_control(p, method="bh")  # one correction over every slice tested
    slices = []
    for k, (by, name, mask) in enumerate(chosen):
        slices.append(Slice(by, name, int(mask.sum()),
                            Figure(_finite(metrics.correlation(h[mask], j[mask], "spearman")), (None, None),
                                   int(mask.sum())),
                            round(float(np.abs(diff[mask]).mean()), 4), tests[k], round(float(effect[k]), 4),
                            float(p[k]), float(q[k]), bool(q[k] < ALPHA),
                            tuple(samples[i].id for i in np.flatnonzero(mask))))
    ranked = sorted(range(len(slices)), key=lambda k: (not slices[k].flagged, slices[k].q, slices[k].p,
                                                       -slices[k].mean_abs_rank_difference))
    out = []
    for rank, k in enumerate(ranked):
        s = slices[k]
        if rank < SLICES_WITH_INTERVAL:
            s = replace(s, spearman=_spearman(h[chosen[k][2]], j[chosen[k][2]], seed=seed))
        out.append(s)
    return Disagreements(n, overall, top, tuple(out), too_small=too_small)
