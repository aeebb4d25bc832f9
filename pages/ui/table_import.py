"""Importing a user's table: the preview, column guesses and duplicates the form shows; the import itself is the
engine's (:func:`judge_engine.data.importing.import_table`, which ``judge-workbench datasets import`` calls too)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import streamlit as st

from judge_engine import data
from judge_engine.data.importing import ImportColumns, import_table  # noqa: F401  (the page imports through here)


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
