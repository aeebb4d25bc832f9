"""How a CSV/TSV file is written (separator, quote, decimal mark), detected from its first records."""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ._common import _COMMA_NUMBER, DataImportError, _decode, _read_bytes

# --------------------------------------------------------------------------- user tables

_TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}


def _table_kind(path: Path) -> str:
    kind = _TABLE_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise DataImportError(f"unsupported file type {path.suffix or '(none)'!r}; "
                              "use .csv, .tsv, .jsonl or .json", file=path)
    return kind


# ---- CSV dialects ------------------------------------------------------------------------

SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
"""Cell separators the detector tries, with the names the import preview shows."""
QUOTES = {'"': "double quote", "'": "single quote"}
DECIMAL_MARKS = {".": "dot", ",": "comma"}

_SNIFF_CHARS = 64 * 1024  # the detector reads this much of the file (a 200,000-row file is not parsed twice)
_SNIFF_RECORDS = 200


@dataclass(frozen=True)
class CsvDialect:
    """How a CSV/TSV file is written: the cell separator, the quote character, the decimal mark.

    European spreadsheets write ``src;out;score`` / ``a;hello;3,5``: a semicolon between
    cells and a decimal comma. A decimal comma is only possible when the separator is not
    a comma (a comma-separated ``3,5`` would be two cells).
    """

    delimiter: str = ","
    quotechar: str = '"'
    decimal: str = "."

    def __post_init__(self) -> None:
        if self.delimiter not in SEPARATORS:
            raise ValueError(f"unknown separator {self.delimiter!r}; use one of {list(SEPARATORS)}")
        if self.quotechar not in QUOTES:
            raise ValueError(f"unknown quote character {self.quotechar!r}; use one of {list(QUOTES)}")
        if self.decimal not in DECIMAL_MARKS:
            raise ValueError(f"unknown decimal mark {self.decimal!r}; use one of {list(DECIMAL_MARKS)}")
        if self.decimal == "," and self.delimiter == ",":
            raise ValueError("a decimal comma needs a separator other than the comma")

    def describe(self) -> str:
        """``separator: semicolon, quote: double quote, decimal mark: comma``."""
        return (f"separator: {SEPARATORS[self.delimiter]}, quote: {QUOTES[self.quotechar]}, "
                f"decimal mark: {DECIMAL_MARKS[self.decimal]}")


def _sniff_sample(text: str) -> str:
    """The first ``_SNIFF_CHARS`` characters, cut at a line end (never inside a last line)."""
    if len(text) <= _SNIFF_CHARS:
        return text
    cut = text.rfind("\n", 0, _SNIFF_CHARS)
    return text[: cut + 1] if cut > 0 else text[:_SNIFF_CHARS]


def _sample_rows(sample: str, delimiter: str, quotechar: str) -> list[list[str]]:
    rows = []
    try:
        for cells in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter, quotechar=quotechar):
            if cells and any(c.strip() for c in cells):
                rows.append(cells)
            if len(rows) >= _SNIFF_RECORDS:
                break
    except csv.Error:
        pass  # an unterminated quote: judge on the rows read so far; the full read names the row
    return rows


def _detect_dialect(text: str, kind: str) -> CsvDialect:
    """The separator and quote that split the header into cells and fit the most rows.

    Each (separator, quote) pair is scored by how many of the first records have exactly
    as many cells as the header (a header of one cell does not count); ties go to the
    double quote, and to the tab for a .tsv file and the comma otherwise. (csv.Sniffer
    guesses wrong on short files and on texts full of commas.) The decimal mark is a
    comma when the separator is not a comma, some cells read like ``3,5`` and none like
    ``3.5``.
    """
    sample = _sniff_sample(text)
    order = ["\t", ",", ";", "|"] if kind == "tsv" else [",", ";", "\t", "|"]
    best, best_score = (order[0], '"'), 0
    for quotechar in QUOTES:
        if quotechar != '"' and quotechar not in sample:
            continue
        for delimiter in order:
            rows = _sample_rows(sample, delimiter, quotechar)
            if not rows or len(rows[0]) < 2:
                continue
            width = len(rows[0])
            score = sum(1 for r in rows if len(r) == width or
                        (len(r) > width and not any(c.strip() for c in r[width:])))
            if score > best_score:
                best, best_score = (delimiter, quotechar), score
    delimiter, quotechar = best
    decimal = "."
    if delimiter != ",":
        numbers = [c.strip() for r in _sample_rows(sample, delimiter, quotechar)[1:] for c in r]
        if any(_COMMA_NUMBER.fullmatch(c) for c in numbers) and not any(
                re.fullmatch(r"[-+]?\d+\.\d+", c) and not _COMMA_NUMBER.fullmatch(c) for c in numbers):
            decimal = ","
    return CsvDialect(delimiter, quotechar, decimal)


def detect_dialect(path: str | os.PathLike) -> CsvDialect | None:
    """The dialect of a CSV/TSV file (None for JSON and JSONL files, which have none)."""
    path = Path(path)
    if _table_kind(path) not in ("csv", "tsv"):
        return None
    text = _decode(_read_bytes(path), path)
    if not text.strip():
        raise DataImportError("the file is empty", file=path)
    return _detect_dialect(text, _table_kind(path))
