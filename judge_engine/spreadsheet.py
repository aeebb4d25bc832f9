"""Spreadsheet-safe CSV: every CSV the project writes goes through :func:`to_csv`.

A cell whose text begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is run as a formula when the file is opened in Excel, LibreOffice or Google Sheets
(CSV injection: ``=HYPERLINK(...)`` or ``=cmd|...`` can leak data or start programs).
Judged texts and model replies are hostile, and a text can steer a model into such
a reply, so :func:`safe_cell` neutralises every text cell the usual way: a single
quote in front, which spreadsheets show as text and never evaluate. Numbers stay
numbers (a negative score is not a formula), and a text that is a plain number
(``-3``, ``+0.5``) is left alone for the same reason.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""First characters that make a spreadsheet evaluate a cell (with their full-width forms)."""

_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def is_formula_like(text: str) -> bool:
    """True if a spreadsheet could evaluate ``text`` (ignoring leading spaces), and it is not a number."""
    stripped = text.lstrip(" ")
    return bool(stripped) and stripped.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(stripped)


def safe_cell(value: Any) -> str | int | float:
    """One CSV cell: numbers as numbers (NaN and None empty), text neutralised with a leading ``'``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "" if isinstance(value, float) and math.isnan(value) else value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if is_formula_like(text) else text


def to_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV text of a header and rows, every cell (header included) through :func:`safe_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([safe_cell(c) for c in columns])
    for row in rows:
        writer.writerow([safe_cell(v) for v in row])
    return buffer.getvalue()
