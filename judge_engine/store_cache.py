"""The size of a database's LLM call cache, and clearing it (``judge-workbench cache``).

Part of the store: the SQL here touches the ``llm_cache`` table only, never runs, verdicts, labels,
criteria or the audit log. It lives beside :mod:`judge_engine.store` because that module is at the
project's 700-line limit.

Nothing stored depends on a cached call: a finished run keeps its judge and verdicts in their own
tables, and an interrupted run resumes from its stored judge and verdicts; only the calls it had not
stored yet (a fit cut short, items not yet scored) are sent again. So a cleared cache means calls are
paid again, never lost data. A run repeated with the same settings, ``probes --stability`` and
``score`` on a file already scored then pay for their calls too, and sampled replies may differ.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .store import Store

__all__ = ["CacheGroup", "CacheSize", "Cleared", "cache_size", "clear_cache", "older_than_days"]

_BYTES = "length(cast(key as blob)) + length(cast(request as blob)) + length(cast(response as blob))"
"""Bytes of a row's text (UTF-8), not pages on disk: what deleting it frees, before SQLite's overhead."""


@dataclass(frozen=True)
class CacheGroup:
    """The cached calls of one backend and model."""

    backend: str
    model: str
    rows: int
    bytes: int
    oldest: float | None
    """Unix time of the oldest call kept (None when the rows carry no time)."""


@dataclass(frozen=True)
class CacheSize:
    """A database's call cache: rows and bytes in all, by backend and model, and the file's size."""

    rows: int
    bytes: int
    groups: tuple[CacheGroup, ...]
    file_bytes: int
    """The database file with its write-ahead log: what the disk holds, cache or not."""


@dataclass(frozen=True)
class Cleared:
    """What :func:`clear_cache` deleted, and the file's size before and after VACUUM."""

    rows: int
    bytes: int
    rows_left: int
    file_bytes_before: int
    file_bytes_after: int


def _file_bytes(store: Store) -> int:
    return sum(p.stat().st_size for p in (store.path, store.path.with_name(store.path.name + "-wal"))
               if p.exists())


def cache_size(store: Store) -> CacheSize:
    """The call cache of ``store`` (one scan of the table)."""
    groups = tuple(CacheGroup(r["backend"] or "", r["model"] or "", int(r["n"]), int(r["b"] or 0), r["oldest"])
                   for r in store.db.query(f"select backend, model, count(*) as n, sum({_BYTES}) as b, "
                                           "min(created) as oldest from llm_cache group by backend, model "
                                           "order by b desc"))
    return CacheSize(sum(g.rows for g in groups), sum(g.bytes for g in groups), groups, _file_bytes(store))


def older_than_days(value: str) -> float:
    """``--older-than``'s number of days; ValueError in one line for anything but a number of days >= 0."""
    try:
        days = float(value)
    except (TypeError, ValueError):
        days = math.nan
    if not math.isfinite(days) or days < 0:
        raise ValueError(f"--older-than takes a number of days, 0 or more (e.g. 30 or 0.5), not {value!r}; "
                         "nothing was deleted")
    return days


def clear_cache(store: Store, *, model: str | None = None, older_than: float | None = None,
                now: float | None = None) -> Cleared:
    """Delete cached calls (all, or those of ``model``, or made more than ``older_than`` days ago), then VACUUM.

    Only ``llm_cache`` rows are deleted. VACUUM gives the freed pages back to the disk; it needs as much free
    space as the database and waits for other writers (the app, a run) through the busy timeout.
    """
    clauses, args = [], []
    if model is not None:
        clauses.append("model = ?")
        args.append(model)
    if older_than is not None:
        clauses.append("created < ?")
        args.append((time.time() if now is None else now) - older_than * 86_400)
    where = ("where " + " and ".join(clauses)) if clauses else ""
    before = _file_bytes(store)
    with store.write() as db:
        found = next(iter(db.query(f"select count(*) as n, sum({_BYTES}) as b from llm_cache {where}", args)))
        db.conn.execute(f"delete from llm_cache {where}", args)
    store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # VACUUM rewrites the file; the log is folded in first
    store.db.conn.execute("VACUUM")
    store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    left = store.db["llm_cache"].count
    return Cleared(int(found["n"]), int(found["b"] or 0), left, before, _file_bytes(store))
