"""Typed records that flow through the engine.

Every engine function takes and returns these frozen dataclasses rather than
ad-hoc dicts. They hold JSON-native values only, so each one converts to and
from a plain dict (``to_dict`` / ``from_dict``) for storage and export.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One judged item: a generated text with the human scores it received."""

    id: str
    """Stable id, unique inside its dataset."""
    input: str
    """What the output was generated from: article, dialogue history, story prompt, data."""
    output: str
    """The generated text being judged."""
    group_id: str
    """Items sharing a source (article, dialogue context, prompt); splits never cut a group."""
    system_id: str = ""
    """Which system produced the output (for system-level meta-evaluation)."""
    context: str | None = None
    """Extra grounding, e.g. the fact a dialogue response should use."""
    reference: str | None = None
    """A reference output, where the data has one."""
    human: dict[str, float] = field(default_factory=dict)
    """Human score per aspect (the mean over annotators)."""
    annotators: dict[str, list[float]] = field(default_factory=dict)
    """Per-annotator scores per aspect, where the data has them."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Anything else the source file carried."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Sample":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class Aspect:
    """A quality dimension humans scored, with its range and an editable definition."""

    name: str
    """Aspect key as it appears in ``Sample.human``."""
    low: float
    """Lowest score on the human scale."""
    high: float
    """Highest score on the human scale."""
    definition: str = ""
    """Plain-language definition used in prompts; editable per dataset."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Dataset:
    """A named collection of samples with the aspects they were scored on."""

    name: str
    """Short name, e.g. ``summeval``."""
    task: str
    """What was generated, e.g. ``news summarization``."""
    aspects: tuple[Aspect, ...]
    """Aspects scored by humans, each with its range."""
    samples: tuple[Sample, ...]
    """The items."""
    natural_level: str = "sample"
    """Meta-evaluation level the papers report for this data: sample, group or system."""
    source: str = ""
    """Where it was imported from (file path or benchmark folder)."""
    input_label: str = "Source"
    """How prompts name the input (Article, Dialogue history, Story prompt, ...)."""
    output_label: str = "Output"
    """How prompts name the output (Summary, Response, Story, ...)."""
    context_label: str = "Context"
    """How prompts name ``Sample.context`` (e.g. Fact for Topical-Chat)."""

    def aspect(self, name: str) -> Aspect:
        for a in self.aspects:
            if a.name == name:
                return a
        names = ", ".join(a.name for a in self.aspects)
        raise KeyError(f"dataset {self.name!r} has no aspect {name!r}; it has: {names}")

    @property
    def aspect_names(self) -> list[str]:
        return [a.name for a in self.aspects]

    def by_id(self) -> dict[str, Sample]:
        return {s.id: s for s in self.samples}

    def subset(self, ids: list[str]) -> tuple[Sample, ...]:
        index = self.by_id()
        return tuple(index[i] for i in ids)


@dataclass(frozen=True)
class Split:
    """A seeded, grouped train/test split of a dataset (ids only)."""

    dataset: str
    seed: int
    train_ids: tuple[str, ...]
    """Human-scored items a method may learn from."""
    test_ids: tuple[str, ...]
    """Held-out items the judge is meta-evaluated on."""

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "seed": self.seed,
                "train_ids": list(self.train_ids), "test_ids": list(self.test_ids)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Split":
        return cls(d["dataset"], int(d["seed"]), tuple(d["train_ids"]), tuple(d["test_ids"]))


@dataclass(frozen=True)
class Verdict:
    """A judge's score for one sample on one aspect."""

    sample_id: str
    """Id of the judged sample."""
    aspect: str
    """Aspect scored."""
    score: float
    """The score on the aspect's scale; NaN when the reply did not parse (never a guess)."""
    criteria: dict[str, float] = field(default_factory=dict)
    """Per-criterion scores where the method has criteria (NaN for unparsed ones)."""
    explanation: str = ""
    """The judge's reasoning, where it gives one."""
    raw: str = ""
    """The raw reply (or replies) the score was parsed from."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Method-specific extras (e.g. the probability distribution over the scale). Keys every method uses
    alike: ``source`` (how the score was read: ``json``, ``text``, ``logprobs``, ``logprobs_first_position``,
    ``sampling``, ``missing``, and ``not_asked`` for an item the model was never asked about), ``missing_reason`` (why a missing score is missing, in words) and
    ``imputed_criteria`` (criteria whose score was filled in rather than read)."""

    @property
    def missing(self) -> bool:
        return self.score is None or math.isnan(self.score)


@dataclass(frozen=True)
class Annotation:
    """One label: a person's (or an imported annotator's) score of one sample on one aspect."""

    dataset: str
    """Dataset the sample belongs to."""
    sample: str
    """Sample id."""
    aspect: str
    """Aspect scored."""
    annotator: str
    """Who gave it: a person's name, or ``<dataset>#rater<k>`` for an imported per-annotator list."""
    value: float
    """The score, on the aspect's scale."""
    time: float
    """When it was given (Unix time; the import time for imported labels)."""
    note: str = ""
    """The annotator's note, if any."""
    source: str = "person"
    """``imported`` (came with the data, never changed) or ``person`` (given in the workbench)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
