"""Human labels as records: which human score a run uses, and how far the annotators agree.

Every label is an :class:`~judge_engine.records.Annotation`; the store keeps
them apart from the scores a dataset was imported with, which never change.
The human score a run is meta-evaluated against is an *aggregate*, chosen per
dataset and recorded with each run:

- ``imported``: the score the data came with (the default, so earlier results reproduce);
- ``mean``: the mean over every annotator's latest label (imported raters and people);
- ``experts``: the mean over the annotators marked as experts;
- ``annotator:<name>``: one annotator's latest label.

Agreement is computed from the labels themselves: Krippendorff's alpha
(interval) and the leave-one-annotator-out correlation (each annotator
against the mean of the others: the human ceiling a judge is compared with),
both with bootstrap intervals over items. Everything here is a pure function.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from dataclasses import dataclass, replace
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from . import metrics
from .records import Annotation, Dataset

KINDS = ("imported", "mean", "experts", "annotator")
"""Aggregate kinds (``annotator`` takes a name: ``annotator:<name>``)."""


@dataclass(frozen=True)
class HumanAggregate:
    """Which human score a run uses (see the module docstring)."""

    kind: str
    annotator: str = ""

    def __str__(self) -> str:
        return f"annotator:{self.annotator}" if self.kind == "annotator" else self.kind

    @property
    def label(self) -> str:
        """Words for a page."""
        return {"imported": "the imported score (as the data came)", "mean": "the mean of all annotators",
                "experts": "the mean of the experts"}.get(self.kind, f"{self.annotator}'s labels")


def parse_aggregate(text: str | None) -> HumanAggregate:
    """Read an aggregate spec (``imported``, ``mean``, ``experts``, ``annotator:<name>``); empty = imported."""
    text = (text or "imported").strip()
    kind, _, name = text.partition(":")
    if kind == "annotator" and name.strip():
        return HumanAggregate("annotator", name.strip())
    if kind in KINDS and kind != "annotator" and not name:
        return HumanAggregate(kind)
    raise ValueError(f"{text!r} is not a human aggregate: use imported, mean, experts or annotator:<name>")


def latest(labels: Iterable[Annotation]) -> list[Annotation]:
    """Each annotator's latest label per (sample, aspect): a person who labels again replaces their own label
    in aggregates (the older one stays stored)."""
    last: dict[tuple[str, str, str], Annotation] = {}
    for a in sorted(labels, key=lambda a: a.time):
        last[(a.sample, a.aspect, a.annotator)] = a
    return list(last.values())


def selected(labels: Iterable[Annotation], aggregate: HumanAggregate,
             experts: Iterable[str] = ()) -> list[Annotation]:
    """The latest labels an aggregate averages (none for ``imported``)."""
    chosen = latest(labels)
    if aggregate.kind == "imported":
        return []
    if aggregate.kind == "experts":
        keep = set(experts)
        return [a for a in chosen if a.annotator in keep]
    if aggregate.kind == "annotator":
        return [a for a in chosen if a.annotator == aggregate.annotator]
    return chosen


def aggregate_scores(labels: Iterable[Annotation], aggregate: HumanAggregate,
                     experts: Iterable[str] = ()) -> dict[tuple[str, str], float]:
    """(sample, aspect) -> the aggregate's score, for every pair with at least one label in it."""
    values: dict[tuple[str, str], list[float]] = {}
    for a in selected(labels, aggregate, experts):
        values.setdefault((a.sample, a.aspect), []).append(a.value)
    return {k: float(np.mean(v)) for k, v in values.items()}


def apply_aggregate(dataset: Dataset, labels: Iterable[Annotation], aggregate: HumanAggregate | str,
                    experts: Iterable[str] = ()) -> Dataset:
    """The dataset whose ``Sample.human`` is the aggregate's score (an item without one has no human score).

    ``imported`` returns the dataset unchanged. The imported records are not
    touched: the result is a new :class:`Dataset`.
    """
    aggregate = parse_aggregate(aggregate) if isinstance(aggregate, str) else aggregate
    if aggregate.kind == "imported":
        return dataset
    scores = aggregate_scores(labels, aggregate, experts)
    samples = tuple(replace(s, human={a: scores[(s.id, a)] for a in dataset.aspect_names if (s.id, a) in scores})
                    for s in dataset.samples)
    return replace(dataset, samples=samples)


def with_human(dataset: Dataset, aspect: str) -> Dataset:
    """Only the samples that have a human score for ``aspect`` (what a split may draw from)."""
    keep = tuple(s for s in dataset.samples if math.isfinite(float(s.human.get(aspect, math.nan))))
    return replace(dataset, samples=keep)


def labelled_counts(labels: Iterable[Annotation], *, aspect: str | None = None,
                    source: str | None = "person") -> dict[str, int]:
    """Items each annotator has labelled (distinct samples), most first."""
    seen: dict[str, set[str]] = {}
    for a in labels:
        if (aspect is None or a.aspect == aspect) and (source is None or a.source == source):
            seen.setdefault(a.annotator, set()).add(a.sample)
    return dict(sorted(((k, len(v)) for k, v in seen.items()), key=lambda kv: (-kv[1], kv[0])))


def imported_digest(dataset: Dataset, imported_labels: Iterable[Annotation] = ()) -> str:
    """SHA-256 of everything a dataset was imported with that people must never change: each sample's
    imported scores and per-annotator lists, and the imported annotator labels."""
    h = hashlib.sha256()
    for s in sorted(dataset.samples, key=lambda s: s.id):
        h.update(json.dumps([s.id, s.human, s.annotators], sort_keys=True, allow_nan=True).encode("utf-8"))
    for a in sorted(imported_labels, key=lambda a: (a.sample, a.aspect, a.annotator)):
        h.update(json.dumps([a.sample, a.aspect, a.annotator, a.value], allow_nan=True).encode("utf-8"))
    return h.hexdigest()


# --------------------------------------------------------------------------- agreement


def rating_matrix(labels: Iterable[Annotation], aspect: str,
                  ids: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Annotators x items matrix of the latest labels of ``aspect`` on ``ids`` (NaN = not labelled)."""
    chosen = [a for a in latest(labels) if a.aspect == aspect]
    names = tuple(sorted({a.annotator for a in chosen}))
    col = {i: k for k, i in enumerate(ids)}
    row = {n: k for k, n in enumerate(names)}
    matrix = np.full((len(names), len(ids)), np.nan)
    for a in chosen:
        if a.sample in col:
            matrix[row[a.annotator], col[a.sample]] = a.value
    return names, matrix


def krippendorff_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha (interval) of an annotators x items matrix; NaN when undefined."""
    import krippendorff

    m = np.asarray(matrix, dtype=float)
    m = m[:, np.isfinite(m).sum(axis=0) >= 2]  # an item with a single label carries no agreement
    if m.shape[0] < 2 or m.shape[1] < 2:
        return math.nan
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(krippendorff.alpha(reliability_data=m, level_of_measurement="interval"))
    except (ValueError, ZeroDivisionError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _against_the_others(m: np.ndarray, a: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Annotator ``a``'s labels, the mean of the others' per item, and where both exist."""
    others = np.delete(m, a, axis=0)
    counts = np.isfinite(others).sum(axis=0)
    mean_others = np.where(counts > 0, np.nansum(others, axis=0) / np.maximum(counts, 1), np.nan)
    return m[a], mean_others, np.isfinite(m[a]) & np.isfinite(mean_others)


def _group_ceilings(matrix: np.ndarray, codes: np.ndarray, n_groups: int, weights: np.ndarray) -> np.ndarray:
    """Leave-one-out group-level ceilings of many group resamples at once, shape ``(B, 3)``.

    Resampling whole groups leaves each group's correlation as it is, so a
    resample's group-level value is the weighted mean of the per-group table
    (the same shortcut :func:`judge_engine.metrics.meta_evaluate` takes).
    """
    per = []
    for a in range(matrix.shape[0]):
        own, mean_others, keep = _against_the_others(matrix, a)
        if keep.sum() < 3:
            continue
        table = metrics._group_table(mean_others[keep], own[keep], codes[keep], n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            per.append((weights @ np.nan_to_num(table)) / (weights @ np.isfinite(table)))
    if not per:
        return np.full((weights.shape[0], len(metrics.COEFFICIENTS)), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.stack(per), axis=0)


def leave_one_out(matrix: np.ndarray, *, level: str = "sample", groups: Sequence[Hashable] | None = None,
                  systems: Sequence[Hashable] | None = None) -> dict[str, float]:
    """Each annotator against the mean of the others (on the items both have), averaged over annotators.

    Annotators with fewer than three such items are left out; NaN when none is left.
    """
    m = np.asarray(matrix, dtype=float)
    per: dict[str, list[float]] = {s: [] for s in metrics.COEFFICIENTS}
    for a in range(m.shape[0]):
        own, mean_others, keep = _against_the_others(m, a)
        if keep.sum() < 3:
            continue
        g = [x for x, k in zip(groups, keep) if k] if groups is not None else None
        s = [x for x, k in zip(systems, keep) if k] if systems is not None else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values, _ = metrics.level_correlations(mean_others[keep], own[keep], level=level, groups=g, systems=s)
        for stat in metrics.COEFFICIENTS:
            per[stat].append(values[stat])
    return {stat: float(np.nanmean(v)) if np.isfinite(v).any() else math.nan for stat, v in per.items()}


@dataclass(frozen=True)
class Agreement:
    """How far the annotators of one aspect agree, on the items given."""

    aspect: str
    level: str
    annotators: tuple[str, ...]
    """Annotators with at least one label on the items."""
    n_items: int
    """Items with labels from two or more annotators (the ones agreement is measured on)."""
    alpha: float
    """Krippendorff's alpha, interval level (NaN when undefined)."""
    alpha_ci: tuple[float, float]
    ceiling: dict[str, float]
    """Leave-one-annotator-out correlation per statistic: the human ceiling."""
    ceiling_ci: dict[str, tuple[float, float]]

    def to_dict(self) -> dict[str, Any]:
        return {"aspect": self.aspect, "level": self.level, "annotators": list(self.annotators),
                "n_items": self.n_items, "alpha": _none(self.alpha), "alpha_ci": [_none(x) for x in self.alpha_ci],
                "ceiling": {k: _none(v) for k, v in self.ceiling.items()},
                "ceiling_ci": {k: [_none(x) for x in v] for k, v in self.ceiling_ci.items()}}


def _none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _interval(values: list[float], ci: float) -> tuple[float, float]:
    arr = np.array([v for v in values if math.isfinite(v)])
    if arr.size < 10:  # too few defined resamples for an interval worth showing
        return (math.nan, math.nan)
    lo = (1 - ci) / 2
    return (float(np.quantile(arr, lo)), float(np.quantile(arr, 1 - lo)))


def agreement(labels: Iterable[Annotation], aspect: str, ids: Sequence[str], *, level: str = "sample",
              groups: Sequence[Hashable] | None = None, systems: Sequence[Hashable] | None = None,
              n_bootstrap: int = 200, ci: float = 0.95, seed: int = 0) -> Agreement:
    """Krippendorff's alpha and the leave-one-annotator-out ceiling of ``aspect`` on ``ids``, with bootstrap CIs.

    Items (whole groups at group and system level) are resampled with
    replacement; intervals are percentile intervals of the resampled values.
    """
    names, matrix = rating_matrix(labels, aspect, ids)
    shared = np.isfinite(matrix).sum(axis=0) >= 2 if len(names) else np.zeros(len(ids), dtype=bool)
    alpha = krippendorff_alpha(matrix)
    ceiling = leave_one_out(matrix, level=level, groups=groups, systems=systems)
    units: dict[Hashable, list[int]] = {}
    for i in range(len(ids)):
        unit = groups[i] if level != "sample" and groups is not None else i
        units.setdefault(unit, []).append(i)
    unit_index = [np.array(v) for v in units.values()]
    rng = np.random.default_rng(seed)
    alphas: list[float] = []
    ceilings: dict[str, list[float]] = {s: [] for s in metrics.COEFFICIENTS}
    if int(shared.sum()) >= 3 and len(names) >= 2 and level == "group" and groups is not None:
        codes, _ = metrics._codes(groups, len(ids), "groups")
        weights = metrics._resample_weights(rng, len(unit_index), n_bootstrap)
        boot = _group_ceilings(matrix, codes, len(unit_index), weights.astype(float))
        for s, column in zip(metrics.COEFFICIENTS, boot.T):
            ceilings[s] = column.tolist()
        order = np.argsort(codes, kind="stable")
        for row in weights:  # each item as often as its group was drawn
            alphas.append(krippendorff_alpha(matrix[:, np.repeat(order, row[codes[order]])]))
    elif int(shared.sum()) >= 3 and len(names) >= 2:
        for _ in range(n_bootstrap):
            idx = np.concatenate([unit_index[k] for k in rng.integers(0, len(unit_index), size=len(unit_index))])
            sub = matrix[:, idx]
            alphas.append(krippendorff_alpha(sub))
            boot = leave_one_out(sub, level=level, groups=[groups[i] for i in idx] if groups is not None else None,
                                 systems=[systems[i] for i in idx] if systems is not None else None)
            for s in metrics.COEFFICIENTS:
                ceilings[s].append(boot[s])
    return Agreement(aspect=aspect, level=level, annotators=names, n_items=int(shared.sum()), alpha=alpha,
                     alpha_ci=_interval(alphas, ci), ceiling=ceiling,
                     ceiling_ci={s: _interval(v, ci) for s, v in ceilings.items()})


def dataset_agreement(dataset: Dataset, labels: Iterable[Annotation], aspect: str, ids: Sequence[str] | None = None,
                      *, aggregate: HumanAggregate | str = "mean", experts: Iterable[str] = (),
                      level: str = "sample", n_bootstrap: int = 200, seed: int = 0) -> Agreement:
    """:func:`agreement` of the labels an aggregate is built from (``imported`` and ``mean``: every
    annotator's labels, imported raters included; ``experts``: the experts'), on ``ids`` (default: all)."""
    aggregate = parse_aggregate(aggregate) if isinstance(aggregate, str) else aggregate
    pool = list(labels)
    if aggregate.kind == "experts":
        pool = selected(pool, aggregate, experts)
    ids = list(ids) if ids is not None else [s.id for s in dataset.samples]
    index = dataset.by_id()
    return agreement(pool, aspect, ids, level=level, groups=[index[i].group_id for i in ids],
                     systems=[index[i].system_id for i in ids], n_bootstrap=n_bootstrap, seed=seed)


def annotation_queue(dataset: Dataset, aspect: str, labels: Iterable[Annotation], annotator: str, *,
                     suggested: Sequence[str] = (), skipped: Iterable[str] = ()) -> list[str]:
    """The items ``annotator`` should label next, in order.

    The suggested items first (e.g. :func:`judge_engine.compare.label_next`:
    where judges disagree most), then the items other people have labelled
    (so that people label the same items and their agreement can be measured),
    then the rest in dataset order; items ``annotator`` has labelled or
    skipped are left out.
    """
    labels = [a for a in labels if a.aspect == aspect]
    done = {a.sample for a in labels if a.annotator == annotator} | set(skipped)
    count: dict[str, int] = {}
    for a in labels:
        if a.source == "person":
            count[a.sample] = count.get(a.sample, 0) + 1
    known = dataset.by_id()
    first = [i for i in dict.fromkeys(suggested) if i in known and i not in done]
    taken = set(first)
    rest = sorted((k for k, s in enumerate(dataset.samples) if s.id not in done and s.id not in taken),
                  key=lambda k: (0 if count.get(dataset.samples[k].id) else 1, k))
    return first + [dataset.samples[k].id for k in rest]
