"""Cached readers of stored datasets and verdicts, keyed so that a change in the store is read again."""

from __future__ import annotations

from typing import Any

import streamlit as st

from judge_engine.records import Dataset, RunRecord, Verdict
from judge_engine.store import Store


@st.cache_data(max_entries=8, show_spinner=False)
def _load_dataset(path: str, name: str, stamp: tuple[Any, ...]) -> Dataset:
    return Store(path).load_dataset(name)


def load_dataset(store: Store, name: str) -> Dataset:
    """``store.load_dataset(name)``, cached until the dataset or its aspect definitions change."""
    rows = [r for r in store.list_datasets() if r["name"] == name]
    if not rows:
        return store.load_dataset(name)  # raises NotFound with the engine's message
    row = rows[0]
    stamp = (row["created"], row["n_samples"], row.get("version"), repr(row["aspects"]))
    return _load_dataset(str(store.path), name, stamp)


def human_dataset(store: Store, name: str, aggregate: str = "imported") -> Dataset:
    """Dataset ``name`` with the human score of ``aggregate`` (a run's ``human_aggregate``): the cached
    imported dataset, with the stored labels applied when the aggregate is not ``imported``."""
    from judge_engine import annotations

    dataset = load_dataset(store, name)
    chosen = annotations.parse_aggregate(aggregate)
    if chosen.kind == "imported":
        return dataset
    return annotations.apply_aggregate(dataset, store.annotations(name), chosen, store.experts())


@st.cache_data(max_entries=16, show_spinner=False)
def _load_verdicts(path: str, run_id: int, version: int) -> list[Verdict]:
    return Store(path).load_verdicts(run_id)


def load_verdicts(store: Store, run: RunRecord) -> list[Verdict]:
    """The verdicts of ``run``, cached by (database, run id, run version)."""
    return _load_verdicts(str(store.path), run.id, int(run.version or 0))
