"""Bootstrap replicates of the three coefficients at each level, whole resamples at once (rows of arrays), and
the fewest units an interval is given for."""

from __future__ import annotations

import numpy as np

from ._arrays import _Quiet
from ._correlation import correlations
from ._kendall import KENDALL_PAIRS_UP_TO, _rowwise_kendall_b
from ._paired import expanded_tail
from ._records import COEFFICIENTS
from ._resample import _block_sizes, _resample_weights, _weighted_sums, group_resamples


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
    return expanded_tail(confidence, n_groups)


MIN_BOOTSTRAP_UNITS = 5
"""Fewest bootstrap units (items, or groups where whole groups are resampled) for which an interval is given.

k units have C(2k-1, k) distinct resamples: 3 for two groups, 10 for three,
35 for four, 126 for five. Below five, the 2.5th and 97.5th percentiles fall
on a handful of atoms and the "interval" says more about the resampling than
about the judge; the figure is then shown without one, with a note, and
readers are pointed to the sample level beside it.
"""
