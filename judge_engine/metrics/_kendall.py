"""Kendall's tau-b of many rows at once (a bootstrap's resamples), from the signs of all their pairs."""

from __future__ import annotations

import numpy as np

KENDALL_PAIRS_UP_TO = 200
"""Rows of up to this many items get Kendall's tau from all their pairs at once (:func:`_rowwise_kendall_b`);
longer ones one scipy call per row (the pairs' arrays would grow with the square of the items)."""


def _rowwise_kendall_b(H: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of ``(B, m)`` arrays from the signs of all their pairs, as
    ``scipy.stats.kendalltau(variant="b")`` gives it: (concordant - discordant) / sqrt((pairs - ties in H) *
    (pairs - ties in P)); NaN where either side is constant. One scipy call per row was most of a run's summary
    (2,016 calls, 2 s of an 11 s cache-only HD-Eval round at load 5, issue 62 item 6)."""
    B, m = H.shape
    out = np.full(B, np.nan)
    if B == 0 or m < 2:
        return out
    i, j = np.triu_indices(m, k=1)
    pairs = i.size
    step = max(1, 4_000_000 // pairs)  # bounds the (rows, pairs) arrays to a few tens of MB
    for start in range(0, B, step):
        h, p = H[start:start + step], P[start:start + step]
        dh, dp = np.sign(h[:, i] - h[:, j]), np.sign(p[:, i] - p[:, j])
        numerator = (dh * dp).sum(axis=1)
        denominator = np.sqrt((pairs - (dh == 0).sum(axis=1)) * (pairs - (dp == 0).sum(axis=1)).astype(float))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[start:start + step] = np.where(denominator > 0, np.clip(numerator / denominator, -1.0, 1.0), np.nan)
    return out
