"""What every importer shares: the errors a user can fix, and readers of numbers, texts and JSON files.

Row numbers in messages are 1-based: for CSV and JSONL files they are the line number
in the file (a CSV header is row 1, so the first data row is row 2, as in a spreadsheet);
for a JSON list they are the position of the record in the list.
"""

from __future__ import annotations

import ast
import html
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

# --------------------------------------------------------------------------- errors


class DataImportError(ValueError):
    """A problem with an input file that the user can fix.

    ``file`` is the path as given, ``row`` the 1-based row (line number for CSV/JSONL,
    record number for a JSON list) or None, ``column`` the column / key or None.
    ``str()`` reads ``"<file name>, row 17, column 'score': <message>"``.
    """

    def __init__(self, message: str, *, file: str | os.PathLike | None = None,
                 row: int | None = None, column: str | None = None) -> None:
        self.message = message
        self.file = None if file is None else str(file)
        self.row = row
        self.column = column
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(Path(self.file).name or self.file)
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def __reduce__(self):  # keep pickling/copying working despite keyword-only args
        return (_rebuild_error, (self.message, self.file, self.row, self.column))


def _rebuild_error(message, file, row, column):
    return DataImportError(message, file=file, row=row, column=column)


class SplitError(ValueError):
    """The dataset cannot be split as asked (too small, too few groups, bad sizes)."""


# --------------------------------------------------------------------------- helpers


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_COMMA_NUMBER = re.compile(r"[-+]?(\d{1,3}(\.\d{3})+|\d*),\d+")
"""A number written with a decimal comma, optionally with dots between thousands (``3,5``, ``1.234,5``)."""


def parse_number(text: str, decimal: str = ".") -> float:
    """``float(text)``, also reading a decimal comma (``3,5`` -> 3.5) when ``decimal`` is ``","``.

    Raises ValueError for anything else, as ``float`` does.
    """
    text = text.strip()
    if decimal == "," and _COMMA_NUMBER.fullmatch(text):
        text = text.replace(".", "").replace(",", ".")
    return float(text)


def _to_float(value: Any, *, file, row, column, decimal: str = ".") -> float:
    """A finite float from a number or numeric string, else DataImportError."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise DataImportError(f"{_short(value)} is not a number", file=file, row=row, column=column)
    if isinstance(value, (int, float)):
        out = float(value)
    else:
        text = str(value).strip()
        if not text:
            raise DataImportError("score is empty", file=file, row=row, column=column)
        try:
            out = parse_number(text, decimal)
        except ValueError:
            hint = ""
            if decimal != "," and _COMMA_NUMBER.fullmatch(text):
                hint = (" (this file's decimal separator is a dot; a decimal comma is read in files "
                        "whose cells are separated by something other than a comma)")
            raise DataImportError(f"{_short(text)} is not a number{hint}",
                                  file=file, row=row, column=column) from None
    if not math.isfinite(out):
        raise DataImportError(f"{_short(value)} is not a finite number (NaN or infinity)",
                              file=file, row=row, column=column)
    return out


def _parse_scores(raw: Any, *, file, row, column="scores") -> dict:
    """A scores field: a dict, or a Python-dict string (parsed safely, never eval'd)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise DataImportError(f"cannot parse scores {_short(raw)}: {exc.__class__.__name__}",
                                  file=file, row=row, column=column) from None
        if isinstance(value, dict):
            return value
    raise DataImportError(f"expected a dict of scores, got {_short(raw)}",
                          file=file, row=row, column=column)


def _aspect_scores(raw: Any, names: Sequence[str], *, file, row, column="scores") -> dict[str, float]:
    """The scores for exactly ``names`` (extra keys such as ``ctc_relevance`` are ignored)."""
    scores = _parse_scores(raw, file=file, row=row, column=column)
    out = {}
    for name in names:
        if name not in scores:
            raise DataImportError(f"scores have no {name!r} (they have: {', '.join(map(str, scores))})",
                                  file=file, row=row, column=column)
        out[name] = _to_float(scores[name], file=file, row=row, column=f"{column}.{name}")
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _decode(raw: bytes, file) -> str:
    """UTF-8 (with or without BOM) text, else a DataImportError locating the bad byte."""
    for encoding in ("utf-8", "utf-8-sig"):
        try:
            text = raw.decode(encoding)
            return text[1:] if text.startswith("\ufeff") else text
        except UnicodeDecodeError as exc:
            error = exc
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise DataImportError("the file is UTF-16 encoded; save it as UTF-8 and import it again",
                              file=file)
    line = raw[: error.start].count(b"\n") + 1
    raise DataImportError(
        f"cannot read the file as UTF-8 (byte 0x{raw[error.start]:02x} on line {line}); "
        "save it as UTF-8 (e.g. 'CSV UTF-8' in Excel) and import it again",
        file=file, row=line)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DataImportError("file not found", file=path) from None
    except IsADirectoryError:
        raise DataImportError("is a folder, not a file", file=path) from None
    except OSError as exc:
        raise DataImportError(f"cannot read the file ({exc.strerror or exc})", file=path) from None


def _json_error(exc: json.JSONDecodeError, *, file, row=None) -> DataImportError:
    if row is not None:  # JSONL: the row is the line
        return DataImportError(f"invalid JSON ({exc.msg} at column {exc.colno})", file=file, row=row)
    return DataImportError(f"invalid JSON on line {exc.lineno}, column {exc.colno} ({exc.msg})",
                           file=file)


def _load_json(path: Path) -> Any:
    text = _decode(_read_bytes(path), path)
    if not text.strip():
        raise DataImportError("the file is empty", file=path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, file=path) from None


def _iter_jsonl(path: Path) -> Iterable[tuple[int, Any]]:
    text = _decode(_read_bytes(path), path)
    if not text.strip():
        raise DataImportError("the file is empty", file=path)
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise _json_error(exc, file=path, row=lineno) from None


def _need(record: Any, key: str, *, file, row) -> Any:
    if not isinstance(record, dict):
        raise DataImportError(f"expected a JSON object, got {_short(record)}", file=file, row=row)
    if key not in record:
        raise DataImportError(f"missing key (the record has: {', '.join(map(str, record))})",
                              file=file, row=row, column=key)
    return record[key]


def _group_numbers() -> Callable[[str], str]:
    """Map a long group key (dialogue history, prompt) to '0', '1', ... by first appearance."""
    seen: dict[str, str] = {}

    def number(key: str) -> str:
        return seen.setdefault(key, str(len(seen)))

    return number


_TAG = re.compile(r"<[^>]+>")


def _html_to_text(fragment: str) -> str:
    """Newsroom sources: paragraph tags -> blank lines, other tags dropped, entities unescaped."""
    text = re.sub(r"\s*</p>\s*<p[^>]*>\s*", "\n\n", fragment, flags=re.I)
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.I)
    text = _TAG.sub("", text)  # tags first, so an escaped "&lt;b&gt;" stays literal text
    text = html.unescape(text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
