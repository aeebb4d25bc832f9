"""Resampling for the bootstrap: how often each unit is drawn, whole groups drawn together, and the blocks
resamples are evaluated in (pure numpy; :mod:`judge_engine.metrics` re-exports every name)."""

from __future__ import annotations

import numpy as np


def _resample_weights(rng: np.random.Generator, n_units: int, n_bootstrap: int) -> np.ndarray:
    """How often each unit is drawn in each resample, shape ``(B, n_units)``."""
    idx = rng.integers(0, n_units, size=(n_bootstrap, n_units))
    flat = idx + (np.arange(n_bootstrap) * n_units)[:, None]
    return np.bincount(flat.ravel(), minlength=n_bootstrap * n_units).reshape(n_bootstrap, n_units)


BOOTSTRAP_CHUNK_CELLS = 1 << 20
"""Resample x unit draws the bootstrap holds at once (8 MB per float array).

Resamples are drawn and evaluated in consecutive blocks of
``max(1, BOOTSTRAP_CHUNK_CELLS // units)`` rows, so memory stays bounded
(1,000 resamples of 100k items drawn at once took several GB). The blocks
take the generator's draws in the same order as one big draw would and
each replicate is computed from its own row only, so the same seed gives
the same replicates whatever the block size.
"""


def group_resamples(codes: np.ndarray, n_groups: int, n_bootstrap: int,
                    rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    """Item indices of ``n_bootstrap`` resamples of whole groups (``codes``: each item's group, 0..n_groups-1).

    A resample draws ``n_groups`` groups with replacement and takes all their items, so resamples differ in length:
    they come bucketed by length, one ``(resamples, items)`` array per length (equal-sized groups, the usual case,
    give one), with ``order``: each bucketed row's position among the resamples as drawn."""
    codes = np.asarray(codes, dtype=np.intp)
    order_items = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order_items], np.arange(n_groups + 1))
    members = [order_items[bounds[k]:bounds[k + 1]] for k in range(n_groups)]
    sizes = np.diff(bounds)
    drawn = rng.integers(0, n_groups, size=(n_bootstrap, n_groups))
    if n_groups and np.all(sizes == sizes[0]):  # equal groups: one block, no loop
        return [np.stack(members)[drawn].reshape(n_bootstrap, -1)], np.arange(n_bootstrap)
    lengths = sizes[drawn].sum(axis=1)
    buckets, rows = [], []
    for length in np.unique(lengths):
        at = np.flatnonzero(lengths == length)
        buckets.append(np.stack([np.concatenate([members[k] for k in drawn[r]]) for r in at]))
        rows.append(at)
    return buckets, (np.concatenate(rows) if rows else np.zeros(0, dtype=np.intp))


def _weighted_sums(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``W @ X`` row by row: unlike BLAS, each row's sums do not depend on how many rows are multiplied."""
    return np.einsum("bu,uk->bk", W, X)


def _block_sizes(n_bootstrap: int, units: int) -> list[int]:
    """Rows per block, in order, summing to ``n_bootstrap``."""
    rows = max(1, BOOTSTRAP_CHUNK_CELLS // max(units, 1))
    return [min(rows, n_bootstrap - start) for start in range(0, n_bootstrap, rows)]
