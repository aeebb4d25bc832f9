"""A user's table (CSV / TSV / JSONL / JSON list) read into a Dataset: reading, preview, duplicates, import."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..records import Aspect, Dataset, Sample
from ._common import DataImportError, _decode, _json_error, _read_bytes, _short, _text, _to_float
from .dialects import SEPARATORS, CsvDialect, _detect_dialect, _table_kind

# ---- reading ---------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters (NUL and the rest) other than tab, line feed and carriage return."""


_ESCAPED_CONTROL = re.compile(r"\\u00(?:[01][0-9a-fA-F]|7[fF]|[89][0-9a-fA-F])")
"""The same characters written as JSON escapes (``\\u0000``)."""


@dataclass(frozen=True)
class _Table:
    columns: list[str]
    records: list[tuple[int, dict[str, Any]]]
    """(row number, record) with control characters already removed from every text."""
    dialect: CsvDialect | None
    control_rows: dict[int, list[str]]
    """Row -> columns from which control characters were removed."""


def clean_record(rec: dict[str, Any], *, id_col: str | None = None, path: Path | None = None,
                 row: int | None = None) -> dict[str, Any]:
    """One record with control characters removed from its keys and texts, as every import removes them.

    With ``id_col``, an id holding control characters raises DataImportError instead: cleaned, it would no
    longer be the id of the input's row, and scores written under it would not join back to the file."""
    if id_col is not None:
        value = rec.get(id_col)
        if isinstance(value, str) and _CONTROL.search(value):
            raise DataImportError(f"the id {value!r} holds control characters (NUL, escape and the like): fix the "
                                  "id in the file (removing them would write scores under an id the file does not "
                                  "have)", file=path, row=row, column=id_col)
    return _strip_controls([(0, rec)])[0][0][1]


def _strip_controls(records: list[tuple[int, dict[str, Any]]]) -> tuple[list, dict[int, list[str]]]:
    """The same records with control characters removed from keys and text values, and where.

    A NUL or an escape byte in a judged text is never meant (it comes from a broken export
    or a binary paste), breaks prompts and survives into exports; every file type gets the
    same treatment so a CSV and its JSONL twin import alike.
    """
    found: dict[int, list[str]] = {}
    out = []
    for row, rec in records:
        if not isinstance(rec, dict):
            out.append((row, rec))
            continue
        clean = {}
        for key, value in rec.items():
            name = str(key)
            if _CONTROL.search(name):
                found.setdefault(row, []).append(name)
                name = _CONTROL.sub("", name)
            if isinstance(value, str) and _CONTROL.search(value):
                found.setdefault(row, []).append(name)
                value = _CONTROL.sub("", value)
            clean[name] = value
        out.append((row, clean))
    return out, found


def _read_table(path: str | os.PathLike, dialect: CsvDialect | None = None) -> _Table:
    """Columns and (row number, record) pairs of a CSV/TSV, JSONL or JSON-list file."""
    path = Path(path)
    kind = _table_kind(path)
    text = _decode(_read_bytes(path), path)
    if not text.strip():
        raise DataImportError("the file is empty", file=path)
    if kind in ("csv", "tsv"):
        if dialect is None:
            dialect = _detect_dialect(text, kind)
        header, records = _read_csv(text, path, dialect)
        found: dict[int, list[str]] = {}
        if _CONTROL.search(text):  # one scan of the text spares a cell-by-cell one on clean files
            records, found = _strip_controls(records)
            header = [_CONTROL.sub("", h) for h in header]
        return _Table(header, records, dialect, found)
    if kind == "jsonl":
        records = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((lineno, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise _json_error(exc, file=path, row=lineno) from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _json_error(exc, file=path) from None
        if isinstance(data, dict):  # {"data": [...]} or {id: record}
            lists = [v for v in data.values() if isinstance(v, list)]
            if len(data) == 1 and lists:
                data = lists[0]
            elif all(isinstance(v, dict) for v in data.values()):
                data = [dict(v, **{"_key": k}) if "_key" not in v else v for k, v in data.items()]
        if not isinstance(data, list):
            raise DataImportError("expected a JSON list of records (objects)", file=path)
        records = list(enumerate(data, 1))
    columns: dict[str, None] = {}
    for row, rec in records:
        if not isinstance(rec, dict):
            raise DataImportError(f"expected a JSON object, got {_short(rec)}", file=path, row=row)
    if not records:
        raise DataImportError("the file has no records", file=path)
    found = {}
    if _CONTROL.search(text) or _ESCAPED_CONTROL.search(text):
        records, found = _strip_controls(records)
    for _, rec in records:
        for key in rec:
            columns.setdefault(key, None)
    return _Table(list(columns), records, None, found)


MAX_FIELD_CHARS = 64 * 1024 * 1024
"""Longest single cell a CSV may hold (texts this long are cut to the model's context when judged)."""


def _read_csv(text: str, path: Path, dialect: CsvDialect):
    reader = csv_reader(io.StringIO(text, newline=""), dialect)
    header = csv_header(reader, path)
    try:
        records = list(csv_records(reader, header, path, dialect))
    except csv.Error as exc:
        raise DataImportError(f"cannot parse the CSV ({exc})", file=path, row=reader.line_num) from None
    if not records:
        raise DataImportError("the file has a header but no data rows", file=path)
    return header, records


def csv_reader(lines: Iterable[str], dialect: CsvDialect):
    """A ``csv.reader`` over ``lines`` in ``dialect`` that accepts cells up to :data:`MAX_FIELD_CHARS`."""
    if csv.field_size_limit() < MAX_FIELD_CHARS:
        csv.field_size_limit(MAX_FIELD_CHARS)
    # strict: a quote opened and never closed raises at the end of the file instead of silently swallowing every
    # line after it into one cell (39 of 60 rows gone, with no word, before)
    return csv.reader(lines, delimiter=dialect.delimiter, quotechar=dialect.quotechar, strict=True)


def csv_header(reader: Any, path: Path) -> list[str]:
    """The column names of the first non-blank line; DataImportError for an empty or repeated name."""
    try:
        header = next(reader)
        while not any(cell.strip() for cell in header):
            header = next(reader)
    except StopIteration:
        raise DataImportError("the file is empty", file=path) from None
    except csv.Error as exc:
        raise DataImportError(f"cannot parse the CSV header ({exc})", file=path, row=1) from None
    header = [h.strip() for h in header]
    seen = set()
    for i, name in enumerate(header):
        if not name:
            raise DataImportError(f"header cell {i + 1} is empty; every column needs a name",
                                  file=path, row=reader.line_num)
        if name in seen:
            raise DataImportError("two columns have this name", file=path, row=reader.line_num,
                                  column=name)
        seen.add(name)
    return header


def csv_records(reader: Any, header: list[str], path: Path, dialect: CsvDialect,
                bad_row: Callable[[DataImportError], None] | None = None) -> Iterable[tuple[int, dict[str, str]]]:
    """(row number, record) of each data line after the header, blank lines left out.

    A line with the wrong number of cells raises DataImportError, or with ``bad_row`` is handed to it and
    left out (a file too large to fix by hand is scored except for that row). A quote that breaks the reading
    of the rest of the file raises DataImportError naming the line the record began on, with or without ``bad_row``.
    """
    width = len(header)
    last = reader.line_num
    cells_of = iter(reader)
    while True:
        try:
            cells = next(cells_of)
        except StopIteration:
            return
        except csv.Error as exc:  # the reader cannot go on past a broken quote: name where the record began
            raise DataImportError(f"cannot parse the CSV: a quoted cell that begins on this line is not closed "
                                  f"properly (by line {reader.line_num}: {exc}); every line after it would be read "
                                  "into one cell, so the file is refused: fix the quote", file=path,
                                  row=last + 1) from None
        row = last + 1  # first line of this record
        last = reader.line_num
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue  # blank line
        if len(cells) != width:
            if len(cells) > width and not any(c.strip() for c in cells[width:]):
                cells = cells[:width]  # trailing empty cells (spreadsheet export)
            else:
                error = DataImportError(
                    f"has {len(cells)} cells but the header has {width} columns "
                    f"({', '.join(header)}) when cells are separated by a "
                    f"{SEPARATORS[dialect.delimiter]}; check the separator in the import preview",
                    file=path, row=row)
                if bad_row is None:
                    raise error
                bad_row(error)
                continue
        yield row, dict(zip(header, cells))


def _rows_text(rows: Sequence[int], limit: int = 12) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def control_warning(path: str | os.PathLike, control_rows: dict[int, list[str]]) -> str | None:
    """The warning naming the rows (and columns) control characters were removed from, or None."""
    if not control_rows:
        return None
    rows = sorted(control_rows)
    columns = sorted({c for cols in control_rows.values() for c in cols})
    return (f"{Path(path).name}: removed control characters (NUL, escape and the like) from "
            f"{len(rows)} row(s): {_rows_text(rows)} (column(s) {', '.join(map(repr, columns))})")


@dataclass(frozen=True)
class TablePreview:
    """What the import preview shows: columns, first records, dialect and cleaning done."""

    columns: list[str]
    rows: list[dict[str, Any]]
    dialect: CsvDialect | None
    """The dialect the file was read with (None for JSON / JSONL)."""
    warnings: list[str]


def preview_table(path: str | os.PathLike, limit: int = 5, *,
                  dialect: CsvDialect | None = None) -> TablePreview:
    """Columns, the first ``limit`` records and the dialect (detected unless given)."""
    table = _read_table(path, dialect)
    warning = control_warning(path, table.control_rows)
    return TablePreview(table.columns, [rec for _, rec in table.records[:limit]], table.dialect,
                        [warning] if warning else [])


def inspect_table(path: str | os.PathLike, limit: int = 5, *,
                  dialect: CsvDialect | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names and the first ``limit`` records, for the column-mapping screen."""
    preview = preview_table(path, limit, dialect=dialect)
    return preview.columns, preview.rows


def _duplicate_key(input_text: str, output_text: str) -> tuple[str, str]:
    return input_text.strip(), output_text.strip()


def find_duplicates(path: str | os.PathLike, *, input_col: str, output_col: str,
                    dialect: CsvDialect | None = None) -> list[list[int]]:
    """Rows holding the same item (same input and same output), one list per item seen twice or more.

    Texts are compared after removing leading and trailing white space. Rows are the
    file's row numbers (as in every import message), in file order.
    """
    table = _read_table(path, dialect)
    return _duplicate_rows([(row, _text(rec.get(input_col)), _text(rec.get(output_col)))
                            for row, rec in table.records])


def _duplicate_rows(items: Iterable[tuple[int, str, str]]) -> list[list[int]]:
    rows_of: dict[tuple[str, str], list[int]] = {}
    for row, input_text, output_text in items:
        rows_of.setdefault(_duplicate_key(input_text, output_text), []).append(row)
    return [rows for rows in rows_of.values() if len(rows) > 1]


def duplicates_warning(path: str | os.PathLike, groups: list[list[int]], *,
                       merged: bool | None) -> str | None:
    """The message about duplicate items, naming their rows (None if there are none).

    ``merged`` says what the import did with them (None: before the import, nothing yet).
    """
    if not groups:
        return None
    shown = "; ".join(f"rows {', '.join(map(str, g))}" for g in groups[:8])
    more = f"; and {len(groups) - 8} more" if len(groups) > 8 else ""
    what = "" if merged is None else (
        "; merged into one sample each (scores averaged, each row's score kept as an annotator's)"
        if merged else "; kept as separate samples")
    return (f"{Path(path).name}: {len(groups)} item(s) appear more than once with the same input and "
            f"output ({shown}{more}){what}")


DUPLICATE_CHOICES = ("keep", "merge")
"""What :func:`load_table` does with duplicate items: keep them apart (default) or merge each."""


@dataclass(frozen=True)
class RowColumns:
    """Which column of a table row holds what, for :func:`row_sample`."""

    input_col: str
    output_col: str
    id_col: str | None = None
    group_col: str | None = None
    system_col: str | None = None
    context_col: str | None = None
    reference_col: str | None = None
    aspect_cols: dict[str, str] = field(default_factory=dict)
    """Aspect name -> column of its human score."""
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Aspect name -> (low, high) a human score must fall in."""
    decimal: str = "."


def row_sample(row: int | None, rec: dict[str, Any], columns: RowColumns, path: Path | None,
               number: int | None = None) -> Sample:
    """The sample of record ``rec`` (on row ``row`` of ``path``); DataImportError naming the row if it has none.

    One reading of a row for every way a table comes in: imported whole (:func:`load_table`), a chunk at a
    time for scoring (:mod:`judge_engine.items`) or a batch of a distributed read (:mod:`judge_engine.ray_scoring`,
    whose rows have no number or file: ``None``, and an ``id_col`` is needed). Uniqueness of ids is the
    caller's: it knows the other rows. Without an id column the id is ``number`` (the row's place among the
    file's rows, from 1: what ``score`` and ``score_table`` call it) when given, else ``row``.
    """
    if columns.id_col is not None:
        # verbatim: an id trimmed of its spaces is not the file's id, and its scores would not join back to the row
        sid = _text(rec.get(columns.id_col))
        if not sid.strip():
            raise DataImportError("the id is empty", file=path, row=row, column=columns.id_col)
    else:
        sid = str(row if number is None else number)
    if columns.output_col not in rec:
        raise DataImportError("missing in this record", file=path, row=row, column=columns.output_col)
    output = _text(rec[columns.output_col])
    if not output.strip():
        raise DataImportError("the output text is empty", file=path, row=row, column=columns.output_col)
    human = {}
    for aspect, col in columns.aspect_cols.items():
        if col not in rec:
            raise DataImportError("missing in this record", file=path, row=row, column=col)
        value = _to_float(rec[col], file=path, row=row, column=col, decimal=columns.decimal)
        if aspect in columns.ranges:
            low, high = columns.ranges[aspect]
            if not low <= value <= high:
                raise DataImportError(f"{value:g} is outside the range {low:g}-{high:g} of "
                                      f"{aspect!r}", file=path, row=row, column=col)
        human[aspect] = value
    extras = {}
    for attr, col in (("system_id", columns.system_col), ("context", columns.context_col),
                      ("reference", columns.reference_col)):
        if col is not None:
            value = _text(rec.get(col)).strip()
            extras[attr] = value if attr == "system_id" else (value or None)
    group = _text(rec.get(columns.group_col)).strip() if columns.group_col is not None else ""
    return Sample(id=sid, input=_text(rec.get(columns.input_col)), output=output,
                  group_id=group or (f"(row {row})" if columns.group_col is not None else sid), human=human,
                  **extras)


def load_table(
    path: str | os.PathLike,
    *,
    name: str | None = None,
    input_col: str,
    output_col: str,
    score_cols: dict[str, str] | Sequence[str],
    group_col: str | None = None,
    system_col: str | None = None,
    id_col: str | None = None,
    context_col: str | None = None,
    reference_col: str | None = None,
    aspect_ranges: dict[str, tuple[float, float]] | None = None,
    task: str = "",
    progress: Callable[[int, int], Any] | None = None,
    warnings: list[str] | None = None,
    input_label: str = "Source",
    output_label: str = "Output",
    definitions: dict[str, str] | None = None,
    require_scores: bool = True,
    dialect: CsvDialect | None = None,
    duplicates: str = "keep",
    skipped: list[DataImportError] | None = None,
) -> Dataset:
    """Import a user's CSV / TSV / JSONL / JSON-list file of human-scored outputs.

    With ``require_scores=False`` (data to be scored by a finished judge) the
    file may have no score columns and a single row.

    ``score_cols`` maps aspect name -> column (a list means aspect name = column name).
    Without ``group_col`` every row is its own group; without ``id_col`` the id is the
    row number. Aspect ranges not given in ``aspect_ranges`` are the observed min/max.

    A CSV/TSV is read with ``dialect`` (separator, quote character, decimal mark), detected
    from the file when not given (:func:`detect_dialect`); with a decimal comma ``3,5``
    reads as 3.5. Control characters (NUL, escape, ...) are removed from every text, the
    same for every file type, with a warning naming the rows.

    Duplicate items (rows with the same input and the same output) are always reported
    in ``warnings`` with their rows. ``duplicates="keep"`` (default) keeps them as
    separate samples; ``"merge"`` makes one sample of each, at the first row (its id,
    group and system), whose human score per aspect is the mean of the rows' scores and
    whose ``annotators`` keep every row's score; ``metadata["merged_rows"]`` and
    ``metadata["merged_ids"]`` list the rows and their ids.

    Non-fatal problems (e.g. fewer than 2 groups) are appended to ``warnings`` if given.
    ``progress(done, total)`` is called every few thousand rows and at the end.
    Every problem with the file raises :class:`DataImportError`.
    """
    path = Path(path)
    if duplicates not in DUPLICATE_CHOICES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_CHOICES}, got {duplicates!r}")
    if isinstance(score_cols, str):
        score_cols = [score_cols]
    aspect_cols = dict(score_cols) if isinstance(score_cols, dict) else {c: c for c in score_cols}
    if not aspect_cols and require_scores:
        raise DataImportError("choose at least one score column", file=path)
    table = _read_table(path, dialect)
    columns, records = table.columns, table.records
    decimal = table.dialect.decimal if table.dialect is not None else "."

    mapped = {"input": input_col, "output": output_col, "group": group_col, "system": system_col,
              "id": id_col, "context": context_col, "reference": reference_col}
    mapped.update({f"score {a}": c for a, c in aspect_cols.items()})
    available = set(columns)
    for role, col in mapped.items():
        if col is not None and col not in available:
            raise DataImportError(f"no such column (mapped as {role}); the file has: "
                                  f"{', '.join(map(repr, columns))}", file=path, column=col)

    ranges = {}
    for aspect, rng in (aspect_ranges or {}).items():
        if aspect not in aspect_cols:
            raise DataImportError(f"a range is given for {aspect!r}, which is not a score "
                                  f"aspect ({', '.join(aspect_cols)})", file=path)
        try:
            low, high = float(rng[0]), float(rng[1])
        except (TypeError, ValueError, IndexError):
            raise DataImportError(f"range for {aspect!r} must be (low, high), got {rng!r}",
                                  file=path) from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise DataImportError(f"range for {aspect!r} must have low < high, got {rng!r}",
                                  file=path)
        ranges[aspect] = (low, high)

    if not records:
        raise DataImportError("the file has no rows", file=path)
    if len(records) < 2 and require_scores:
        raise DataImportError("the file has a single row; meta-evaluation needs at least 2 "
                              "scored outputs", file=path)

    total = len(records)
    step = max(1000, total // 100)
    samples: list[Sample] = []
    rows: list[int] = []
    first_row_of: dict[str, int] = {}
    observed = {a: [math.inf, -math.inf] for a in aspect_cols}
    columns = RowColumns(input_col=input_col, output_col=output_col, id_col=id_col, group_col=group_col,
                         system_col=system_col, context_col=context_col, reference_col=reference_col,
                         aspect_cols=aspect_cols, ranges=ranges, decimal=decimal)
    for done, (row, rec) in enumerate(records, 1):
        try:
            sample = row_sample(row, rec, columns, path)
            if sample.id in first_row_of:
                raise DataImportError(f"duplicate id {sample.id!r} (first used on row {first_row_of[sample.id]})",
                                      file=path, row=row, column=id_col)
            first_row_of[sample.id] = row
            samples.append(sample)
            rows.append(row)
            for aspect, value in sample.human.items():
                lo_hi = observed[aspect]
                lo_hi[0], lo_hi[1] = min(lo_hi[0], value), max(lo_hi[1], value)
        except DataImportError as exc:
            if skipped is None:
                raise
            skipped.append(exc)  # scoring a large file: the row is named and left out, the rest is scored
        if progress is not None and (done % step == 0 or done == total):
            progress(done, total)
    if not samples:
        raise DataImportError(f"no row could be read ({len(skipped or ())} left out; the first: {skipped[0]})"
                              if skipped else "the file has no rows", file=path)

    duplicate_groups = _duplicate_rows((r, s.input, s.output) for r, s in zip(rows, samples))
    if duplicate_groups and duplicates == "merge":
        samples = _merge_duplicates(samples, rows, duplicate_groups)

    aspects = []
    for aspect in aspect_cols:
        if aspect in ranges:
            low, high = ranges[aspect]
        else:
            low, high = observed[aspect]
            if low == high and warnings is not None:
                warnings.append(f"{path.name}: every row has the same {aspect!r} score ({low:g}); "
                                "correlations with it are undefined")
        aspects.append(Aspect(aspect, low, high, (definitions or {}).get(aspect, "")))

    if warnings is not None:
        for message in (control_warning(path, table.control_rows),
                        duplicates_warning(path, duplicate_groups, merged=duplicates == "merge")):
            if message:
                warnings.append(message)
        n_groups = len({s.group_id for s in samples})
        if n_groups < 2:
            warnings.append(f"{path.name}: all rows are in one group (column {group_col!r}); "
                            "group-level results and grouped splits need at least 2 groups")
        if group_col is not None:
            empty = sum(1 for s in samples if s.group_id.startswith("(row "))
            if empty:
                warnings.append(f"{path.name}: {empty} row(s) have an empty {group_col!r}; "
                                "each is treated as its own group")

    return Dataset(name=name or path.stem, task=task, aspects=tuple(aspects),
                   samples=tuple(samples), natural_level="sample", source=str(path),
                   input_label=input_label, output_label=output_label)


def _merge_duplicates(samples: list[Sample], rows: list[int], groups: list[list[int]]) -> list[Sample]:
    """One sample per duplicate item, at its first row: mean human scores, every row's score kept."""
    position = {row: i for i, row in enumerate(rows)}
    merged_into: dict[int, list[int]] = {}  # first sample index -> all sample indices of the item
    dropped: set[int] = set()
    for group in groups:
        members = [position[r] for r in group]
        merged_into[members[0]] = members
        dropped.update(members[1:])
    out = []
    for i, sample in enumerate(samples):
        if i in dropped:
            continue
        members = merged_into.get(i)
        if members is None:
            out.append(sample)
            continue
        annotators = {a: [samples[k].human[a] for k in members] for a in sample.human}
        human = {a: sum(values) / len(values) for a, values in annotators.items()}
        metadata = dict(sample.metadata, merged_rows=[rows[k] for k in members],
                        merged_ids=[samples[k].id for k in members])
        out.append(replace(sample, human=human, annotators=annotators, metadata=metadata))
    return out
