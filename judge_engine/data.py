"""Importers: the seven built-in benchmarks, user CSV/JSONL files, and grouped splits.

Everything here turns files into the typed records of :mod:`judge_engine.records`
(:class:`Sample`, :class:`Aspect`, :class:`Dataset`, :class:`Split`).

Public API
----------
- :class:`DataImportError` -- every problem with a file the user can fix; names the
  file, the row and the column (``"my.csv, row 17, column 'score': 'abc' is not a number"``).
- :data:`BENCHMARKS` -- name -> :class:`BenchmarkSpec` for the built-in data sets.
- :func:`default_data_dir`, :func:`available_benchmarks`, :func:`load_benchmark`.
- :func:`inspect_table`, :func:`preview_table`, :func:`load_table` -- user CSV / TSV / JSONL /
  JSON-list files; :class:`CsvDialect` and :func:`detect_dialect` -- separator, quote and
  decimal mark of a CSV; :func:`find_duplicates` -- rows holding the same item.
- :func:`make_split` -- seeded train/test split that never cuts a group.

Row numbers in messages are 1-based: for CSV and JSONL files they are the line number
in the file (a CSV header is row 1, so the first data row is row 2, as in a spreadsheet);
for a JSON list they are the position of the record in the list.
"""

from __future__ import annotations

import ast
import csv
import html
import io
import json
import math
import os
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .records import Aspect, Dataset, Sample, Split

__all__ = [
    "DataImportError",
    "SplitError",
    "BenchmarkSpec",
    "BENCHMARKS",
    "default_data_dir",
    "available_benchmarks",
    "benchmark_path",
    "load_benchmark",
    "CsvDialect",
    "SEPARATORS",
    "QUOTES",
    "DECIMAL_MARKS",
    "detect_dialect",
    "parse_number",
    "TablePreview",
    "preview_table",
    "inspect_table",
    "find_duplicates",
    "DUPLICATE_CHOICES",
    "duplicates_warning",
    "control_warning",
    "load_table",
    "make_split",
]

DATA_DIR_ENV = "JUDGE_WORKBENCH_DATA"


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


# --------------------------------------------------------------------------- benchmark specs


@dataclass(frozen=True)
class BenchmarkSpec:
    """How to read one built-in benchmark and how prompts should talk about it."""

    name: str
    folder: str
    file: str
    task: str
    input_label: str
    output_label: str
    natural_level: str
    aspects: tuple[Aspect, ...]
    context_label: str | None = None
    """How prompts name ``Sample.context`` (e.g. the fact in Topical-Chat), if the data has one."""
    reference_label: str | None = None
    """How prompts name ``Sample.reference``, if the data has one."""
    description: str = ""
    loader: Callable[["BenchmarkSpec", Path], list[Sample]] | None = field(default=None, repr=False)

    def path(self, data_dir: str | os.PathLike | None = None) -> Path:
        base = Path(data_dir) if data_dir is not None else default_data_dir()
        return base / self.folder / self.file

    @property
    def aspect_names(self) -> list[str]:
        return [a.name for a in self.aspects]


def _a(name: str, low: float, high: float, definition: str) -> Aspect:
    return Aspect(name, float(low), float(high), definition)


# ---- loaders (one per native format) ---------------------------------------------------


def _load_summeval(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    names = spec.aspect_names  # ctc_relevance (a metric, not a human score) is never read
    samples = []
    for article, (row, rec) in enumerate(_iter_jsonl(path)):
        src = _text(_need(rec, "src", file=path, row=row)).strip()
        ref = _text(rec.get("ref_summs", "")).strip() or None
        systems = _need(rec, "sys_summs", file=path, row=row)
        if not isinstance(systems, dict):
            raise DataImportError("expected an object of systems", file=path, row=row, column="sys_summs")
        for system, entry in systems.items():
            col = f"sys_summs.{system}"
            summary = _text(_need(entry, "sys_summ", file=path, row=row)).strip()
            human = _aspect_scores(_need(entry, "scores", file=path, row=row), names,
                                   file=path, row=row, column=f"{col}.scores")
            samples.append(Sample(
                id=f"{article}:{system}", input=src, output=summary, group_id=str(article),
                system_id=str(system), reference=ref, human=human,
                metadata={"article_index": article}))
    return samples


def _load_topical_chat(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    group = _group_numbers()
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        history = _text(_need(rec, "source", file=path, row=row))
        samples.append(Sample(
            id=str(i), input=history.strip(),
            output=_text(_need(rec, "system_output", file=path, row=row)).strip(),
            group_id=group(history), system_id=_text(rec.get("system_id", "")),
            context=_text(rec.get("context", "")).strip() or None,
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row)))
    return samples


def _load_sf(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        doc_id = _text(_need(rec, "doc_id", file=path, row=row))
        act = _text(_need(rec, "source", file=path, row=row)).strip()
        samples.append(Sample(
            # doc_id is unique per record in these files, so it is the id. The group is the
            # dialogue act: the same act was realised by several systems (2-10 outputs each),
            # and a split must not put one realisation in train and another in test.
            id=doc_id, input=act,
            output=_text(_need(rec, "system_output", file=path, row=row)).strip(),
            group_id=act, reference=_text(rec.get("reference", "")).strip() or None,
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row),
            metadata={"doc_id": rec["doc_id"]}))
    return samples


def _load_hanna(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    group = _group_numbers()
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        raw_id = _need(rec, "story_id", file=path, row=row)
        try:
            story_id = int(raw_id)
        except (TypeError, ValueError):
            raise DataImportError(f"{_short(raw_id)} is not an integer", file=path, row=row,
                                  column="story_id") from None
        system = story_id // 96  # 96 prompts per system; system 0 = the human-written story
        prompt = _text(_need(rec, "prompt", file=path, row=row))
        samples.append(Sample(
            id=str(story_id), input=prompt.strip(),
            output=_text(_need(rec, "story", file=path, row=row)).strip(),
            group_id=group(prompt), system_id=str(system),
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row),
            metadata={"story_id": story_id, "human_written": system == 0}))
    return samples


def _load_newsroom(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    position: dict[str, int] = {}
    cleaned: dict[str, str] = {}
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        doc_id = _text(_need(rec, "doc_id", file=path, row=row))
        k = position.get(doc_id, 0)
        position[doc_id] = k + 1
        source = _text(_need(rec, "source", file=path, row=row))
        if source not in cleaned:
            cleaned[source] = _html_to_text(source)
        samples.append(Sample(
            # The file does not say which system wrote which summary (and the order inside a
            # document is not consistent), so system_id stays empty; id = doc_id:position.
            id=f"{doc_id}:{k}", input=cleaned[source],
            output=html.unescape(_text(_need(rec, "system_output", file=path, row=row))).strip(),
            group_id=doc_id,
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row),
            metadata={"doc_id": doc_id, "position": k}))
    return samples


def _load_writingprompt_a(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    if not isinstance(data, dict):
        raise DataImportError("expected a JSON object {index: record}", file=path)
    group = _group_numbers()
    samples = []
    for n, (key, raw) in enumerate(data.items(), 1):
        rec = _parse_scores(raw, file=path, row=n, column=str(key))  # a dict or a dict string
        prompt = _text(_need(rec, "prompt", file=path, row=n))
        human, annotators = {}, {}
        for name in spec.aspect_names:
            ratings = _need(rec, name, file=path, row=n)
            if not isinstance(ratings, (list, tuple)) or not ratings:
                ratings = [ratings]
            values = [_to_float(r, file=path, row=n, column=name) for r in ratings]
            annotators[name] = values
            human[name] = sum(values) / len(values)
        samples.append(Sample(
            id=str(key), input=prompt.strip(),
            output=_text(_need(rec, "story", file=path, row=n)).strip(),
            group_id=group(prompt), human=human, annotators=annotators,
            metadata={"human_written": bool(rec.get("human_written", False))}))
    return samples


def _expect_list(data: Any, path: Path) -> None:
    if not isinstance(data, list):
        raise DataImportError(f"expected a JSON list of records, got {type(data).__name__}", file=path)


# ---- the seven built-ins ----------------------------------------------------------------

_SUMMARY_FLUENCY = "How well written each sentence is: grammatical, well formed and easy to read."

BENCHMARKS: dict[str, BenchmarkSpec] = {
    "summeval": BenchmarkSpec(
        name="summeval", folder="summeval", file="summeval_ctc.jsonl",
        task="news summarization (CNN/DailyMail articles)",
        input_label="Article", output_label="Summary", reference_label="Reference summary",
        # SummEval papers (G-Eval, UniEval, ...) report "summary level": correlation inside
        # each article's 16 summaries, averaged over the 100 articles.
        natural_level="group",
        aspects=(
            _a("coherence", 1, 5, "How well the summary's sentences fit together into a "
               "well-organised whole that reads logically from start to end."),
            _a("consistency", 1, 5, "Whether every fact the summary states is supported by the "
               "article, with nothing invented or contradicted."),
            _a("fluency", 1, 5, _SUMMARY_FLUENCY),
            _a("relevance", 1, 5, "How well the summary keeps the article's most important "
               "information and leaves out minor or redundant details."),
        ),
        description="100 CNN/DailyMail articles x 16 systems, 3 expert ratings averaged.",
        loader=_load_summeval),
    "topical_chat": BenchmarkSpec(
        name="topical_chat", folder="topical_chat", file="topical_chat.json",
        task="knowledge-grounded dialogue response generation",
        input_label="Dialogue history", output_label="Response", context_label="Fact",
        # USR / UniEval report turn-level correlation: one correlation over all 360 responses.
        natural_level="sample",
        aspects=(
            _a("understandability", 0, 1, "Whether the response can be understood on its own "
               "and makes sense (0 = no, 1 = yes)."),
            _a("naturalness", 1, 3, "How much the response sounds like something a person "
               "would naturally say at this point of the conversation."),
            _a("coherence", 1, 3, "How well the response follows on from the dialogue history "
               "and stays on topic."),
            _a("engagingness", 1, 3, "How interesting the response is and how much it invites "
               "the other person to keep talking."),
            _a("groundedness", 0, 1, "Whether the response makes use of the given fact "
               "(0 = no, 1 = yes)."),
            _a("overall", 1, 5, "The overall quality of the response as the next turn of "
               "this conversation."),
        ),
        description="60 dialogue contexts x 6 responses (4 systems + 2 human), USR annotations.",
        loader=_load_topical_chat),
    "sfhot": BenchmarkSpec(
        name="sfhot", folder="sfhot", file="sfhot.json",
        task="data-to-text generation: turning a hotel-booking dialogue act into an utterance",
        input_label="Dialogue act", output_label="Utterance", reference_label="Reference",
        # Novikova et al. (2017) and UniEval report one correlation over all utterances.
        natural_level="sample",
        aspects=(
            _a("informativeness", 1, 6, "How fully the utterance conveys all the information "
               "in the dialogue act, without leaving anything out."),
            _a("naturalness", 1, 6, "How likely it is that a native speaker would say this "
               "utterance: fluent and natural-sounding."),
            _a("overall", 1, 6, "The overall quality of the utterance as a way of expressing "
               "the dialogue act."),
        ),
        description="Hotel dialogue acts realised by 3 systems (SF Hotel, Novikova et al. 2017).",
        loader=_load_sf),
    "sfres": BenchmarkSpec(
        name="sfres", folder="sfres", file="sfres.json",
        task="data-to-text generation: turning a restaurant dialogue act into an utterance",
        input_label="Dialogue act", output_label="Utterance", reference_label="Reference",
        natural_level="sample",  # as sfhot
        aspects=(
            _a("informativeness", 1, 6, "How fully the utterance conveys all the information "
               "in the dialogue act, without leaving anything out."),
            _a("naturalness", 1, 6, "How likely it is that a native speaker would say this "
               "utterance: fluent and natural-sounding."),
            _a("overall", 1, 6, "The overall quality of the utterance as a way of expressing "
               "the dialogue act."),
        ),
        description="Restaurant dialogue acts realised by 3 systems (SF Restaurant, Novikova et al. 2017).",
        loader=_load_sf),
    "hanna": BenchmarkSpec(
        name="hanna", folder="hanna", file="hanna.json",
        task="story generation from WritingPrompts prompts",
        input_label="Story prompt", output_label="Story",
        # HANNA (Chhun et al., 2022) reports "story level": correlation inside each prompt's
        # 11 stories, averaged over the 96 prompts (system level is also reported there).
        natural_level="group",
        aspects=(
            _a("relevance", 1, 5, "How closely the story matches its prompt."),
            _a("coherence", 1, 5, "How much sense the story makes as a whole, with events and "
               "ideas that connect logically."),
            _a("empathy", 1, 5, "How well the reader can understand the characters' emotions, "
               "whether or not they share them."),
            _a("surprise", 1, 5, "How surprising the story is, especially its ending, in a way "
               "that still makes sense."),
            _a("engagement", 1, 5, "How much the story draws the reader in and makes them "
               "care about what happens."),
            _a("complexity", 1, 5, "How elaborate and rich the story is: its plot, characters "
               "and setting."),
        ),
        description="96 prompts x 11 writers (1 human + 10 systems), 3 ratings averaged.",
        loader=_load_hanna),
    "newsroom": BenchmarkSpec(
        name="newsroom", folder="newsroom", file="newsroom.json",
        task="news summarization",
        input_label="Article", output_label="Summary",
        # The released file has no system ids; HypoEval reports one correlation over all
        # summaries, so the natural level is sample (group level, per article, also works).
        natural_level="sample",
        aspects=(
            _a("coherence", 1, 5, "How well the summary's phrases and sentences fit together "
               "and make sense as a whole."),
            _a("fluency", 1, 5, _SUMMARY_FLUENCY),
            _a("informativeness", 1, 5, "How well the summary captures the key points of the "
               "article."),
            _a("relevance", 1, 5, "Whether the details the summary gives agree with the "
               "details in the article."),
        ),
        description="60 Newsroom articles x 7 summaries, 3 ratings averaged.",
        loader=_load_newsroom),
    "writingprompt_a": BenchmarkSpec(
        name="writingprompt_a", folder="writingprompt_a", file="wp_a.json",
        task="story generation from writing prompts",
        input_label="Story prompt", output_label="Story",
        # HypoEval (and Chiang & Lee, 2023) correlate over all 400 stories: sample level.
        natural_level="sample",
        aspects=(
            _a("cohesive", 1, 5, "How well the story's sentences connect into one "
               "well-structured piece of writing."),
            _a("enjoy", 1, 5, "How much a reader would like or enjoy the story."),
            _a("grammar", 1, 5, "How grammatically correct the story's text is."),
            _a("relevant", 1, 5, "How well the story fits its prompt."),
        ),
        description="200 human-written + 200 model-written stories, 3 ratings per aspect.",
        loader=_load_writingprompt_a),
}


def default_data_dir() -> Path:
    """``$JUDGE_WORKBENCH_DATA`` if set, else ``<repo>/../shared/data``."""
    env = os.environ.get(DATA_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    repo = Path(__file__).resolve().parent.parent
    return (repo.parent / "shared" / "data").resolve()


def _spec(name: str) -> BenchmarkSpec:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None


def benchmark_path(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Where the file of benchmark ``name`` is expected."""
    return _spec(name).path(data_dir)


def available_benchmarks(data_dir: str | os.PathLike | None = None) -> list[str]:
    """Names of the built-in benchmarks whose files exist under ``data_dir``."""
    return [name for name, spec in BENCHMARKS.items() if spec.path(data_dir).is_file()]


def load_benchmark(name: str, data_dir: str | os.PathLike | None = None) -> Dataset:
    """Load one built-in benchmark as a :class:`Dataset`.

    Raises ValueError for an unknown name and :class:`DataImportError` if the file is
    missing or malformed.
    """
    spec = _spec(name)
    path = spec.path(data_dir)
    if not path.is_file():
        raise DataImportError(f"benchmark file not found at {path} (set {DATA_DIR_ENV} to the "
                              "folder holding the benchmark folders)", file=path)
    samples = spec.loader(spec, path)
    _check_unique_ids(samples, path)
    return Dataset(name=spec.name, task=spec.task, aspects=spec.aspects, samples=tuple(samples),
                   natural_level=spec.natural_level, source=str(path),
                   input_label=spec.input_label, output_label=spec.output_label,
                   context_label=spec.context_label or "Context")


def _check_unique_ids(samples: Sequence[Sample], path) -> None:
    seen = set()
    for n, s in enumerate(samples, 1):
        if s.id in seen:
            raise DataImportError(f"duplicate id {s.id!r}", file=path, row=n)
        seen.add(s.id)


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


def clean_record(rec: dict[str, Any]) -> dict[str, Any]:
    """One record with control characters removed from its keys and texts, as every import removes them."""
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
    return csv.reader(lines, delimiter=dialect.delimiter, quotechar=dialect.quotechar)


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
    left out (a file too large to fix by hand is scored except for that row). ``csv.Error`` is the caller's.
    """
    width = len(header)
    last = reader.line_num
    for cells in reader:
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


def row_sample(row: int | None, rec: dict[str, Any], columns: RowColumns, path: Path | None) -> Sample:
    """The sample of record ``rec`` (on row ``row`` of ``path``); DataImportError naming the row if it has none.

    One reading of a row for every way a table comes in: imported whole (:func:`load_table`), a chunk at a
    time for scoring (:mod:`judge_engine.items`) or a batch of a distributed read (:mod:`judge_engine.ray_scoring`,
    whose rows have no number or file: ``None``, and an ``id_col`` is needed). Uniqueness of ids is the
    caller's: it knows the other rows.
    """
    if columns.id_col is not None:
        sid = _text(rec.get(columns.id_col)).strip()
        if not sid:
            raise DataImportError("the id is empty", file=path, row=row, column=columns.id_col)
    else:
        sid = str(row)
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


# --------------------------------------------------------------------------- splits


def make_split(dataset: Dataset, *, train_size: int = 30, test_size: int | None = None,
               seed: int = 0) -> Split:
    """A seeded train/test split in which no group is in both parts.

    The rule (HypoEval draws its ~30 training items at random from many sources, so
    train is spread over groups; test keeps whole groups so group-level correlations
    stay defined):

    1. The groups are shuffled with ``random.Random(seed)``.
    2. Test. With ``test_size``, test takes whole groups in that shuffled order until it
       holds at least ``test_size`` items; a test group is never cut, so test may hold
       a few more items than asked. Without ``test_size``, test is every group that
       train does not use (step 3).
    3. Train. ``train_size`` items are drawn at random (same seeded generator) from the
       items of the groups left over, spread over as many groups as possible: one item
       from each of the first ``train_size`` left-over groups (in shuffled order), a
       second item from each only when there are fewer groups than ``train_size``, and
       so on. Without ``test_size`` train may use at most half of the groups (more only
       when those cannot hold ``train_size`` items, and never all of them), so test
       keeps at least about half of the groups. The other items of a training group
       are in neither part.

    Ids keep the dataset's order. The same dataset, sizes and seed always give the same
    split. Raises :class:`SplitError` if the dataset is too small for the sizes asked.
    """
    if train_size < 0 or (test_size is not None and test_size < 1):
        raise SplitError(f"train_size must be >= 0 and test_size >= 1 (got {train_size}, {test_size})")
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(dataset.samples):
        groups.setdefault(s.group_id, []).append(i)
    n = len(dataset.samples)
    if len(groups) < 2 and train_size > 0:
        raise SplitError(f"dataset {dataset.name!r} has {len(groups)} group(s); a train/test "
                         "split needs at least 2 groups")
    if train_size >= n:
        raise SplitError(f"dataset {dataset.name!r} has {n} items; train_size={train_size} "
                         "leaves nothing to test on")

    rng = random.Random(seed)
    order = list(groups)
    rng.shuffle(order)

    if test_size is not None:
        test_groups: list[str] = []
        taken = 0
        for g in order:
            if taken >= test_size:
                break
            test_groups.append(g)
            taken += len(groups[g])
        pool = order[len(test_groups):]
        available = sum(len(groups[g]) for g in pool)
        if taken < test_size or available < train_size or (train_size > 0 and not pool):
            raise SplitError(f"dataset {dataset.name!r} has {n} items in {len(groups)} groups: "
                             f"test_size={test_size} (whole groups) plus train_size={train_size} "
                             f"is too large")
    else:
        # train may use at most half of the groups, more only if those cannot hold train_size items
        limit = max(1, len(order) // 2)
        while limit < len(order) - 1 and sum(len(groups[g]) for g in order[:limit]) < train_size:
            limit += 1
        pool = order[:limit]
        if sum(len(groups[g]) for g in pool) < train_size:
            raise SplitError(f"dataset {dataset.name!r} is too small: {train_size} training items "
                             f"take all {len(groups)} groups and leave nothing to test on")

    # each pool group's items in a seeded random order, then one item per group per round
    shuffled = {g: rng.sample(groups[g], len(groups[g])) for g in pool}
    train_idx: list[int] = []
    depth = 0
    while len(train_idx) < train_size:
        for g in pool:
            if depth < len(shuffled[g]):
                train_idx.append(shuffled[g][depth])
                if len(train_idx) == train_size:
                    break
        depth += 1
    train_groups = {dataset.samples[i].group_id for i in train_idx}
    if test_size is None:
        test_groups = [g for g in order if g not in train_groups]
    test_idx = [i for g in test_groups for i in groups[g]]
    samples = dataset.samples
    return Split(dataset=dataset.name, seed=seed,
                 train_ids=tuple(samples[i].id for i in sorted(train_idx)),
                 test_ids=tuple(samples[i].id for i in sorted(test_idx)))
