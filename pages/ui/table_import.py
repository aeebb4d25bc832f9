"""Importing a user's table: the import itself, and the preview, column guesses and duplicates the form shows."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd
import streamlit as st

from judge_engine import data
from judge_engine.records import Dataset
from judge_engine.store import Store


@dataclass(frozen=True)
class ImportColumns:
    """Which column of a user's table holds what: the choices of the Datasets page's column mapping.

    Each value is a column name of the file; an optional role left as None is
    not read (see :func:`judge_engine.data.load_table` for what each becomes).
    """

    input: str
    """What the output was generated from (article, dialogue, prompt, ...)."""
    output: str
    """The text the humans scored."""
    scores: tuple[str, ...]
    """The human-score columns, one aspect each, named after its column."""
    group: str | None = None
    """Items sharing a source; None: every row is its own group."""
    system: str | None = None
    """Which system produced the output (for system-level meta-evaluation)."""
    id: str | None = None
    """A sample id; None: the row number."""
    context: str | None = None
    """Extra grounding, e.g. the fact a dialogue response should use."""
    reference: str | None = None
    """A reference output."""


def import_table(store: Store, path: str | Path, *, name: str, columns: ImportColumns,
                 aspect_ranges: dict[str, tuple[float, float]] | None = None, task: str = "",
                 progress: Callable[[int, int], Any] | None = None, dialect: data.CsvDialect | None = None,
                 duplicates: str = "keep") -> tuple[Dataset, list[str]]:
    """Import a user table into ``store`` under ``name``, reading the ``columns`` chosen; returns (dataset, warnings).

    Raises ``ValueError`` (before reading the file) if the name is empty or
    already taken, and :class:`judge_engine.data.DataImportError` for any
    problem with the file. Nothing is written unless the whole file imports,
    so an existing dataset is never touched. ``dialect`` (None: detected) and
    ``duplicates`` ("keep" or "merge") are passed to :func:`judge_engine.data.load_table`.
    """
    name = name.strip()
    if not name:
        raise ValueError("give the dataset a name")
    if store.has_dataset(name):
        raise ValueError(f"a dataset named {name!r} already exists; choose another name "
                         "(the stored one is kept as it is)")
    warnings: list[str] = []
    dataset = data.load_table(path, name=name, input_col=columns.input, output_col=columns.output,
                              score_cols=list(columns.scores), group_col=columns.group, system_col=columns.system,
                              id_col=columns.id, context_col=columns.context, reference_col=columns.reference,
                              aspect_ranges=aspect_ranges or None, task=task, progress=progress,
                              warnings=warnings, dialect=dialect, duplicates=duplicates)
    store.save_dataset(dataset)  # replace=False: refuses a name taken meanwhile
    return dataset, warnings


@st.cache_data(max_entries=8, show_spinner=False)
def _duplicates(path: str, stamp: tuple[float, int], input_col: str, output_col: str,
                dialect: tuple[str, str, str] | None) -> list[list[int]]:
    return data.find_duplicates(path, input_col=input_col, output_col=output_col,
                                dialect=data.CsvDialect(*dialect) if dialect else None)


def duplicate_rows(path: str | Path, input_col: str, output_col: str,
                   dialect: data.CsvDialect | None) -> list[list[int]]:
    """:func:`judge_engine.data.find_duplicates`, cached per file, columns and dialect (a page rerun
    does not read a large file again)."""
    stat = Path(path).stat()
    key = (dialect.delimiter, dialect.quotechar, dialect.decimal) if dialect else None
    return _duplicates(str(path), (stat.st_mtime, stat.st_size), input_col, output_col, key)


def guess_column(columns: list[str], patterns: Iterable[str]) -> str | None:
    """The first column whose lower-cased name matches one of ``patterns`` (regexes), in pattern order."""
    for pattern in patterns:
        for c in columns:
            if re.fullmatch(pattern, c.strip().lower()):
                return c
    return None


def numeric_columns(columns: list[str], preview: list[dict[str, Any]], decimal: str = ".") -> list[str]:
    """Columns whose preview values all read as numbers (candidates for human scores).

    ``decimal`` is the file's decimal mark (``","`` reads ``3,5`` as a number, as the import will).
    """
    out = []
    for c in columns:
        values = [r.get(c) for r in preview if r.get(c) not in (None, "")]
        if not values:
            continue
        try:
            if all(math.isfinite(v if isinstance(v, (int, float)) else data.parse_number(str(v), decimal))
                   for v in values if not isinstance(v, bool)):
                if not any(isinstance(v, bool) for v in values):
                    out.append(c)
        except (TypeError, ValueError):
            continue
    return out


def preview_frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """Raw preview records as a DataFrame of strings (nested JSON values shown as text)."""
    return pd.DataFrame([{c: _cell(r.get(c)) for c in columns} for r in rows], columns=columns)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)
