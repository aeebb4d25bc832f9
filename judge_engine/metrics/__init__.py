"""Correlation metrics for meta-evaluating a judge against human scores.

A judge (an LLM, a learned metric, ...) predicts a score for every item that
humans also scored. Meta-evaluation asks how well the predicted scores agree
with the human ones, measured with three correlation coefficients computed by
:mod:`scipy.stats`:

* Pearson's *r* (linear agreement), :func:`scipy.stats.pearsonr`;
* Spearman's *rho* (monotone agreement on ranks), :func:`scipy.stats.spearmanr`;
* Kendall's *tau-b* (pairwise ordering, ties corrected),
  :func:`scipy.stats.kendalltau` with ``variant="b"``.

The papers report them at three levels, which answer different questions:

``sample`` (also called *dataset* or *turn* level)
    One correlation over all items. Does the judge order arbitrary items the
    way humans do?
``group`` (SummEval's *summary* level, HANNA's *story* level)
    Items sharing a source (an article, a prompt, a dialogue context) form a
    group. The correlation is computed inside each group and the mean over the
    groups is reported. Does the judge rank competing outputs for the *same*
    input correctly? A group where either the human or the predicted scores are
    all equal (this includes groups of fewer than two items) has no defined
    correlation: it is skipped, and the number skipped is reported.
``system``
    Scores are averaged per system (human and predicted separately, over the
    same items), then one correlation is computed across the systems. Does the
    judge rank *systems* correctly?

Conventions (chosen to reproduce published numbers, e.g. UniEval's
``reproduce/correlation.py`` for SummEval, Topical-Chat and SFHOT/SFRES):

* a group is skipped when ``len(set(scores)) == 1`` on either side, i.e. on
  exact equality, and the same groups are skipped for all three coefficients;
* the group-level value is the plain (unweighted) arithmetic mean of the
  per-group coefficients over the groups kept, whatever their sizes;
* a system's score is the plain mean of its items' scores;
* nothing is rounded (published tables round only for display);
* Kendall is scipy's default tau-b.

Items whose prediction is missing (``None`` or NaN, e.g. the judge's answer
could not be parsed) are dropped before anything is computed and counted; they
are never imputed. Confidence intervals are bootstrap percentile intervals; the
point estimates are always computed on the full data, never the bootstrap mean.
"""

from __future__ import annotations

import hashlib
import math
import threading
import warnings
from collections import OrderedDict
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

# scipy.stats is imported inside the functions that use it: this package is imported by the methods, the runs and
# the exported judge, and scipy.stats took most of a second before `score` or `run` could send its first request
# (issue 67 item 2)

from ._kendall import KENDALL_PAIRS_UP_TO, _rowwise_kendall_b
from ._resample import (BOOTSTRAP_CHUNK_CELLS, _block_sizes, _resample_weights, _weighted_sums,  # noqa: F401
                        group_resamples)
from ._records import COEFFICIENTS, LEVELS, Correlation, LevelInfo, MetaEvalReport

__all__ = [
    "LEVELS",
    "COEFFICIENTS",
    "Correlation",
    "LevelInfo",
    "MetaEvalReport",
    "SelectionFitness",
    "MIN_SELECTION_COVERAGE",
    "correlations",
    "coverage_adjusted",
    "correlation_p_value",
    "items_for_significance",
    "selection_fitness",
    "level_correlations",
    "meta_evaluate",
    "sample_correlation",
    "retest_agreement",
    "slice_difference_tests",
    "spread_ratio",
    "rate_interval",
    "PairedDifference",
    "paired_mean_difference",
]


def _scipy_warnings() -> tuple[type[Warning], ...]:
    """scipy's degenerate-input warnings (those this scipy has); scipy.stats is loaded by then, as the code that
    raises them is scipy's."""
    from scipy import stats

    return tuple(w for w in (getattr(stats, "ConstantInputWarning", None),
                             getattr(stats, "NearConstantInputWarning", None),
                             getattr(stats, "DegenerateDataWarning", None)) if w is not None)


class _Quiet:
    """Suppress scipy degenerate-input warnings and numpy NaN/zero-division noise."""

    def __enter__(self) -> "_Quiet":
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        for w in _scipy_warnings():
            warnings.simplefilter("ignore", w)
        warnings.simplefilter("ignore", RuntimeWarning)
        self._np = np.errstate(divide="ignore", invalid="ignore")
        self._np.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._np.__exit__(*exc)
        self._cm.__exit__(*exc)


# --------------------------------------------------------------------------- helpers


def _as_float_array(values: Iterable[Any], name: str) -> np.ndarray:
    """Convert scores to a float array, ``None`` becoming NaN."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiub":
        return np.asarray(values, dtype=float).ravel()
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append(math.nan)
            continue
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{i}] is not a number: {v!r}") from None
    return np.asarray(out, dtype=float)


def _codes(labels: Sequence[Hashable], n: int, name: str) -> tuple[np.ndarray, list[Hashable]]:
    """Map labels to integer codes in order of first appearance."""
    labels = list(labels)
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} entries, expected {n}")
    index: dict[Hashable, int] = {}
    codes = np.empty(n, dtype=np.intp)
    for i, lab in enumerate(labels):
        codes[i] = index.setdefault(lab, len(index))
    return codes, list(index)


def _is_constant(x: np.ndarray) -> bool:
    """True when all values are exactly equal (``len(set(x)) == 1``) or x is empty."""
    return x.size == 0 or bool(np.all(x == x[0]))


def _nan_result() -> dict[str, float]:
    return {m: math.nan for m in COEFFICIENTS}


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


GROUP_TABLE_MEMO = 64
"""Per-group tables :func:`_group_table` keeps, by a digest of its inputs (the least recently used goes first).

Comparing k runs at group level asks for the same table many times: each
run's report, then each paired test against the best run (its point
estimate and its resamples, for both runs). One table is a few hundred
scipy calls (0.2 s for 160 groups on a slow core), so recomputing made a
comparison of four runs about four times slower. The memo returns the very
table computed before (read-only), so results are unchanged.
"""

_group_tables: OrderedDict[bytes, np.ndarray] = OrderedDict()
_group_tables_lock = threading.Lock()


def _group_table(h: np.ndarray, p: np.ndarray, g: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-group coefficients, shape ``(n_groups, 3)``; NaN rows for skipped groups (read-only, memoised)."""
    h, p = np.ascontiguousarray(h, dtype=float), np.ascontiguousarray(p, dtype=float)
    codes = np.ascontiguousarray(g, dtype=np.int64)
    digest = hashlib.blake2b(digest_size=20)
    for part in (np.array([h.size, n_groups], dtype=np.int64), h, p, codes):
        digest.update(part.tobytes())
    key = digest.digest()
    with _group_tables_lock:
        table = _group_tables.get(key)
        if table is not None:
            _group_tables.move_to_end(key)
            return table
    table = _compute_group_table(h, p, codes, n_groups)
    table.flags.writeable = False
    with _group_tables_lock:
        _group_tables[key] = table
        while len(_group_tables) > GROUP_TABLE_MEMO:
            _group_tables.popitem(last=False)
    return table


def _compute_group_table(h: np.ndarray, p: np.ndarray, g: np.ndarray, n_groups: int) -> np.ndarray:
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(n_groups + 1))
    table = np.full((n_groups, len(COEFFICIENTS)), np.nan)
    for k in range(n_groups):
        idx = order[bounds[k] : bounds[k + 1]]
        hk, pk = h[idx], p[idx]
        if hk.size < 2 or _is_constant(hk) or _is_constant(pk):
            continue
        r = correlations(hk, pk)
        table[k] = [r[m] for m in COEFFICIENTS]
    return table


def _system_means(h: np.ndarray, p: np.ndarray, s: np.ndarray, n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(s, minlength=n_systems).astype(float)
    with _Quiet():
        mh = np.bincount(s, weights=h, minlength=n_systems) / counts
        mp = np.bincount(s, weights=p, minlength=n_systems) / counts
    return mh, mp


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")


def _prepare(
    human: Sequence[float],
    pred: Sequence[float],
    groups: Sequence[Hashable] | None,
    systems: Sequence[Hashable] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, int, int, int]:
    """Drop items lacking a human or predicted score; encode labels.

    Returns h, p, group codes, system codes, n_missing, n_groups, n_systems
    (label counts after dropping).
    """
    h = _as_float_array(human, "human")
    p = _as_float_array(pred, "pred")
    if h.shape != p.shape:
        raise ValueError(f"human and pred differ in length: {h.size} != {p.size}")
    n_missing = int(np.count_nonzero(~np.isfinite(p)))
    keep = np.isfinite(h) & np.isfinite(p)
    g = s = None
    n_g = n_s = 0
    if groups is not None:
        g_all, _ = _codes(groups, h.size, "groups")
        g, _ = _codes(g_all[keep].tolist(), int(keep.sum()), "groups")
        n_g = int(g.max()) + 1 if g.size else 0
    if systems is not None:
        s_all, _ = _codes(systems, h.size, "systems")
        s, _ = _codes(s_all[keep].tolist(), int(keep.sum()), "systems")
        n_s = int(s.max()) + 1 if s.size else 0
    return h[keep], p[keep], g, s, n_missing, n_g, n_s


def _level_point(
    h: np.ndarray,
    p: np.ndarray,
    g: np.ndarray | None,
    s: np.ndarray | None,
    n_g: int,
    n_s: int,
    level: str,
) -> tuple[dict[str, float], LevelInfo, np.ndarray | None]:
    """Point estimates on clean arrays; also returns the per-group table at group level."""
    if level == "sample":
        return correlations(h, p), LevelInfo(n=h.size, n_systems=n_s), None
    if level == "group":
        if g is None:
            raise ValueError("group level needs groups")
        table = _group_table(h, p, g, n_g)
        valid = ~np.isnan(table[:, 0])
        used = int(valid.sum())
        if used:
            values = {m: float(np.mean(table[valid, j])) for j, m in enumerate(COEFFICIENTS)}
        else:
            values = _nan_result()
        info = LevelInfo(n=h.size, n_groups=used, groups_skipped=n_g - used, n_systems=n_s)
        return values, info, table
    if s is None:
        raise ValueError("system level needs systems")
    mh, mp = _system_means(h, p, s, n_s)
    return correlations(mh, mp), LevelInfo(n=h.size, n_groups=n_g, n_systems=n_s), None


def level_correlations(
    human: Sequence[float],
    pred: Sequence[float],
    *,
    level: str,
    groups: Sequence[Hashable] | None = None,
    systems: Sequence[Hashable] | None = None,
) -> tuple[dict[str, float], LevelInfo]:
    """Correlations at one meta-evaluation level (point estimates only).

    Parameters
    ----------
    human, pred : sequence of float
        Paired scores per item. Items where either is ``None``/NaN are dropped.
    level : {"sample", "group", "system"}
        See the module docstring.
    groups : sequence of hashable, optional
        Group label per item (article, prompt, ...). Required at group level.
    systems : sequence of hashable, optional
        System label per item. Required at system level.

    Returns
    -------
    values : dict
        ``{"pearson", "spearman", "kendall"}`` floats (NaN when undefined,
        e.g. all groups skipped).
    info : LevelInfo
        Items, groups used and skipped, systems.

    Notes
    -----
    Group level: per-group coefficients, then their unweighted mean over the
    groups kept; a group is skipped when either side has a single distinct
    value (exact equality). System level: unweighted mean score per system on
    each side, then one correlation across systems. This matches UniEval's
    ``reproduce/correlation.py``.
    """
    _check_level(level)
    if level == "group" and groups is None:
        raise ValueError("group level needs groups")
    if level == "system" and systems is None:
        raise ValueError("system level needs systems")
    h, p, g, s, _, n_g, n_s = _prepare(human, pred, groups, systems)
    values, info, _ = _level_point(h, p, g, s, n_g, n_s, level)
    return values, info


# --------------------------------------------------------------------------- bootstrap


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two ``(B, m)`` arrays; NaN for constant rows.

    Used only to vectorise bootstrap resamples (Spearman = Pearson on average
    ranks, as scipy computes it); point estimates always come from scipy.
    """
    const = np.all(a == a[:, :1], axis=1) | np.all(b == b[:, :1], axis=1)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with _Quiet():
        r = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    r = np.clip(r, -1.0, 1.0)
    r[const] = np.nan
    return r


def _rowwise_correlations(H: np.ndarray, P: np.ndarray, *, only: str | None = None) -> np.ndarray:
    """Coefficients for each row of ``(B, m)`` arrays, shape ``(B, 3)``.

    NaN entries mark absent values (e.g. a system missing from a resample):
    rows containing them are handled one by one, ignoring those entries.
    ``only`` names the one coefficient a caller reads (the others of full
    rows are left NaN): Kendall's tau is one scipy call per row, most of the
    time of a paired test on Pearson or Spearman.
    """
    from scipy import stats

    B = H.shape[0]
    out = np.full((B, len(COEFFICIENTS)), np.nan)
    if B == 0 or H.shape[1] == 0:
        return out
    full = np.all(np.isfinite(H) & np.isfinite(P), axis=1)
    if H.shape[1] >= 2 and full.any():
        Hf, Pf = H[full], P[full]
        pearson = _rowwise_pearson(Hf, Pf)
        if only in (None, "pearson"):
            out[full, 0] = pearson
        if only in (None, "spearman"):
            out[full, 1] = _rowwise_pearson(
                stats.rankdata(Hf, axis=1), stats.rankdata(Pf, axis=1)
            )
        if only in (None, "kendall"):
            taus = np.full(Hf.shape[0], np.nan)
            defined = np.flatnonzero(~np.isnan(pearson))
            if Hf.shape[1] <= KENDALL_PAIRS_UP_TO:
                taus[defined] = _rowwise_kendall_b(Hf[defined], Pf[defined])
            else:
                with _Quiet():
                    for i in defined:
                        taus[i] = stats.kendalltau(Hf[i], Pf[i], variant="b")[0]
            out[full, 2] = taus
    for i in np.flatnonzero(~full):
        r = correlations(H[i], P[i])
        out[i] = [r[m] for m in COEFFICIENTS]
    return out


def _resampled_ranks(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """The average rank of each item within each resample, shape ``(B, n)``, from how often each item is drawn.

    In a resample where ``C`` drawn items share an item's value and ``L`` drawn items are below it, its
    average rank is ``L + (C + 1) / 2``, what :func:`scipy.stats.rankdata` gives the drawn copies: counting
    per distinct value is linear in the items, where ranking every resample sorts it.
    """
    values, group = np.unique(x, return_inverse=True)
    order = np.argsort(group, kind="stable")
    starts = np.searchsorted(group[order], np.arange(values.size))
    C = np.add.reduceat(W[:, order], starts, axis=1)
    return (np.cumsum(C, axis=1) - C + (C + 1) / 2.0)[:, group]


def _resampled_spearman(a: np.ndarray, b: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Spearman of each resample given as draw counts ``W`` (B, n): Pearson of the resample's average ranks,
    each item weighted by how often it was drawn; NaN where either side is constant in the resample."""
    ra, rb = _resampled_ranks(a, W), _resampled_ranks(b, W)
    n = W.sum(axis=1, keepdims=True)
    da = ra - (W * ra).sum(axis=1, keepdims=True) / n
    db = rb - (W * rb).sum(axis=1, keepdims=True) / n
    va, vb = (W * da * da).sum(axis=1), (W * db * db).sum(axis=1)
    with _Quiet():
        r = np.clip((W * da * db).sum(axis=1) / np.sqrt(va * vb), -1.0, 1.0)
    drawn = W > 0
    for x in (a, b):
        r[np.where(drawn, x, np.inf).min(axis=1) == np.where(drawn, x, -np.inf).max(axis=1)] = np.nan
    return r


def _bootstrap(
    h: np.ndarray,
    p: np.ndarray,
    g: np.ndarray | None,
    s: np.ndarray | None,
    n_g: int,
    n_s: int,
    level: str,
    table: np.ndarray | None,
    n_bootstrap: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Bootstrap replicate coefficients, shape ``(n_bootstrap, 3)``, computed in blocks of resamples."""
    n = h.size
    if level == "sample" and g is not None:
        # items that share a source drawn together (the one rule for evidence, judge_engine.evidence): a resample
        # is whole groups, so its item count varies; equal lengths are computed at once
        def block(b: int) -> np.ndarray:
            idx_sets, order = group_resamples(g, n_g, b, rng)
            out = np.concatenate([_rowwise_correlations(h[idx], p[idx]) for idx in idx_sets])
            return out[np.argsort(order, kind="stable")]
        units = n

    elif level == "sample":
        def block(b: int) -> np.ndarray:
            idx = rng.integers(0, n, size=(b, n))
            return _rowwise_correlations(h[idx], p[idx])
        units = n

    elif level == "group":
        # Resampling whole groups leaves each group's coefficients unchanged,
        # so a replicate is the weighted mean of the per-group table.
        assert table is not None
        valid = ~np.isnan(table[:, 0])
        vals = np.where(valid[:, None], table, 0.0)
        valid_f = valid.astype(float)

        def block(b: int) -> np.ndarray:
            W = _resample_weights(rng, n_g, b).astype(float)
            with _Quiet():
                return _weighted_sums(W, vals) / _weighted_sums(W, valid_f[:, None])
        units = n_g

    elif g is not None:
        # system level, whole groups drawn: sums and counts per (group, system).
        assert s is not None
        cell = g * n_s + s
        size = n_g * n_s
        Sh = np.bincount(cell, weights=h, minlength=size).reshape(n_g, n_s)
        Sp = np.bincount(cell, weights=p, minlength=size).reshape(n_g, n_s)
        C = np.bincount(cell, minlength=size).reshape(n_g, n_s).astype(float)

        def block(b: int) -> np.ndarray:
            W = _resample_weights(rng, n_g, b).astype(float)
            with _Quiet():
                cnt = _weighted_sums(W, C)
                MH, MP = _weighted_sums(W, Sh) / cnt, _weighted_sums(W, Sp) / cnt
            return _rowwise_correlations(MH, MP)
        units = n_g

    else:
        # system level, items drawn.
        assert s is not None

        def block(b: int) -> np.ndarray:
            idx = rng.integers(0, n, size=(b, n))
            cell = (s[idx] + (np.arange(b) * n_s)[:, None]).ravel()
            size = b * n_s
            cnt = np.bincount(cell, minlength=size).astype(float)
            with _Quiet():
                MH = (np.bincount(cell, weights=h[idx].ravel(), minlength=size) / cnt).reshape(b, n_s)
                MP = (np.bincount(cell, weights=p[idx].ravel(), minlength=size) / cnt).reshape(b, n_s)
            return _rowwise_correlations(MH, MP)
        units = n

    parts = [block(b) for b in _block_sizes(n_bootstrap, units)]
    return np.concatenate(parts) if parts else np.full((0, len(COEFFICIENTS)), np.nan)


def grouped_tail(confidence: float, n_groups: int) -> float:
    """The tail at which an items' interval over resampled whole groups takes its bounds: Hesterberg's expanded
    percentile (:func:`judge_engine.metrics._paired.expanded_tail`, as the gate's), since a plain percentile
    interval over a few groups is too narrow (a random judge's items' interval over 5 sources of 6 excluded zero
    in 12% of draws at the nominal 5%, bench verdicts)."""
    from ._paired import expanded_tail

    return expanded_tail(confidence, n_groups)


MIN_BOOTSTRAP_UNITS = 5
"""Fewest bootstrap units (items, or groups where whole groups are resampled) for which an interval is given.

k units have C(2k-1, k) distinct resamples: 3 for two groups, 10 for three,
35 for four, 126 for five. Below five, the 2.5th and 97.5th percentiles fall
on a handful of atoms and the "interval" says more about the resampling than
about the judge; the figure is then shown without one, with a note, and
readers are pointed to the sample level beside it.
"""


def meta_evaluate(
    human: Sequence[float],
    pred: Sequence[float],
    *,
    level: str = "sample",
    groups: Sequence[Hashable] | None = None,
    systems: Sequence[Hashable] | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    independent: bool = False,
) -> MetaEvalReport:
    """Correlations of predicted with human scores, with bootstrap CIs.

    Parameters
    ----------
    human : sequence of float
        Human score per item (items with a missing human score are dropped but
        not counted as missing predictions).
    pred : sequence of float or None
        Predicted score per item; ``None``/NaN marks a missing prediction (a
        parse failure). Such items are dropped and counted in ``n_missing``.
    level : {"sample", "group", "system"}, default "sample"
        See the module docstring.
    groups : sequence of hashable, optional
        Group label per item. Required at group level; at system level, and at
        sample level where some group holds two items, whole groups are the
        bootstrap units (unless ``independent``).
    systems : sequence of hashable, optional
        System label per item. Required at system level; at other levels only
        used to report ``n_systems``.
    n_bootstrap : int, default 1000
        Number of bootstrap resamples; 0 disables the CIs (NaN bounds).
    confidence : float, default 0.95
        Coverage of the percentile interval.
    seed : int or None, default 0
        Seed of the resampling generator; the same seed gives the same CIs.
    independent : bool, default False
        At sample level: the items are independent whatever their groups, so
        items are resampled one by one.

    Returns
    -------
    MetaEvalReport

    Notes
    -----
    Point estimates are those of :func:`level_correlations` on the full data.
    Bootstrap units: whole groups at group level; whole groups at system and
    sample level when ``groups`` is given and some group holds two items
    (system means and items' correlations are recomputed from the drawn
    groups), otherwise items; ``resampled`` says which. The interval is the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles of the
    replicates with a defined value; with fewer than
    :data:`MIN_BOOTSTRAP_UNITS` bootstrap units (e.g. test items from three
    groups at group level) the bounds are NaN and ``ci_note`` says why. Percentile intervals inherit the
    resampling bias of the statistic: at system level with few systems and a
    correlation near +/-1, resampling adds noise to the system means, so the
    interval can lie entirely below the point estimate.
    """
    _check_level(level)
    if level == "group" and groups is None:
        raise ValueError("group level needs groups")
    if level == "system" and systems is None:
        raise ValueError("system level needs systems")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be >= 0, got {n_bootstrap}")

    h, p, g, s, n_missing, n_g, n_s = _prepare(human, pred, groups, systems)
    values, info, table = _level_point(h, p, g, s, n_g, n_s, level)

    lows = highs = np.full(len(COEFFICIENTS), np.nan)
    # at the items' level, items that share a source are resampled with it (a group holds two items), unless the
    # caller says they are independent: resampling Topical-Chat's responses one by one treats six replies to one
    # context as six independent pieces of evidence (judge_engine.evidence, the one rule)
    grouped_items = level == "sample" and g is not None and not independent and n_g < h.size
    units = {"sample": n_g if grouped_items else h.size, "group": n_g,
             "system": n_g if g is not None else h.size}[level]
    unit_name = "items" if (level == "sample" and not grouped_items) or (level == "system" and g is None) else "groups"
    ci_note = ""
    if n_bootstrap > 0 and units < MIN_BOOTSTRAP_UNITS:
        # a handful of units has a handful of distinct resamples: no interval rather than a meaningless one
        ci_note = f"too few {unit_name} for an interval ({units} < {MIN_BOOTSTRAP_UNITS})" + (
            ": the items come from so few sources, and items of one source are not independent"
            if grouped_items else "")
    elif n_bootstrap > 0:
        rng = np.random.default_rng(seed)
        reps = _bootstrap(h, p, g if level != "sample" or grouped_items else None, s, n_g, n_s, level, table,
                          n_bootstrap, rng)
        alpha = grouped_tail(confidence, units) if grouped_items else (1.0 - confidence) / 2.0
        with _Quiet():
            lows, highs = np.nanpercentile(reps, [100.0 * alpha, 100.0 * (1.0 - alpha)], axis=0)

    corr = {
        m: Correlation(float(values[m]), float(lows[j]), float(highs[j]))
        for j, m in enumerate(COEFFICIENTS)
    }
    return MetaEvalReport(
        level=level,
        pearson=corr["pearson"],
        spearman=corr["spearman"],
        kendall=corr["kendall"],
        n=info.n,
        n_missing=n_missing,
        n_groups=n_g if grouped_items else info.n_groups,
        groups_skipped=info.groups_skipped,
        n_systems=info.n_systems,
        ci_note=ci_note,
        resampled=unit_name if n_bootstrap > 0 and not ci_note else "",
    )


# Jobs kept apart by module, re-exported here so ``from judge_engine.metrics import X`` reads every name. They
# are imported last because they use the helpers above (``from . import ...`` reads the partly built package).
from ._selection import (  # noqa: E402
    MIN_SELECTION_COVERAGE, SelectionFitness, correlation_p_value, coverage_adjusted, items_for_significance,
    selection_fitness)
from ._repeat import retest_agreement, sample_correlation  # noqa: E402
from ._probes import rate_interval, slice_difference_tests, spread_ratio  # noqa: E402
from ._paired import PairedDifference, paired_mean_difference  # noqa: E402
