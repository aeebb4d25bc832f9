"""Pass/fail agreement for an aspect the humans scored with two values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._common import MIN_ITEMS, N_BOOTSTRAP, Figure, _finite

@dataclass(frozen=True)
class BinaryAgreement:
    """Pass/fail agreement for an aspect with two human values, at thresholds chosen on other items."""

    n: int
    positive: float
    """The human value counted as positive (the higher one)."""
    agreement: Figure
    kappa: Figure
    """Cohen's kappa (:func:`sklearn.metrics.cohen_kappa_score`)."""
    true_positive_rate: float | None
    true_negative_rate: float | None
    thresholds: tuple[float, ...]
    """The threshold of each fold: a judge score at or above it counts as positive."""
    note: str = ""


def _best_threshold(human: np.ndarray, judge: np.ndarray) -> float:
    # the threshold with the best balanced accuracy on these items; candidates are the judge's own scores
    best, best_value = float(np.min(judge)), -1.0
    for t in np.unique(judge):
        pred = judge >= t
        pos, neg = human, ~human
        tpr = pred[pos].mean() if pos.any() else 0.0
        tnr = (~pred[neg]).mean() if neg.any() else 0.0
        value = (tpr + tnr) / 2
        if value > best_value + 1e-12:
            best, best_value = float(t), value
    return best


def _kappa(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cohen's kappa of boolean rows ``a`` and ``b`` (vectorised over bootstrap rows)."""
    po = (a == b).mean(axis=-1)
    pa, pb = a.mean(axis=-1), b.mean(axis=-1)
    pe = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def binary_agreement(human: Sequence[float], judge: Sequence[float], *, seed: int = 0) -> BinaryAgreement | None:
    """Agreement, kappa and true positive/negative rates when humans gave two values; None otherwise.

    The runs store the judge's scores on the test items only, so the threshold cannot come from its training
    items: it is chosen by two-fold cross-fitting on the test items (the best balanced accuracy on one half,
    applied to the other), so no item is classified at a threshold chosen on itself.
    """
    from sklearn.metrics import cohen_kappa_score

    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    values = sorted(set(np.round(h, 6).tolist()))
    if len(values) != 2:
        return None
    positive = values[1]
    truth = np.isclose(h, positive)
    n = int(h.size)
    empty = Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return BinaryAgreement(n, positive, empty, empty, None, None, (),
                               note=f"{n} items both scored: too few for pass/fail agreement (at least {MIN_ITEMS})")
    folds = np.arange(n) % 2 == 1
    np.random.default_rng(seed).shuffle(folds)
    pred = np.zeros(n, dtype=bool)
    thresholds = []
    for fold in (folds, ~folds):
        t = _best_threshold(truth[~fold], j[~fold])
        thresholds.append(t)
        pred[fold] = j[fold] >= t
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(N_BOOTSTRAP, n))
    agree_reps = (truth[idx] == pred[idx]).mean(axis=1)
    kappa_reps = _kappa(truth[idx], pred[idx])

    def figure(point: float, reps: np.ndarray) -> Figure:
        reps = reps[np.isfinite(reps)]
        if not math.isfinite(point) or reps.size == 0:
            return Figure(_finite(point), (None, None), n)
        low, high = np.percentile(reps, [2.5, 97.5])
        return Figure(float(point), (float(low), float(high)), n)

    kappa = float(cohen_kappa_score(truth, pred)) if len(set(truth)) > 1 or len(set(pred)) > 1 else math.nan
    tpr = float(pred[truth].mean()) if truth.any() else None
    tnr = float((~pred[~truth]).mean()) if (~truth).any() else None
    return BinaryAgreement(n, positive, figure(float((truth == pred).mean()), agree_reps), figure(kappa, kappa_reps),
                           tpr, tnr, tuple(thresholds))
