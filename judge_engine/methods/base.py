"""The interface every method implements, in the spirit of scikit-learn.

A :class:`Method` is its configuration: keyword-only ``__init__`` parameters
with the paper's defaults, stored verbatim, no logic. ``fit(train, aspect,
context)`` validates the parameters, learns from human-scored samples and
returns a :class:`Judge` — a frozen, JSON-native value holding everything
needed to score new data. The :class:`FitContext` carries what a fit needs
besides its data (the model, the task, the dataset's aspects and
meta-evaluation level, progress and event callbacks); every method receives
the same one, whether it uses all of it or not. ``judge.score(samples,
llm=...)`` returns one :class:`~judge_engine.records.Verdict` per sample.

A registry maps method names to classes so any stored run or exported judge
can be rebuilt from ``(name, params)``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import pkgutil
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from ..llm import LLM
from ..prompting import TaskInfo
from ..records import Aspect, Dataset, Sample, Verdict

JUDGE_SCHEMA_VERSION = 1

Progress = Callable[[int, int, str], None]
"""``progress(done, total, stage)``."""
EventSink = Callable[[str, dict[str, Any]], None]
"""``log(kind, payload)``: a method reports what it does as it happens."""


@dataclass(frozen=True)
class FitContext:
    """Everything a method's ``fit`` receives besides the training samples and the aspect.

    :func:`judge_engine.runs.execute_run` builds one per run (with
    :meth:`of`); tests and benchmarks build their own. Every method gets the
    same record, so the runner never needs to know which method reads which
    field.
    """

    llm: LLM
    """The one LLM path (cache, ledger, concurrency) every call of the fit goes through."""
    task: TaskInfo
    """Task description and the labels prompts use for input and output."""
    aspects: tuple[Aspect, ...] = ()
    """All human aspects of the dataset (HD-Eval models several at once); empty when unknown."""
    natural_level: str = "sample"
    """The dataset's meta-evaluation level: ``sample``, ``group`` or ``system`` (HPSS's fitness)."""
    progress: Progress | None = None
    """``progress(done, total, stage)``, or None to report nothing."""
    log: EventSink | None = None
    """``log(kind, payload)`` records what the fit does (the run's events), or None."""
    upcoming: tuple[Sample, ...] = ()
    """The items the run scores with the judge next. A method whose scoring requests are known before its fit
    ends may send them early through :attr:`llm` (whose cache then answers the run's scoring): HD-Eval, while
    its last aggregator is fitted (issue 67). Empty: nothing is sent early."""
    fit_done: Callable[[], None] | None = None
    """Called by a method that sends :attr:`upcoming`'s requests early, once every request of the fit itself is
    answered and before the first of those: the run takes what the fit cost there."""

    @classmethod
    def of(cls, dataset: Dataset, *, llm: LLM, progress: Progress | None = None,
           log: EventSink | None = None) -> "FitContext":
        """The context of a fit on ``dataset``: its task, aspects and natural level."""
        return cls(llm=llm, task=TaskInfo.of(dataset), aspects=tuple(dataset.aspects),
                   natural_level=dataset.natural_level, progress=progress, log=log)


CRITERIA_FORMS = ("auto", "paper", "sentence")
"""How a method asks the model for generated rubric text. ``paper``: the paper's own form (HypoEval's
hypotheses as free sentences that may name score bands, HD-Eval's and Active-Critic's named criteria with
definitions). ``sentence``: for small models, every entry one sentence completing "A good summary ..." under a
grammar, the form the embedded 135M model writes usable criteria in. ``auto``: ``sentence`` on the embedded
model, ``paper`` on every other backend."""
CRITERIA_FORM_LABELS = {"auto": "by backend (sentence form on the embedded model, the paper's elsewhere)",
                        "paper": "the paper's (named criteria, free hypotheses)",
                        "sentence": "sentence form (for small models)"}


def small_model_hint(form: str) -> str:
    """What to add to a message that a generation gave nothing usable: in the paper's form, that a small model
    (a few hundred million parameters behind a server) may do better in the sentence form."""
    return "; a small model may do better with criteria_form='sentence'" if form == "paper" else ""


def resolve_criteria_form(form: str, llm: Any) -> str:
    """``paper`` or ``sentence``: ``auto`` decided by the backend (:attr:`judge_engine.llm.LLMConfig.embedded`)."""
    if form != "auto":
        return form
    config = getattr(llm, "config", None)
    return "sentence" if config is None or config.embedded else "paper"


@dataclass(frozen=True)
class Options:
    """A parameter must be one of these values."""

    values: tuple[Any, ...]

    def check(self, name: str, value: Any) -> None:
        if value not in self.values:
            raise ValueError(f"{name}={value!r} is not allowed; choose one of {list(self.values)}")


KIND_WORDS = {int: "a whole number", float: "a number"}
"""How a parameter's type is named in a message ("k_child='two' must be a whole number", not "a int")."""


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
            raise ValueError(f"{name}={value!r} must be {KIND_WORDS.get(self.kind, 'a ' + self.kind.__name__)}")
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            if self.high is None:
                raise ValueError(f"{name}={value!r} is too small: it must be at least {self.low}")
            if self.low is None:
                raise ValueError(f"{name}={value!r} is too large: it must be at most {self.high}")
            raise ValueError(f"{name}={value!r} is outside the allowed range [{self.low}, {self.high}]")


class OptionalInterval(Interval):
    """An :class:`Interval` that also accepts None (= derived from the data)."""

    def check(self, name: str, value: Any) -> None:
        if value is not None:
            super().check(name, value)


class OptionalType:
    """None, or a value of one of these JSON types."""

    def __init__(self, *kinds: type):
        self.kinds = kinds

    def check(self, name: str, value: Any) -> None:
        if value is not None and not isinstance(value, self.kinds):
            raise ValueError(f"{name}={value!r} must be None or a {' or '.join(k.__name__ for k in self.kinds)}")


class Text:
    """A text that is not empty (a model's name, say)."""

    def check(self, name: str, value: Any) -> None:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name}={value!r} must be a text that is not empty")


class Method:
    """Base class: parameters from ``__init__``, validation at fit time, a registry by name."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    _parameter_constraints: ClassVar[dict[str, Any]] = {}
    _parameter_labels: ClassVar[dict[str, str]] = {}
    """Each parameter in a few words, for forms (the docstring says what it changes)."""
    _choice_labels: ClassVar[dict[str, dict[Any, str]]] = {}
    """Words for the allowed values of a parameter with options, where the value alone says little."""
    quick_params: ClassVar[dict[str, Any]] = {}
    """A small configuration for a first look: fewer calls than the paper's, same procedure."""
    smaller_looks: ClassVar[tuple[dict[str, Any], ...]] = ()
    """Smaller first looks, each a change to :attr:`quick_params`, largest first: a slow backend gets the
    largest one that fits the look's time (:func:`judge_engine.runs.quick_look`)."""
    larger_look: ClassVar[dict[str, Any]] = {}
    """A change to :attr:`quick_params` for the look on the most training items
    (:data:`judge_engine.runs.QUICK_TRAIN_SIZES`), which a backend fast enough for it gets."""
    made_share: ClassVar[float] = 1.0
    """The share of its counted calls (:meth:`estimate_calls`, an upper bound) a fit on a server makes, for a
    first estimate before the method's own runs on the backend measure it; 1: every counted call."""
    render_params: ClassVar[dict[str, Any]] = {}
    """Parameters an estimate's rendering of a fit (:mod:`judge_engine.runs.rendering`) sets to make it cheaper,
    which leave the requests the fit sends as they are (HD-Eval's linear aggregator for its MLP: the same
    number of criteria decomposed per layer, 0.6 s for a paper-default fit on 30 SummEval items where the MLP's
    fold fits took 2.6 s, and the start form renders again on each change of dataset)."""
    calls_follow_agreement: ClassVar[bool] = False
    """Whether how many calls a fit makes turns on how well its replies agree with the humans (HypoEval refreshes
    its bank after mispredictions): its rendering, answered with replies that agree with nobody
    (:mod:`judge_engine.runs.schema_replies`), then does not stand for its calls, and :attr:`made_share` does."""
    ordered_state: ClassVar[tuple[str, ...]] = ()
    """Entries of a fitted judge's state whose order reaches its prompts (demonstrations, criteria, examples,
    hypotheses); a stability probe shuffles them (:func:`reordered`) to see whether the order moves scores."""

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

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> "Judge":
        """Learn a judge of ``aspect`` from the human-scored ``train`` samples."""
        raise NotImplementedError

    def estimate_calls(self, n_train: int, n_test: int, *, backend: str | None = None) -> dict[str, int]:
        """LLM calls the method will make for these sizes (before any cache hit). ``backend`` (a
        :class:`~judge_engine.llm.LLMConfig`'s ``backend``): a method that generates rubric text counts the
        requests of the judge's own check of it there (:func:`judge_engine.rubric_model_check.estimate_calls`: none
        on the embedded model, nor when no backend is named)."""
        raise NotImplementedError

    def estimate_waves(self, n_train: int, n_test: int) -> dict[str, int]:
        """Sequential waves of first-turn calls of a fit and of scoring: steps that wait for the answers of the
        step before, each at least one call's latency however many calls are in flight (issue 46). Scoring is one
        wave here (the test items' calls go out in a sliding window); a follow-up turn adds a wave only when some
        reply had no score, and is not counted."""
        return {"fit": 0, "score": 1}

    def reply_waves(self, n_train: int, earlier: Sequence[tuple[int, Sequence[Any]]]) -> float:
        """Waves a fit on ``n_train`` items is expected to add beyond :meth:`estimate_waves` for steps that come
        only after some replies (HypoEval's bank refreshes), read from ``earlier`` runs of the method: (their
        training items, their events as :class:`~judge_engine.records.RunEvent`; empty: a first fit, whose
        expectation is the method's prior). 0: the method has none."""
        return 0.0

    def shortest_share(self, n_train: int) -> float | None:
        """The share of the training items, the shortest ones, that most calls read (an estimate scales the
        time by those items' length); None: the method reads its items alike."""
        return None

    @classmethod
    def params_on(cls, params: dict[str, Any], llm: Any) -> dict[str, Any]:
        """``params`` as a fit on the backend of ``llm`` (a :class:`~judge_engine.llm.LLMConfig`) will read them,
        for estimates: a method whose ``auto`` choice depends on the backend resolves it here."""
        return params

    @classmethod
    def idle_parameters(cls, params: dict[str, Any]) -> frozenset[str]:
        """Parameters whose value does nothing when the others are ``params`` (a page leaves them out of what
        it says a look changed)."""
        return frozenset()

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


# the method modules of this package, which the registry imports when it first needs them (here, not in the
# package: the package imports this module first)
_MODULES = tuple(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                 if not m.name.startswith("_") and m.name != "base")
_ALL_IMPORTED: list[bool] = [False]


def import_methods(name: str | None = None) -> None:
    """Import the method module called ``name`` if there is one (its methods register themselves), or, for
    ``None``, every method module of this package."""
    if name is None:
        if not _ALL_IMPORTED[0]:
            for module in _MODULES:
                importlib.import_module(f"{__package__}.{module}")
            _ALL_IMPORTED[0] = True
    elif name in _MODULES:
        importlib.import_module(f"{__package__}.{name}")


class MethodRegistry(dict):
    """Method name -> :class:`Method` subclass, whose method modules are imported on first use.

    Looked up by name (``METHODS["hpss"]``, ``"hpss" in METHODS``), it imports the method module of that name
    (:mod:`judge_engine.methods.hpss`); listed, counted or iterated, every method module. So reading one exported
    judge loads its own method, not all six with their numpy, rubric checks and regular expressions: that was
    a third of ``score``'s start before its first request at load 30 (issue 67 item 2). A name no module
    registers is looked for in every module before it is called unknown.
    """

    def _loaded(self, name: str | None) -> bool:
        import_methods(name)
        return name is None or dict.__contains__(self, name)

    def __missing__(self, name: str) -> type[Method]:
        if isinstance(name, str) and (self._loaded(name) or self._loaded(None)) and dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or (
            isinstance(name, str) and (self._loaded(name) or (self._loaded(None) and dict.__contains__(self, name))))

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def __iter__(self):
        self._loaded(None)
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._loaded(None)
        return dict.__len__(self)

    def keys(self):
        self._loaded(None)
        return dict.keys(self)

    def values(self):
        self._loaded(None)
        return dict.values(self)

    def items(self):
        self._loaded(None)
        return dict.items(self)


METHODS: dict[str, type[Method]] = MethodRegistry()


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: make a method available by its ``name``."""
    dict.__setitem__(METHODS, cls.name, cls)
    return cls


def unknown_parameter_message(method: str, names: list[str]) -> str:
    """One line naming the parameters ``method`` does not have, a close match, and the ones it has."""
    known = METHODS[method]._param_names()
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (f"{method} has no parameter {', '.join(parts)}; its parameters are {', '.join(known)} "
            f"(python -m judge_engine methods {method})")


def get_method(name: str, params: dict[str, Any] | None = None) -> Method:
    """The method registered as ``name`` with ``params``; an unknown name or parameter is a ValueError naming it."""
    if name not in METHODS:
        close = difflib.get_close_matches(name, list(METHODS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown method {name!r}{hint}; available: {', '.join(sorted(METHODS))}")
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"the parameters of {name} must be a JSON object, not {type(params).__name__}")
    unknown = [k for k in (params or {}) if k not in METHODS[name]._param_names()]
    if unknown:
        raise ValueError(unknown_parameter_message(name, unknown))
    return METHODS[name](**(params or {}))


@dataclass(frozen=True)
class ParameterDoc:
    """One parameter of a method as its docstring documents it."""

    name: str
    default: Any
    kind: str
    """The type line of the docstring, e.g. ``int, default=20``."""
    text: str
    """What it changes, in words (the docstring's description, joined into one paragraph)."""
    allowed: str
    """The allowed values or range from ``_parameter_constraints`` ("" when unconstrained)."""
    label: str = ""
    """The parameter in a few words, for a form field (the name when the method gives none)."""
    constraint: Any = None
    """The constraint itself (:class:`Options`, :class:`Interval`, ...), so a form can draw the right field."""
    choices: dict[Any, str] = field(default_factory=dict)
    """Words for some allowed values."""

    @property
    def help(self) -> str:
        """What a form shows as the field's help: what it changes, its allowed values and the default."""
        parts = [self.text]
        if self.allowed:
            parts.append(f"Allowed: {self.allowed}.")
        parts.append(f"Default: {self.default!r} (parameter `{self.name}`).")
        return " ".join(p for p in parts if p)


_PARAM_HEADER = re.compile(r"^(\w+)\s*:\s*(.+)$")


def describe_parameters(cls: type[Method]) -> list[ParameterDoc]:
    """Every parameter of ``cls`` with its docstring entry (numpydoc ``Parameters`` section) and constraint.

    The class docstring is the one description of a method's parameters: the
    CLI's ``methods`` listing and its error messages are drawn from it.
    """
    doc = inspect.cleandoc(cls.__doc__ or "")
    entries: dict[str, tuple[str, list[str]]] = {}
    section = doc.split("Parameters\n----------\n", 1)[1] if "Parameters\n----------\n" in doc else ""
    section = re.split(r"\n\S[^\n]*\n-{3,}\n", section)[0]  # up to the next numpydoc section
    current = None
    for line in section.splitlines():
        header = _PARAM_HEADER.match(line)
        if header and not line.startswith(" "):
            current = header.group(1)
            entries[current] = (header.group(2).strip(), [])
        elif current and line.strip():
            entries[current][1].append(line.strip())
    defaults = cls.default_params()
    out = []
    for name in cls._param_names():
        kind, text = entries.get(name, ("", []))
        constraint = cls._parameter_constraints.get(name)
        allowed = ""
        if isinstance(constraint, Options):
            allowed = "one of " + ", ".join(repr(v) for v in constraint.values)
        elif isinstance(constraint, Interval):  # an OptionalInterval also takes None
            low = "" if constraint.low is None else f"{constraint.low:g}"
            high = "" if constraint.high is None else f"{constraint.high:g}"
            allowed = f"{constraint.kind.__name__} in [{low or '-inf'}, {high or 'inf'}]"
        out.append(ParameterDoc(name, defaults[name], kind, " ".join(text), allowed,
                                label=cls._parameter_labels.get(name, name), constraint=constraint,
                                choices=dict(cls._choice_labels.get(name, {}))))
    return out


def reordered(judge: "Judge", seed: int) -> "Judge":
    """``judge`` with the entries its method lists in ``ordered_state`` shuffled (lists and dict key order).

    Nothing else changes, so scoring the result asks the same prompts with their items in another order.
    """
    import random

    rng = random.Random(seed)
    state = dict(judge.state)
    for name in METHODS[judge.method].ordered_state:
        value = state.get(name)
        if isinstance(value, list) and len(value) > 1:
            value = list(value)
            rng.shuffle(value)
            state[name] = value
        elif isinstance(value, dict) and len(value) > 1:
            keys = list(value)
            rng.shuffle(keys)
            state[name] = {k: value[k] for k in keys}
    return Judge(method=judge.method, params=judge.params, aspect=judge.aspect, task=judge.task, state=state)


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
        params = dict(d["params"])
        unknown = [k for k in params if k not in METHODS[d["method"]]._param_names()]
        if unknown:
            raise ValueError("this judge was made by another version of the workbench: "
                             + unknown_parameter_message(d["method"], unknown))
        # a parameter added since the judge was made takes its default, which is the behaviour it had before
        params = {**METHODS[d["method"]].default_params(), **params}
        return cls(method=d["method"], params=params, aspect=dict(d["aspect"]), task=dict(d["task"]),
                   state=dict(d.get("state", {})), schema_version=version)

    @classmethod
    def from_json(cls, text: str) -> "Judge":
        return cls.from_dict(json.loads(text))
