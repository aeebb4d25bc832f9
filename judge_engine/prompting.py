"""Prompt templates as plain files with named fields, and how samples are shown to a judge.

Templates live in ``judge_engine/prompts/*.txt`` and use ``{field}`` slots.
Rendering is strict: a missing field and a field the template does not use
are both errors, so no value is ever silently dropped. Judged texts are
fenced between fixed markers so a text cannot pass itself off as part of the
instructions.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import Aspect, Dataset, Sample

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"

FENCE_OPEN = "<<<{label}>>>"
FENCE_CLOSE = "<<<END {label}>>>"


@dataclass(frozen=True)
class Template:
    """A named prompt with ``{field}`` slots."""

    name: str
    text: str

    @property
    def fields(self) -> tuple[str, ...]:
        seen: list[str] = []
        for _, field, _, _ in string.Formatter().parse(self.text):
            if field is not None and field not in seen:
                if not field.isidentifier():
                    raise ValueError(f"template {self.name!r} has an invalid slot {{{field}}}")
                seen.append(field)
        return tuple(seen)

    def render(self, **values: Any) -> str:
        fields = self.fields  # parsed once per render, not once per value
        missing = [f for f in fields if f not in values]
        unused = [k for k in values if k not in fields]
        if missing:
            raise KeyError(f"template {self.name!r} needs field(s) {', '.join(missing)}")
        if unused:
            raise KeyError(f"template {self.name!r} has no slot for {', '.join(unused)}")
        return self.text.format(**values)


def load_template(name: str) -> Template:
    """Read ``prompts/{name}.txt``."""
    return Template(name, (PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8").strip("\n"))


DEFAULT_OPENER = "A good response"
"""How a generated criterion starts when the judged output has no label of its own (:attr:`TaskInfo.statement_opener`)."""


@dataclass(frozen=True)
class TaskInfo:
    """What a judge needs to know about the task, independent of any one sample."""

    task: str
    """e.g. ``news summarization``."""
    input_label: str = "Source"
    output_label: str = "Output"
    context_label: str = "Context"

    @classmethod
    def of(cls, dataset: Dataset) -> "TaskInfo":
        return cls(dataset.task, dataset.input_label, dataset.output_label, dataset.context_label)

    @property
    def statement_opener(self) -> str:
        """How a generated criterion, sub-criterion or hypothesis starts when the methods ask for it as a
        sentence: "A good summary" (see :func:`judge_engine.structured.statement_list_schema`)."""
        label = self.output_label.strip().lower()
        return f"A good {label}" if label else DEFAULT_OPENER

    def to_dict(self) -> dict[str, str]:
        return {"task": self.task, "input_label": self.input_label, "output_label": self.output_label,
                "context_label": self.context_label}


def fence(label: str, text: str) -> str:
    """Wrap a judged text between markers the text itself cannot close."""
    close = FENCE_CLOSE.format(label=label.upper())
    safe = (text or "").replace(close, close.replace("<<<", "< < <"))
    return f"{FENCE_OPEN.format(label=label.upper())}\n{safe}\n{close}"


def shorten(text: str | None, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters with a visible ``[...]`` where it was cut (``None``: whole)."""
    text = text or ""
    return text if limit is None or len(text) <= limit else text[:limit].rstrip() + " [...]"


def render_sample(sample: Sample, task: TaskInfo, *, with_reference: bool = False) -> str:
    """The sample block of a judge prompt: input, optional context/reference, then the output."""
    parts = [fence(task.input_label, sample.input)]
    if sample.context:
        parts.append(fence(task.context_label, sample.context))
    if with_reference and sample.reference:
        parts.append(fence("Reference", sample.reference))
    parts.append(fence(task.output_label, sample.output))
    return "\n\n".join(parts)


def judge_scale(aspect: Aspect) -> tuple[int, int]:
    """Integer scale the judge answers on: the aspect's own when it has 3+ points, else 1-5."""
    lo, hi = aspect.low, aspect.high
    if float(lo).is_integer() and float(hi).is_integer() and hi - lo >= 2 and hi - lo <= 10:
        return int(lo), int(hi)
    return 1, 5


def to_aspect_range(score: float, scale: tuple[int, int], aspect: Aspect) -> float:
    """Map a score on the judge scale linearly onto the aspect's human range."""
    lo, hi = scale
    if (lo, hi) == (aspect.low, aspect.high):
        return score
    return aspect.low + (score - lo) * (aspect.high - aspect.low) / (hi - lo)
