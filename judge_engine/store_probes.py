"""Kept probe reports: a finished run's report as JSON text under a fingerprint (``probe-reports``).

Part of the store: the SQL here touches the ``probe_reports`` table only (and reads, never writes, the stamps of
what a report depends on). It lives beside :mod:`judge_engine.store` because that module is near the project's
700-line limit. What a report is, how it is fingerprinted and read back is :mod:`judge_engine.probes._stored`'s
job; a report is derived data, recomputed whenever its fingerprint changes, never a person's entry.
"""

from __future__ import annotations

import time

from .store import ReadOnly, Store

__all__ = ["get", "inputs_stamp", "put"]


def get(store: Store, run_id: int, fingerprint: str) -> str | None:
    """The report kept for ``run_id`` under ``fingerprint``; None when there is none."""
    row = next(iter(store.db.query("select report from probe_reports where run_id = ? and fingerprint = ?",
                                   [int(run_id), fingerprint])), None)
    return None if row is None else row["report"]


def put(store: Store, run_id: int, fingerprint: str, report: str) -> bool:
    """Keep ``report`` under ``fingerprint`` and drop the run's reports of other fingerprints (stale derived data);
    False when the store is read-only (a viewer's report is computed, not kept)."""
    try:
        with store.write() as db:
            db.execute("insert or ignore into probe_reports (run_id, fingerprint, report, created) values (?, ?, ?, ?)",
                       [int(run_id), fingerprint, report, time.time()])
            db.execute("delete from probe_reports where run_id = ? and fingerprint != ?", [int(run_id), fingerprint])
    except ReadOnly:
        return False
    return True


def inputs_stamp(store: Store, dataset: str) -> tuple:
    """What changes when a report's human side may have: the dataset's version, its labels (count and last id)
    and the experts. A cache in front of :func:`judge_engine.probes.probe_run` keys on it beside the run's
    version; the fingerprint is what decides."""
    version = next(iter(store.db.query("select version from datasets where name = ?", [dataset])), {})
    labels = next(iter(store.db.query("select count(*) as n, max(id) as last from annotations where dataset = ?",
                                      [dataset])))
    experts = tuple(sorted(r["name"] for r in store.db.query("select name from annotators where expert = 1")))
    return version.get("version"), labels["n"], labels["last"], experts
