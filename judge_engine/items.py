"""Items to score, read from a file a chunk at a time, so a file of any size is scored in flat memory.

:func:`judge_engine.data.load_table` reads a whole table to import it (its splits, groups and
meta-evaluation need every row). Scoring with a finished judge needs one chunk at a time: an
:class:`ItemFile` checks the columns before anything is scored, then yields lists of
:class:`~judge_engine.records.Sample` read by the same :func:`~judge_engine.data.row_sample` as an
import. A row that cannot be scored (no output, an empty or repeated id, a broken line) is handed to
``bad_row`` with its row number and left out, so row 900,000 does not stop a million-row file.

Repeated ids are found with an :class:`IdSet`, which keeps the ids in a temporary SQLite file rather
than in memory: a million ids in a Python set would be most of the memory the scoring job uses.

CSV/TSV and JSONL are streamed; a JSON list is one document and is read whole (convert a large one
to JSONL).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from . import data, row_checks
from .data import DataImportError, RowColumns
from .records import Sample

BadRow = Callable[[DataImportError], None]

DEFAULT_ID_COL = "id"
"""The column taken as the items' ids when none is named: a file with its own ids is scored under them. Without
one, an item's id is its place among the file's rows, from 1, as :meth:`ExportedJudge.score_table` numbers a
table's rows."""


class IdSet:
    """A set of ids kept on disk (a private temporary SQLite database), added to and asked a chunk at a time."""

    def __init__(self) -> None:
        # "" is SQLite's private temporary database: on disk, deleted on close, memory bounded by its page cache
        self._db = sqlite3.connect("", check_same_thread=False)  # one user at a time; the garbage collector may
        # finish an abandoned generator of chunks in another thread, and closing it closes this
        self._db.execute("create table ids (id text primary key, row integer)")
        self.size = 0

    def add(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Add (id, row) pairs; an id already present keeps its first row."""
        before = self._db.total_changes
        self._db.executemany("insert or ignore into ids values (?, ?)", pairs)
        self.size += self._db.total_changes - before

    def rows_of(self, ids: Sequence[str]) -> dict[str, int]:
        """The first row of each of ``ids`` that is in the set."""
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            found.update(self._db.execute(f"select id, row from ids where id in ({marks})", part).fetchall())
        return found

    def __len__(self) -> int:
        return self.size

    def close(self) -> None:
        self._db.close()


class ItemFile:
    """A CSV/TSV/JSONL/JSON file of items to score; the columns are checked when it is opened.

    ``human_col`` (optional) holds human scores, read as aspect ``aspect``; ``group_col`` (optional) the items'
    group (their source), which the gate resamples together. Raises DataImportError for
    a file that cannot be read at all or lacks a named column, before any item is scored.
    """

    def __init__(self, path: str | Path, *, input_col: str = "input", output_col: str = "output",
                 id_col: str | None = None, context_col: str | None = None, reference_col: str | None = None,
                 human_col: str | None = None, aspect: str = "score", group_col: str | None = None):
        self.path = Path(path)
        self.kind = data._table_kind(self.path)
        self.id_chosen = False
        """Whether the ids come from a column named ``id`` that was not named (:data:`DEFAULT_ID_COL`)."""
        self.columns = RowColumns(input_col=input_col, output_col=output_col, id_col=id_col,
                                  context_col=context_col, reference_col=reference_col, group_col=group_col,
                                  aspect_cols={aspect: human_col} if human_col else {})
        self.dialect: data.CsvDialect | None = None
        first = self._first_record_columns()
        if id_col is None and DEFAULT_ID_COL in first:  # the file's own ids, not row numbers (issue 64 item 6)
            self.columns = replace(self.columns, id_col=DEFAULT_ID_COL)
            id_col, self.id_chosen = DEFAULT_ID_COL, True
        elif id_col == "":  # asked for row numbers, whatever the columns
            self.columns = replace(self.columns, id_col=None)
            id_col = None
        mapped = {"input": input_col, "output": output_col, "id": id_col, "context": context_col,
                  "reference": reference_col, "human score": human_col, "group": group_col}
        for role, col in mapped.items():
            if col is not None and col not in first:
                where = "the file's columns" if self.kind in ("csv", "tsv") else "the first record's keys"
                raise DataImportError(f"no such column (mapped as {role}); {where}: "
                                      f"{', '.join(map(repr, first))}", file=self.path, column=col)

    # ---- opening

    def _open_text(self):
        try:
            head = self.path.open("rb").read(4)
        except FileNotFoundError:
            raise DataImportError("file not found", file=self.path) from None
        except IsADirectoryError:
            raise DataImportError("is a folder, not a file", file=self.path) from None
        except OSError as exc:
            raise DataImportError(f"cannot read the file ({exc.strerror or exc})", file=self.path) from None
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise DataImportError("the file is UTF-16 encoded; save it as UTF-8 and import it again", file=self.path)
        # surrogateescape: a line that is not UTF-8 reads as text with its bad bytes marked, so that line alone is
        # named and left out (_DecodedLines) instead of the whole file stopping at it
        return self.path.open(encoding="utf-8-sig", errors="surrogateescape",
                              newline="" if self.kind in ("csv", "tsv") else None)

    def _first_record_columns(self) -> list[str]:
        if self.kind in ("csv", "tsv"):
            with self._open_text() as f:
                sample = self._decoded(lambda: f.read(data._SNIFF_CHARS * 2))
            if not sample.strip():
                raise DataImportError("the file is empty", file=self.path)
            self.dialect = data._detect_dialect(sample, self.kind)
            with self._open_text() as f:
                header = data.csv_header(data.csv_reader(f, self.dialect), self.path)
            if any(_NOT_UTF8.search(h) for h in header):
                self._decoded(lambda: "".join(header).encode("utf-8"))  # names the byte, as a file import does
            return header
        for _, rec in self._records(lambda exc: None):
            return [data._CONTROL.sub("", str(k)) for k in rec]
        raise DataImportError("the file has no records", file=self.path)

    def _decoded(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except UnicodeDecodeError as exc:
            bad = exc.object[exc.start]
            bad = bad if isinstance(bad, int) else ord(bad) & 0xFF  # an escaped byte in text: its low half
            raise DataImportError(f"cannot read the file as UTF-8 (byte 0x{bad:02x}); save it "
                                  "as UTF-8 (e.g. 'CSV UTF-8' in Excel) and import it again", file=self.path) from None

    # ---- reading

    def estimated_rows(self) -> int:
        """Lines in the file (less the header of a CSV): the number of items, unless texts span lines."""
        lines, last = 0, b"\n"
        with self.path.open("rb") as f:
            while block := f.read(1 << 20):
                lines += block.count(b"\n")
                last = block[-1:]
        lines += last != b"\n"
        return max(0, lines - (1 if self.kind in ("csv", "tsv") else 0))

    def _records(self, bad_row: BadRow, warn: BadRow | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        id_col = self.columns.id_col

        def cleaned(row: int, rec: dict[str, Any]) -> dict[str, Any]:
            if warn is not None and (columns := row_checks.control_columns(rec, id_col=id_col)):
                warn(row_checks.control_warning(columns, path=self.path, row=row))
            return data.clean_record(rec, id_col=id_col, path=self.path, row=row)

        if self.kind == "json":  # one document: read whole
            for row, rec in data._read_table(self.path).records:
                yield row, rec
            return
        with self._open_text() as f:
            lines = _DecodedLines(f, self)
            if self.kind == "jsonl":
                for lineno, line in enumerate(lines, 1):
                    if not line.strip():
                        continue
                    if lines.bad and lines.bad[-1] == lineno:
                        bad_row(lines.error(lines.bad.pop()))
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError as exc:
                        bad_row(data._json_error(exc, file=self.path, row=lineno))
                        continue
                    if not isinstance(rec, dict):
                        bad_row(DataImportError(f"expected a JSON object, got {data._short(rec)}", file=self.path,
                                                row=lineno))
                        continue
                    try:
                        yield lineno, cleaned(lineno, rec)
                    except DataImportError as exc:
                        bad_row(exc)
                return
            reader = data.csv_reader(lines, self.dialect)
            header = [data._CONTROL.sub("", h) for h in data.csv_header(reader, self.path)]
            for row, rec in data.csv_records(reader, header, self.path, self.dialect, bad_row):
                while lines.bad and lines.bad[0] < row:  # on lines no record was read from (blank, cut out)
                    lines.bad.popleft()
                if lines.bad and lines.bad[0] <= reader.line_num:  # a record over a line that is not UTF-8
                    bad_row(lines.error(lines.bad[0], row))
                    continue
                problem = row_checks.repeated_header(rec, header, path=self.path, row=row) or \
                    row_checks.swallowed_rows(rec, header, id_col=id_col, delimiter=self.dialect.delimiter,
                                              quotechar=self.dialect.quotechar, path=self.path, row=row,
                                              last_line=reader.line_num)
                if problem is not None:
                    bad_row(problem)
                    continue
                try:
                    yield row, cleaned(row, rec)
                except DataImportError as exc:
                    bad_row(exc)

    def chunks(self, size: int, bad_row: BadRow, warn: BadRow | None = None) -> Iterator[list[Sample]]:
        """The file's samples, ``size`` at a time; rows that cannot be scored go to ``bad_row``, rows scored after
        a cleaning (control characters removed from a text) to ``warn``."""
        seen = IdSet()
        number = 0  # the row's place among the file's rows, named ones included: a row's id without an id column

        def named(exc: DataImportError) -> None:
            nonlocal number
            number += int(getattr(exc, "rows", 1))
            bad_row(exc)

        try:
            chunk: list[tuple[int, Sample]] = []
            for row, rec in self._records(named, warn):
                number += 1
                try:
                    chunk.append((row, data.row_sample(row, rec, self.columns, self.path, number)))
                except DataImportError as exc:
                    bad_row(exc)
                if len(chunk) >= size:
                    yield self._unique(chunk, seen, bad_row)
                    chunk = []
            if chunk:
                yield self._unique(chunk, seen, bad_row)
        finally:
            seen.close()

    def _unique(self, chunk: list[tuple[int, Sample]], seen: IdSet, bad_row: BadRow) -> list[Sample]:
        earlier = seen.rows_of([s.id for _, s in chunk])
        kept: list[Sample] = []
        for row, sample in chunk:
            if sample.id in earlier:
                bad_row(DataImportError(f"duplicate id {sample.id!r} (first used on row {earlier[sample.id]})",
                                        file=self.path, row=row, column=self.columns.id_col))
                continue
            earlier[sample.id] = row
            kept.append(sample)
        seen.add((s.id, earlier[s.id]) for s in kept)
        return kept


_NOT_UTF8 = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, as ``errors="surrogateescape"`` reads it."""


class _DecodedLines:
    """The lines of a text file; ``bad`` holds the numbers of those that are not UTF-8, still to be named."""

    def __init__(self, f: Any, owner: ItemFile):
        self.f, self.owner, self.line = f, owner, 0
        self.bad: deque[int] = deque()

    def error(self, line: int, row: int | None = None) -> DataImportError:
        where = f" (on line {line} of this record)" if row is not None and row != line else ""
        return DataImportError(f"this line is not UTF-8{where}: the record is left out; save the file as UTF-8 to "
                               "score it", file=self.owner.path, row=row or line)

    def __iter__(self) -> Iterator[str]:
        for line in self.f:
            self.line += 1
            if _NOT_UTF8.search(line):
                self.bad.append(self.line)
            yield line
