"""Labels from other tools as a dataset: items, one label per annotator, and the scale their values map to.

MLflow assessments, Label Studio and Argilla exports and Langfuse scores all come down to the same thing:
items (what was judged), and per item one value per annotator, of one type: numbers, booleans or categories.
A reader turns its tool's format into :class:`LabelledItem` and :class:`RawLabel` records; everything after
that is here and shared: :func:`value_scale` chooses the scale the values map to (shown, and editable with
``mapping``), :func:`labelled_dataset` builds the :class:`~judge_engine.records.Dataset` (the mean over
annotators as the item's human score, each annotator's label kept under their own name), and
:func:`~judge_engine.data.importing.import_dataset` saves it the way a file import is saved.

Pure functions, no tool imported here.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..records import Aspect, Dataset, Sample

ANNOTATOR_NAMES = "annotator_names"
"""``Sample.metadata`` key: the names of the annotators whose labels ``Sample.annotators`` lists, in order (the
store keeps each label under its annotator's name rather than ``<dataset>#rater<k>``)."""


class LabelImportError(ValueError):
    """A problem with another tool's labels that the user can fix; nothing was imported."""


@dataclass(frozen=True)
class LabelledItem:
    """One judged item as another tool holds it."""

    id: str
    input: str
    output: str
    group: str = ""
    """Items sharing a source (an MLflow session, a Langfuse session); empty: the item is its own group."""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RawLabel:
    """One annotator's value for one item, as the tool gave it (a number, a boolean or a category)."""

    item: str
    annotator: str
    value: Any


@dataclass(frozen=True)
class ValueScale:
    """How a tool's values become numbers on the aspect's scale.

    ``kind`` is ``numeric`` (values kept as they are), ``boolean`` (``false``/``true`` -> ``mapping``) or
    ``categorical`` (each category -> ``mapping``). ``low``/``high`` are the scale's ends.
    """

    kind: str
    low: float
    high: float
    mapping: dict[str, float] = field(default_factory=dict)

    def number(self, value: Any) -> float:
        if self.kind == "numeric":
            return float(value)
        return self.mapping[_category(value)]

    def describe(self) -> str:
        """The scale in words, as ``datasets import-*`` prints it (and ``--value LABEL=NUMBER`` changes it)."""
        if self.kind == "numeric":
            return f"numeric, {self.low:g} to {self.high:g}"
        pairs = ", ".join(f"{k}={v:g}" for k, v in self.mapping.items())
        return f"{self.kind}: {pairs}"


def _category(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, numbers.Real):
        return "numeric"
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return "boolean"
        try:
            float(text)
        except ValueError:
            return "categorical"
        return "numeric"
    return "other"


def value_scale(values: Iterable[Any], *, what: str, mapping: Mapping[str, float] | None = None,
                value_range: tuple[float, float] | None = None) -> ValueScale:
    """The scale ``values`` map to; :class:`LabelImportError` naming ``what`` for mixed or unusable types.

    Numbers keep their values (the scale from the lowest to the highest seen, or ``value_range``); booleans map
    false=0, true=1; categories map in sorted order to 0, 1, 2, ... unless ``mapping`` (category -> number)
    says otherwise, and then every category seen must be in it.
    """
    values = list(values)
    if not values:
        raise LabelImportError(f"{what}: no labels to import")
    kinds: dict[str, list[Any]] = {}
    for v in values:
        kinds.setdefault(_kind(v), []).append(v)
    if "other" in kinds:
        raise LabelImportError(f"{what}: a value is neither a number, a boolean nor a category "
                               f"(e.g. {kinds['other'][0]!r}); a list or object cannot be a score")
    if len(kinds) > 1:
        examples = "; ".join(f"{k} (e.g. {v[0]!r})" for k, v in sorted(kinds.items()))
        raise LabelImportError(f"{what}: the values are of mixed types: {examples}. Every label of one "
                               "aspect must be a number, or every one a boolean, or every one a category")
    kind = next(iter(kinds))
    if kind == "numeric" and not mapping:
        numbers_ = [float(v) for v in values]
        bad = [v for v in numbers_ if not math.isfinite(v)]
        if bad:
            raise LabelImportError(f"{what}: {bad[0]!r} is not a finite number")
        low, high = value_range or (min(numbers_), max(numbers_))
        if not low < high:
            raise LabelImportError(f"{what}: every label is {low:g}; a scale needs two different values "
                                   "(give the scale's ends with a range)")
        return ValueScale("numeric", float(low), float(high))
    seen = sorted({_category(v) for v in values})
    if kind == "numeric":  # numbers mapped by hand are categories
        kind = "categorical"
    if mapping:
        chosen = {str(k).strip(): float(v) for k, v in mapping.items()}
        unmapped = [c for c in seen if c not in chosen]
        if unmapped:
            raise LabelImportError(f"{what}: no number given for {', '.join(map(repr, unmapped))} "
                                   f"(the values seen: {', '.join(map(repr, seen))})")
    elif kind == "boolean":
        chosen = {"false": 0.0, "true": 1.0}
    else:
        chosen = {c: float(i) for i, c in enumerate(seen)}
    seen = [c.lower() if kind == "boolean" else c for c in seen]
    chosen = {(k.lower() if kind == "boolean" else k): v for k, v in chosen.items()}
    numbers_ = list(chosen.values())
    low, high = value_range or (min(numbers_), max(numbers_))
    if not low < high:
        raise LabelImportError(f"{what}: the scale needs two different numbers (mapping: {chosen})")
    return ValueScale(kind, float(low), float(high), chosen)


def labelled_dataset(name: str, aspect: str, items: Sequence[LabelledItem], labels: Sequence[RawLabel],
                     scale: ValueScale, *, task: str = "", source: str = "", input_label: str = "Input",
                     output_label: str = "Output") -> Dataset:
    """A dataset of the ``items`` that have a label: the mean over annotators as the human score, each
    annotator's label under their name (``Sample.annotators`` in the order of ``metadata["annotator_names"]``).

    An annotator who labelled an item twice counts with their last label; items without a label are left
    out (the reader counts and names them).
    """
    per_item: dict[str, dict[str, float]] = {}
    for label in labels:
        value = label.value if scale.kind == "numeric" else (
            _category(label.value).lower() if scale.kind == "boolean" else label.value)
        per_item.setdefault(label.item, {})[label.annotator] = scale.number(value)
    names = sorted({label.annotator for label in labels})
    samples = []
    for item in items:
        given = per_item.get(item.id)
        if not given:
            continue
        ordered = [given.get(n, math.nan) for n in names]
        present = [v for v in ordered if not math.isnan(v)]
        samples.append(Sample(id=item.id, input=item.input, output=item.output, group_id=item.group or item.id,
                              human={aspect: sum(present) / len(present)}, annotators={aspect: ordered},
                              metadata={**item.metadata, ANNOTATOR_NAMES: names}))
    if not samples:
        raise LabelImportError(f"no item has a {aspect!r} label; nothing to import")
    return Dataset(name=name, task=task, aspects=(Aspect(aspect, scale.low, scale.high),), samples=tuple(samples),
                   source=source, input_label=input_label, output_label=output_label)


def parse_mapping(specs: Sequence[str]) -> dict[str, float]:
    """``LABEL=NUMBER`` texts (``--value good=1``) as a mapping; LabelImportError for one that is not."""
    mapping: dict[str, float] = {}
    for text in specs:
        label, sep, number = text.rpartition("=")
        try:
            if not sep or not label.strip():
                raise ValueError
            mapping[label.strip()] = float(number)
        except ValueError:
            raise LabelImportError(f"--value {text!r} must read LABEL=NUMBER, e.g. good=1") from None
    return mapping


def text_of(value: Any) -> str:
    """A tool's input or output as the text a judge reads: a string as it is, a one-key object as its value,
    anything else as indented JSON."""
    import json

    if value is None:
        return ""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in "{[":
            try:
                return text_of(json.loads(stripped))
            except ValueError:
                return value
        return value
    if isinstance(value, dict) and len(value) == 1:
        return text_of(next(iter(value.values())))
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)
