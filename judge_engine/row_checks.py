"""Checks that keep "rows in = lines out + rows named" true while a file is scored (issue 64 item 3).

A CSV can lose rows without an error: a quote opened in one row and closed rows later reads the rows between as
one cell of the first (rows g021-g030 scored as part of g020's text, 50 lines out of 60 rows and no word); two
files joined with ``cat`` put a second header among the rows (scored as an item with id ``'\\ufeffid'``); a NUL in
a text was removed with no word. Each is named here with its row(s), as :class:`DataImportError`:

- :func:`swallowed_rows`: a cell that spans lines, some of which read as whole rows of this file (the header's
  number of cells, and an id of the same shape as the ids around it): the record and the rows inside it are left
  out and named (``rows`` on the error says how many rows of the file it stands for).
- :func:`repeated_header`: a record whose cells are the header's names.
- :func:`control_columns`: the columns of a record whose text holds control characters (they are removed before
  scoring, as an import removes them, and the row is named as a warning).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from .data import DataImportError
from .data.tables import _CONTROL

_DIGITS = re.compile(r"\d+")


def id_shape(value: str) -> str:
    """An id's shape: its digits as one mark, so ``g020`` and ``g021`` (and ``g1000``) have the same one."""
    return _DIGITS.sub("#", value.strip().lstrip("\ufeff"))


def swallowed_rows(rec: dict[str, str], header: list[str], *, id_col: str | None, delimiter: str, quotechar: str,
                   path: Path, row: int, last_line: int) -> DataImportError | None:
    """The error naming a record that holds whole rows of the file inside one quoted cell, or None.

    A line inside a multi-line cell is read as a row of the file when it splits into the header's number of
    cells and, with an id column, its cell there has the shape of this record's id; without an id column two such
    lines are needed (a reply quoting a small table of two columns has one line that splits alike). A reply with
    line breaks of its own is not touched."""
    if last_line <= row:
        return None
    width = len(header)
    at = header.index(id_col) if id_col in header else None
    own = id_shape(str(rec.get(id_col, ""))) if at is not None else None
    looks: list[str] = []
    for value in rec.values():
        if not isinstance(value, str) or "\n" not in value:
            continue
        for line in value.replace("\r\n", "\n").split("\n")[1:]:
            try:
                cells = next(csv.reader([line], delimiter=delimiter, quotechar=quotechar), [])
            except csv.Error:
                continue
            if len(cells) != width or (at is not None and (not cells[at].strip() or id_shape(cells[at]) != own)):
                continue
            looks.append(line)
    if not looks or (at is None and len(looks) < 2):
        return None
    error = DataImportError(
        f"a quoted cell that begins on this line closes only on line {last_line}, and {len(looks)} of the lines "
        f"inside it read as rows of this file (the first: {looks[0][:60]!r}): a quote left open. This record and "
        f"those {len(looks)} rows are left out (not scored as one text); fix the quote and score again",
        file=path, row=row)
    error.rows = 1 + len(looks)  # type: ignore[attr-defined]  # rows of the file this one error stands for
    return error


def repeated_header(rec: dict[str, Any], header: list[str], *, path: Path, row: int) -> DataImportError | None:
    """The error naming a record that repeats the header (two CSV files joined with ``cat``), or None."""
    cells = [str(v).lstrip("\ufeff").strip() for v in rec.values()]
    if cells != [h.lstrip("\ufeff") for h in header]:
        return None
    return DataImportError("this row repeats the header (two files joined into one?): it is left out, and the rows "
                           "after it are scored as items", file=path, row=row)


def control_columns(rec: dict[str, Any], *, id_col: str | None) -> list[str]:
    """The columns (other than the id, refused elsewhere) whose text holds control characters."""
    return [str(k) for k, v in rec.items() if k != id_col and isinstance(v, str) and _CONTROL.search(v)]


def control_warning(columns: list[str], *, path: Path, row: int) -> DataImportError:
    """The warning naming a row whose texts had control characters removed (it is scored without them)."""
    return DataImportError(f"removed control characters (NUL, escape and the like) from {', '.join(map(repr, columns))}"
                           "; the row is scored without them", file=path, row=row)
