"""Fitted aggregator models kept in the run's database, for the next process that fits the same ones.

HD-Eval refits its MLP aggregators (5 folds per layer and group of aspects, and the whole-data model its scoring
reads) on every run. A next round on an unchanged tree gets every score from the cache and fits exactly the same
models again: 12-23 s of a cache-only round at load 10, in a worker that starts with nothing fitted (issue 62
item 6). :class:`KeptFits` keeps each model as :meth:`judge_engine.aggregate.FittedMLP.to_bytes` (numbers, no
pickle) under the key of everything it is a function of (:func:`judge_engine.aggregate.fit_model`), in its own
table ``aggregator_fits``; :func:`judge_engine.runs.execute_run` reads and writes it while a run executes.

Derived data only: a row lost or deleted is fitted again. The fits run on the method's aggregator thread; the
store gives each thread its own connection.
"""

from __future__ import annotations

import sqlite3
import time

from ..store import ReadOnly, Store


class KeptFits:
    """A :class:`judge_engine.aggregate.FitKeeper` over ``store``'s ``aggregator_fits`` table."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, key: str) -> bytes | None:
        try:
            row = self.store.db.execute("SELECT model FROM aggregator_fits WHERE key = ?", [key]).fetchone()
        except sqlite3.Error:  # a database that cannot be read here: the model is fitted again
            return None
        return bytes(row[0]) if row else None

    def put(self, key: str, blob: bytes) -> None:
        try:
            with self.store.write() as db:
                db.execute("INSERT OR IGNORE INTO aggregator_fits (key, model, created) VALUES (?, ?, ?)",
                           [key, blob, time.time()])
        except (sqlite3.Error, ReadOnly):  # busy or a viewer's: the next process fits it again, nothing else is lost
            pass
