"""Annotation tools in: Label Studio and Argilla exports and Langfuse scores, one row per item, one label per
annotator.

Each reader takes the tool's own export file and returns the items, the labels and what was left out (named);
:func:`import_labels` then maps the values to a scale and saves the dataset the way every import is saved
(:func:`~judge_engine.data.importing.import_dataset`), or nothing at all.

- **Label Studio** (the project's JSON export): a list of tasks, ``data`` holding the texts, each annotation's
  ``result`` holding the control's value (``rating``, ``number`` or ``choices``, one choice), ``completed_by``
  the annotator. A skipped or cancelled annotation (``was_cancelled``) is no label: counted and named.
- **Argilla**: records as ``dataset.records.to_list(flatten=False)`` writes them (``fields`` and ``responses``
  per question, one per user), the flattened form (``<question>.responses`` and ``<question>.responses.users``),
  or Argilla 1.x's (``responses`` as a list of ``{"user_id", "values", "status"}``). Only submitted responses
  are labels; a record without responses is left out and named.
- **Langfuse**: a score export (CSV or JSON, camelCase or snake_case columns: ``traceId``, ``name``, ``value``,
  ``stringValue``, ``dataType``, ``source``, ``authorUserId``) with the traces it scores (a trace export, JSON
  or CSV with ``id``, ``input``, ``output``). Scores from an evaluator (``source`` ``EVAL``) are no labels.

Texts read from the files are hostile like any judged text: they are kept as text and never run.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .labels import LabelImportError, LabelledItem, RawLabel, ValueScale, labelled_dataset, text_of, value_scale

if TYPE_CHECKING:
    from ..records import Dataset
    from ..store import Store

TOOLS = ("label-studio", "argilla", "langfuse")
LABEL_STUDIO_VALUES = ("rating", "number", "choices")


@dataclass(frozen=True)
class ToolLabels:
    """What a reader found: the items, their labels, and what it left out (in words, each naming the items)."""

    items: tuple[LabelledItem, ...]
    labels: tuple[RawLabel, ...]
    left_out: tuple[str, ...]
    question: str = ""
    """The question, control or score read (Label Studio's found in the export when not named)."""


@dataclass(frozen=True)
class LabelsImport:
    dataset: Dataset
    scale: ValueScale
    left_out: tuple[str, ...]

    def summary(self) -> str:
        names = self.dataset.samples[0].metadata.get("annotator_names", []) if self.dataset.samples else []
        left = "; ".join(self.left_out) if self.left_out else "nothing left out"
        return (f"{len(self.dataset.samples)} items labelled by {len(names)} annotator(s) ({', '.join(names)}); "
                f"scale: {self.scale.describe()}; {left}.")


def _named(what: str, ids: list[str]) -> str:
    return f"{len(ids)} {what}: {', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}"


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise LabelImportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise LabelImportError(f"{path.name} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [line for line in text.splitlines() if line.strip()]
        try:  # JSON lines
            return [json.loads(line) for line in lines]
        except json.JSONDecodeError:
            raise LabelImportError(f"{path.name} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") \
                from None


def _records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON list, JSON lines or CSV file."""
    path = Path(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        try:
            with path.open(encoding="utf-8-sig", newline="") as f:
                return list(csv.DictReader(f, delimiter="\t" if path.suffix.lower() == ".tsv" else ","))
        except OSError as exc:
            raise LabelImportError(f"cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise LabelImportError(f"{path.name} is not UTF-8 text") from None
    doc = _read_json(path)
    if isinstance(doc, dict):  # {"records": [...]} or {"data": [...]}
        doc = next((v for k, v in doc.items() if k in ("records", "data", "tasks", "scores", "traces")
                    and isinstance(v, list)), [doc])
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise LabelImportError(f"{path.name}: expected a list of JSON objects")
    return doc


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    if key not in record:
        raise LabelImportError(f"{where} has no {key!r}; its keys: {', '.join(map(repr, record)) or 'none'}")
    return text_of(record[key])


# --------------------------------------------------------------------------- Label Studio


def _ls_annotator(annotation: Mapping[str, Any]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or who.get("username") or who.get("id") or "unknown")
    return f"user {who}" if who is not None else "unknown"


def read_label_studio(path: str | Path, *, input_key: str, output_key: str,
                      control: str | None = None) -> ToolLabels:
    """A Label Studio JSON export (see the module docstring); ``control`` is the rating, number or choices
    control's ``name`` (needed when the export has more than one)."""
    tasks = _records(path)
    controls = {(r.get("from_name"), r.get("type")) for t in tasks for a in t.get("annotations") or []
                for r in a.get("result") or [] if r.get("type") in LABEL_STUDIO_VALUES}
    names = sorted({str(n) for n, _ in controls})
    if control is None:
        if len(names) != 1:
            raise LabelImportError(f"{Path(path).name}: name the control to import (--question); the export's "
                                   f"rating, number and choices controls: {', '.join(names) or 'none'}")
        control = names[0]
    elif control not in names:
        raise LabelImportError(f"{Path(path).name}: no rating, number or choices control named {control!r}; the "
                               f"export has: {', '.join(names) or 'none'}")
    items, labels, cancelled, unanswered, unlabelled = [], [], [], [], []
    for k, task in enumerate(tasks, 1):
        task_id = str(task.get("id", k))
        data = task.get("data") or {}
        where = f"task {task_id}'s data"
        items.append(LabelledItem(task_id, _text(data, input_key, where), _text(data, output_key, where)))
        got = False
        for annotation in task.get("annotations") or []:
            who = _ls_annotator(annotation)
            if annotation.get("was_cancelled") or annotation.get("skipped"):
                cancelled.append(f"{task_id} ({who})")
                continue
            values = [r for r in annotation.get("result") or [] if r.get("from_name") == control]
            if not values:
                unanswered.append(f"{task_id} ({who})")
                continue
            result = values[-1]
            value = (result.get("value") or {}).get(result.get("type"))
            if result.get("type") == "choices":
                if not isinstance(value, list) or len(value) != 1:
                    raise LabelImportError(f"task {task_id}: {who} chose {value!r} in {control!r}; a score "
                                           "needs exactly one choice")
                value = value[0]
            labels.append(RawLabel(task_id, who, value))
            got = True
        if not got:
            unlabelled.append(task_id)
    left = [s for s in (_named("skipped or cancelled annotation(s) (no label)", cancelled) if cancelled else "",
                        _named(f"annotation(s) without {control!r}", unanswered) if unanswered else "",
                        _named("task(s) without a label, left out", unlabelled) if unlabelled else "") if s]
    return ToolLabels(tuple(items), tuple(labels), tuple(left), control)


# --------------------------------------------------------------------------- Argilla


def _argilla_responses(record: Mapping[str, Any], question: str) -> tuple[list[tuple[str, Any]], int]:
    """(user, value) of the submitted responses to ``question``, and how many others (discarded, drafts)."""
    out, other = [], 0
    responses = record.get("responses")
    if isinstance(responses, dict):  # Argilla 2.x, flatten=False
        for r in responses.get(question) or []:
            if str(r.get("status", "submitted")) != "submitted":
                other += 1
            elif r.get("value") is not None:
                out.append((str(r.get("user_id") or "unknown"), r["value"]))
    elif isinstance(responses, list):  # Argilla 1.x
        for r in responses:
            values = r.get("values") or {}
            if question not in values:
                continue
            if str(r.get("status", "submitted")) != "submitted":
                other += 1
            else:
                value = values[question]
                out.append((str(r.get("user_id") or "unknown"), value.get("value") if isinstance(value, dict)
                            else value))
    elif f"{question}.responses" in record:  # Argilla 2.x, flattened
        values = record.get(f"{question}.responses") or []
        users = record.get(f"{question}.responses.users") or ["unknown"] * len(values)
        statuses = record.get(f"{question}.responses.status") or ["submitted"] * len(values)
        for value, user, status in zip(values, users, statuses):
            if str(status) != "submitted":
                other += 1
            elif value is not None:
                out.append((str(user), value))
    return out, other


def read_argilla(path: str | Path, *, input_key: str, output_key: str, question: str) -> ToolLabels:
    """An Argilla export (see the module docstring); ``question`` is the question whose responses are scores."""
    records = _records(path)
    items, labels, without, other = [], [], [], 0
    for k, record in enumerate(records, 1):
        record_id = str(record.get("id") or record.get("external_id") or k)
        fields = record.get("fields") if isinstance(record.get("fields"), dict) else record
        where = f"record {record_id}'s fields"
        items.append(LabelledItem(record_id, _text(fields, input_key, where), _text(fields, output_key, where)))
        given, others = _argilla_responses(record, question)
        other += others
        if not given:
            without.append(record_id)
        labels.extend(RawLabel(record_id, user, value) for user, value in given)
    if not labels:
        raise LabelImportError(f"{Path(path).name}: no record has a submitted response to {question!r}")
    left = [s for s in (_named(f"record(s) without a submitted {question!r} response, left out", without)
                        if without else "",
                        f"{other} discarded or draft response(s) (no label)" if other else "") if s]
    return ToolLabels(tuple(items), tuple(labels), tuple(left))


# --------------------------------------------------------------------------- Langfuse


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _field(row: Mapping[str, Any], name: str) -> Any:
    for k, v in row.items():
        if _key(str(k)) == _key(name):
            return v
    return None


def _langfuse_value(row: Mapping[str, Any]) -> Any:
    kind = str(_field(row, "dataType") or "").upper()
    value, text = _field(row, "value"), _field(row, "stringValue")
    if kind == "CATEGORICAL":
        return text
    if kind == "BOOLEAN":
        number = float(value) if value not in (None, "") else None
        return bool(number) if number is not None else text
    return value if value not in (None, "") else text


def read_langfuse(scores: str | Path, traces: str | Path, *, score: str, input_key: str = "input",
                  output_key: str = "output") -> ToolLabels:
    """A Langfuse score export and its traces (see the module docstring); ``score`` is the score's name."""
    rows = _records(scores)
    trace_rows = _records(traces)
    texts = {}
    for k, t in enumerate(trace_rows, 1):
        trace_id = str(_field(t, "id") or "")
        if not trace_id:
            raise LabelImportError(f"{Path(traces).name}: trace {k} has no 'id'")
        texts[trace_id] = t
    names = sorted({str(_field(r, "name")) for r in rows})
    if score not in names:
        raise LabelImportError(f"{Path(scores).name}: no score named {score!r}; the names there: "
                               f"{', '.join(map(repr, names)) or 'none'}")
    labels, evaluated, unknown = [], 0, []
    for r in rows:
        if str(_field(r, "name")) != score:
            continue
        if str(_field(r, "source") or "").upper() == "EVAL":
            evaluated += 1
            continue
        trace_id = str(_field(r, "traceId") or "")
        if trace_id not in texts:
            unknown.append(trace_id or "(none)")
            continue
        who = str(_field(r, "authorUserId") or _field(r, "source") or "unknown")
        labels.append(RawLabel(trace_id, who, _langfuse_value(r)))
    if unknown:
        raise LabelImportError(f"{Path(scores).name}: {len(unknown)} {score!r} score(s) are of traces not in "
                               f"{Path(traces).name} (e.g. {', '.join(unknown[:3])}); export those traces too")
    labelled = {label.item for label in labels}
    items = [LabelledItem(trace_id, _text(t, input_key, f"trace {trace_id}"), _text(t, output_key, f"trace {trace_id}"),
                          group=str(_field(t, "sessionId") or ""))
             for trace_id, t in texts.items()]
    without = [i.id for i in items if i.id not in labelled]
    left = [s for s in (_named(f"trace(s) without a {score!r} score, left out", without) if without else "",
                        f"{evaluated} score(s) from an evaluator (source EVAL, no label)" if evaluated else "") if s]
    return ToolLabels(tuple(items), tuple(labels), tuple(left))


# --------------------------------------------------------------------------- import


def read_tool(tool: str, path: str | Path, *, question: str | None, input_key: str, output_key: str,
              traces: str | Path | None = None) -> ToolLabels:
    if tool == "label-studio":
        return read_label_studio(path, input_key=input_key, output_key=output_key, control=question)
    if not question:
        raise LabelImportError(f"name the {'question' if tool == 'argilla' else 'score'} to import (--question)")
    if tool == "argilla":
        return read_argilla(path, input_key=input_key, output_key=output_key, question=question)
    if tool == "langfuse":
        if traces is None:
            raise LabelImportError("a Langfuse score export needs the traces it scores (--traces FILE): the "
                                   "scores hold no texts")
        return read_langfuse(path, traces, score=question, input_key=input_key, output_key=output_key)
    raise LabelImportError(f"unknown tool {tool!r}; use one of {', '.join(TOOLS)}")


def import_labels(store: Store, tool: str, path: str | Path, *, name: str, question: str | None = None,
                  input_key: str = "input", output_key: str = "output", traces: str | Path | None = None,
                  aspect: str | None = None, mapping: Mapping[str, float] | None = None,
                  value_range: tuple[float, float] | None = None, task: str = "") -> LabelsImport:
    """Import another tool's labels as the new dataset ``name`` (one aspect, named ``aspect`` or the question);
    LabelImportError or ValueError naming the problem, and then nothing is stored."""
    from ..data.importing import check_new_name, import_dataset

    name = check_new_name(store, name)
    read = read_tool(tool, path, question=question, input_key=input_key, output_key=output_key, traces=traces)
    if not read.labels:
        raise LabelImportError(f"{Path(path).name}: no labels to import ({'; '.join(read.left_out)})")
    aspect = aspect or read.question or question or "score"
    scale = value_scale([label.value for label in read.labels], what=f"{Path(path).name}, {aspect!r}",
                        mapping=mapping, value_range=value_range)
    dataset = labelled_dataset(name, aspect, read.items, read.labels, scale, task=task,
                               source=f"{tool} {Path(path).name}")
    import_dataset(store, dataset)
    return LabelsImport(dataset, scale, read.left_out)
