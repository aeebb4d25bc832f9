"""The human and judge scores of a ``score`` job with ``--human-col``, kept by id on disk, and how many bootstrap
resamples the summary's correlations take (out of :mod:`judge_engine.score_files`, which writes the verdicts)."""

from __future__ import annotations

import math
from typing import Any, Iterable


# Each resample re-ranks every item (Kendall's tau), about 0.85 s a resample at a million items on a loaded 2-core
# machine: 1,000 of them made a million-item summary come 14 minutes after the last score. The interval's width
# shrinks with the items, so past 20,000 items fewer resamples still place its ends well inside their own width.
BOOTSTRAP_ITEM_BUDGET = 20_000_000
MIN_RESAMPLES = 100


def bootstrap_resamples(n_items: int) -> int:
    """Resamples for the summary's correlation intervals: 1,000, fewer past 20,000 items, never below 100."""
    return max(MIN_RESAMPLES, min(1000, BOOTSTRAP_ITEM_BUDGET // max(n_items, 1)))


class _Pairs:
    """Human and judge scores by item id, in a private temporary SQLite file: ``--human-col`` on a million items
    takes the memory of two arrays of floats, not of two dicts of ids."""

    def __init__(self) -> None:
        import sqlite3

        self._db = sqlite3.connect("", check_same_thread=False)
        self._db.execute("create table pairs (id text primary key, human real, judge real)")
        self.size = 0

    def add_human(self, pairs: Iterable[tuple[str, float]]) -> None:
        before = self._db.total_changes
        self._db.executemany("insert or ignore into pairs (id, human) values (?, ?)", pairs)
        self.size += self._db.total_changes - before

    def add_scores(self, scores: Iterable[tuple[str, float | None]]) -> None:
        self._db.executemany("update pairs set judge = ? where id = ?", ((v, i) for i, v in scores))

    def arrays(self) -> tuple[Any, Any]:
        """Human and judge scores in input order, NaN where the judge gave none."""
        import numpy as np

        rows = self._db.execute("select human, judge from pairs order by rowid")
        flat = np.fromiter((math.nan if x is None else x for row in rows for x in row), dtype=float,
                           count=2 * self.size)
        return flat[0::2].copy(), flat[1::2].copy()

    def __len__(self) -> int:
        return self.size

    def close(self) -> None:
        self._db.close()
