"""The interface every method implements, in the spirit of scikit-learn.

A :class:`Method` is its configuration: keyword-only ``__init__`` parameters
with the paper's defaults, stored verbatim, no logic. ``fit(train, aspect,
llm=..., task=...)`` validates the parameters, learns from human-scored
samples and returns a :class:`Judge` — a frozen, JSON-native value holding
everything needed to score new data. ``judge.score(samples, llm=...)``
returns one :class:`~judge_engine.records.Verdict` per sample.

A registry maps method names to classes so any stored run or exported judge
can be rebuilt from ``(name, params)``.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from ..llm import LLM
from ..prompting import TaskInfo
from ..records import Aspect, Sample, Verdict

JUDGE_SCHEMA_VERSION = 1

Progress = Callable[[int, int, str], None]
"""``progress(done, total, stage)``."""
EventSink = Callable[[str, dict[str, Any]], None]
"""``log(kind, payload)``: a method reports what it does as it happens."""


@dataclass(frozen=True)
class Options:
    """A parameter must be one of these values."""

    values: tuple[Any, ...]

    def check(self, name: str, value: Any) -> None:
        if value not in self.values:
            raise ValueError(f"{name}={value!r} is not allowed; choose one of {list(self.values)}")


@dataclass(frozen=True)
class Interval:
    """A numeric parameter inside ``[low, high]`` (either bound may be None)."""

    kind: type
    low: float | None = None
    high: float | None = None

    def check(self, name: str, value: Any) -> None:
        ok_type = isinstance(value, self.kind) and not isinstance(value, bool)
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            ok_type = True
        if not ok_type:
            raise ValueError(f"{name}={value!r} must be a {self.kind.__name__}")
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise ValueError(f"{name}={value!r} is outside the allowed range [{self.low}, {self.high}]")


class Method:
    """Base class: parameters from ``__init__``, validation at fit time, a registry by name."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    _parameter_constraints: ClassVar[dict[str, Any]] = {}

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind is not p.KEYWORD_ONLY:
                raise TypeError(f"{cls.__name__} parameters must be keyword-only ({p.name})")
            names.append(p.name)
        return names

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {n: sig.parameters[n].default for n in cls._param_names()}

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters as given (JSON-native)."""
        return {n: getattr(self, n) for n in self._param_names()}

    def set_params(self, **params: Any) -> "Method":
        for k, v in params.items():
            if k not in self._param_names():
                raise ValueError(f"{type(self).__name__} has no parameter {k!r}")
            setattr(self, k, v)
        return self

    def _validate_params(self) -> None:
        for pname, constraint in self._parameter_constraints.items():
            constraint.check(pname, getattr(self, pname))

    def fit(self, train: Sequence[Sample], aspect: Aspect, *, llm: LLM, task: TaskInfo,
            progress: Progress | None = None, log: EventSink | None = None) -> "Judge":
        raise NotImplementedError

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        """LLM calls the method will make for these sizes (before any cache hit)."""
        raise NotImplementedError

    @classmethod
    def score_with(cls, judge: "Judge", samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def judge_warning(code: str, message: str, count: int | None = None) -> dict[str, Any]:
    """A fit-time warning for ``Judge.state["warnings"]``, shown in the run's summary.

    ``code`` is stable for programs (``empty_bank``, ``no_criteria``, ``no_children``, ...); ``message``
    says in words what happened and what it means for the judge; ``count`` how often, where it counts.
    """
    out: dict[str, Any] = {"code": code, "message": message}
    if count is not None:
        out["count"] = int(count)
    return out


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: make a method available by its ``name``."""
    METHODS[cls.name] = cls
    return cls


def get_method(name: str, params: dict[str, Any] | None = None) -> Method:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}")
    return METHODS[name](**(params or {}))


@dataclass(frozen=True)
class Judge:
    """A fitted judge: JSON-native, exportable, able to score new samples."""

    method: str
    """Registry name of the method that produced it."""
    params: dict[str, Any]
    """The method's parameters at fit time."""
    aspect: dict[str, Any]
    """The aspect (name, range, definition) it scores."""
    task: dict[str, str]
    """Task description and the labels prompts use for input and output."""
    state: dict[str, Any] = field(default_factory=dict)
    """What was learned: prompts, steps, criteria, hypotheses, aggregator weights, demos."""
    schema_version: int = JUDGE_SCHEMA_VERSION

    @property
    def aspect_record(self) -> Aspect:
        return Aspect(**self.aspect)

    @property
    def task_info(self) -> TaskInfo:
        return TaskInfo(**self.task)

    def score(self, samples: Sequence[Sample], *, llm: LLM, progress: Progress | None = None) -> list[Verdict]:
        """Score ``samples``; one Verdict each, NaN score where the reply did not parse."""
        return METHODS[self.method].score_with(self, samples, llm=llm, progress=progress)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Judge":
        version = d.get("schema_version")
        if version != JUDGE_SCHEMA_VERSION:
            raise ValueError(f"judge schema version {version!r} is not supported (expected {JUDGE_SCHEMA_VERSION})")
        if d.get("method") not in METHODS:
            raise ValueError(f"judge method {d.get('method')!r} is unknown; available: {', '.join(sorted(METHODS))}")
        return cls(method=d["method"], params=dict(d["params"]), aspect=dict(d["aspect"]), task=dict(d["task"]),
                   state=dict(d.get("state", {})), schema_version=version)

    @classmethod
    def from_json(cls, text: str) -> "Judge":
        return cls.from_dict(json.loads(text))
