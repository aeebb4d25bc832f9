"""Correlations at the three meta-evaluation levels (sample, group, system; see :mod:`judge_engine.metrics`): the
point estimates (:func:`level_correlations`) and the report with bootstrap intervals (:func:`meta_evaluate`)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Hashable, Sequence

import numpy as np

from ._arrays import _as_float_array, _codes, _is_constant, _nan_result, _Quiet
from ._bootstrap import MIN_BOOTSTRAP_UNITS, _bootstrap, grouped_tail
from ._correlation import correlations
from ._records import COEFFICIENTS, LEVELS, Correlation, LevelInfo, MetaEvalReport


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
        See :mod:`judge_engine.metrics`.
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
        See :mod:`judge_engine.metrics`.
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
