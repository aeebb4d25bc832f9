"""Fitted aggregator models kept in the run's database, for the next process that fits the same ones.

HD-Eval refits its MLP aggregators (5 folds per layer and group of aspects, and the whole-data model its scoring
reads) on every run. A next round on an unchanged tree gets every score from the cache and fits exactly the same
models again: 12-23 s of a cache-only round at load 10, in a worker that starts with nothing fitted (issue 62
item 6). :class:`KeptFits` keeps each model as :meth:`judge_engine.aggregate.FittedMLP.to_bytes` (numbers, no
pickle) under the key of everything it is a function of (:func:`judge_engine.aggregate.fit_model`), in its own
table ``aggregator_fits``; :func:`judge_engine.runs.execute_run` reads and writes it while a run executes.

Derived data only: a row lost or deleted is fitted again. Each statement opens its own connection: the fits run on
the method's aggregator thread, not the one that opened the store.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

TABLE = "aggregator_fits"


class KeptFits:
    """A :class:`judge_engine.aggregate.FitKeeper` over the database at ``path``."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        if not self._ready:
            with db:  # two processes may race to create it: the second keeps it
                db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, model BLOB NOT NULL, "
                           "created REAL NOT NULL)")
            self._ready = True
        return db

    def get(self, key: str) -> bytes | None:
        try:
            db = self._connect()
            try:
                row = db.execute(f"SELECT model FROM {TABLE} WHERE key = ?", (key,)).fetchone()
            finally:
                db.close()
        except sqlite3.Error:  # a database that cannot be read here: the model is fitted again
            return None
        return bytes(row[0]) if row else None

    def put(self, key: str, blob: bytes) -> None:
        try:
            db = self._connect()
            try:
                with db:
                    db.execute(f"INSERT OR IGNORE INTO {TABLE} (key, model, created) VALUES (?, ?, ?)",
                               (key, blob, time.time()))
            finally:
                db.close()
        except sqlite3.Error:  # read-only or busy: the next process fits it again, nothing else is lost
            pass
