"""Pass/fail agreement for an aspect the humans scored with two values.

Two classifiers are reported. The judge's natural cut (the midpoint of the aspect's scale: a score in the
upper half is a pass) is chosen on no item, so its figures are those of one classifier; it is the headline.
The runs keep the judge's scores on the test items only, so a threshold tuned for balanced accuracy cannot
come from the training items: it is cross-fitted on the test items (chosen on one half, applied to the
other) and shown beside the natural cut as what a tuned cut could reach, with its two thresholds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..metrics import rate_interval
from ._common import MIN_ITEMS, N_BOOTSTRAP, Figure, _finite


@dataclass(frozen=True)
class Classifier:
    """One pass/fail classifier's figures against the humans: rates with Wilson intervals, the rest as points."""

    how: str
    """Where its threshold comes from, in words."""
    threshold: float | None
    """A judge score at or above it is a pass (None when cross-fitted: one threshold per half)."""
    true_positive_rate: Figure
    """Recall of the human passes, with a Wilson interval."""
    true_negative_rate: Figure
    precision: float | None
    """Share of the judge's passes the humans passed; None when the judge passed nothing."""
    f1: float | None
    kappa: float | None


def _rate(hits: int, n: int) -> Figure:
    if n == 0:
        return Figure(None, (None, None), 0)
    low, high = rate_interval(hits, n)
    return Figure(hits / n, (_finite(low), _finite(high)), n)


def classifier(truth: np.ndarray, pred: np.ndarray, *, how: str, threshold: float | None) -> Classifier:
    """The figures of predictions ``pred`` against human passes ``truth`` (boolean arrays)."""
    from sklearn.metrics import cohen_kappa_score, f1_score, precision_score

    tp = int((pred & truth).sum())
    tn = int((~pred & ~truth).sum())
    precision = float(precision_score(truth, pred, zero_division=np.nan)) if pred.any() else None
    f1 = float(f1_score(truth, pred, zero_division=np.nan)) if (pred.any() or truth.any()) else None
    kappa = (float(cohen_kappa_score(truth, pred))
             if len(set(truth.tolist())) > 1 or len(set(pred.tolist())) > 1 else None)
    return Classifier(how, threshold, _rate(tp, int(truth.sum())), _rate(tn, int((~truth).sum())),
                      _finite(precision), _finite(f1), _finite(kappa))

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
    base_rate: float | None = None
    """Share of the items the humans passed: the agreement a judge that always says the majority reaches."""
    natural: Classifier | None = None
    """The judge's natural cut (its scale's midpoint), chosen on no item: the headline classifier."""
    crossfit: Classifier | None = None
    """The balanced-accuracy threshold cross-fitted on the test items (the figures above, with intervals)."""


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


def binary_agreement(human: Sequence[float], judge: Sequence[float], *, seed: int = 0,
                     scale: tuple[float, float] | None = None) -> BinaryAgreement | None:
    """Agreement, kappa and true positive/negative rates when humans gave two values; None otherwise.

    The runs store the judge's scores on the test items only, so the threshold cannot come from its training
    items: it is chosen by two-fold cross-fitting on the test items (the best balanced accuracy on one half,
    applied to the other), so no item is classified at a threshold chosen on itself. With ``scale`` (the
    aspect's lowest and highest score) the natural cut at its midpoint is reported too.
    """
    from sklearn.metrics import cohen_kappa_score

    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    values = sorted(set(np.round(h, 6).tolist()))
    if len(values) != 2:
        return None
    positive = values[1]
    truth = np.isclose(h, positive)
    n = int(h.size)
    base_rate = float(truth.mean())
    empty = Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return BinaryAgreement(n, positive, empty, empty, None, None, (),
                               note=f"{n} items both scored: too few for pass/fail agreement (at least {MIN_ITEMS})",
                               base_rate=base_rate)
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
    natural = None
    if scale is not None and all(math.isfinite(x) for x in scale):
        cut = (scale[0] + scale[1]) / 2
        natural = classifier(truth, j >= cut, how=f"natural cut: a score of at least {cut:g}, the middle of the "
                                                   f"{scale[0]:g}-{scale[1]:g} scale", threshold=cut)
    crossfit = classifier(truth, pred, how="balanced-accuracy cut cross-fitted on the test items", threshold=None)
    return BinaryAgreement(n, positive, figure(float((truth == pred).mean()), agree_reps), figure(kappa, kappa_reps),
                           tpr, tnr, tuple(thresholds), base_rate=base_rate, natural=natural, crossfit=crossfit)
