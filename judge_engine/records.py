"""Typed records that flow through the engine.

Every engine function takes and returns these frozen dataclasses rather than
ad-hoc dicts. They hold JSON-native values only, so each one converts to and
from a plain dict (``to_dict`` / ``from_dict``) for storage and export.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .llm.client import LedgerTotals


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


@dataclass(frozen=True)
class RunWarning:
    """Something a person must know about a run before trusting its figures (see ``runs.run_warnings``)."""

    code: str
    """Stable for programs: ``scores_missing``, ``prompts_cut``, ``empty_bank``, ..."""
    message: str
    """What happened and what it means, in words."""
    count: int | None = None
    """How often, where it counts."""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **({} if self.count is None else {"count": self.count})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunWarning":
        count = d.get("count")
        return cls(str(d.get("code", "")), str(d.get("message", "")), None if count is None else int(count))


@dataclass(frozen=True)
class RunSummary:
    """A finished run's meta-evaluation, cost and warnings, as ``runs.summarize`` measures them.

    Summaries stored by older versions lack some fields; :meth:`from_dict`
    gives those their neutral value (``missing`` falls back to
    ``parse_failures``, which older versions counted instead).
    """

    level: str = "sample"
    """The dataset's natural meta-evaluation level, where the run has it, else ``sample``."""
    correlations: dict[str, Any] | None = None
    """The report at ``level`` (``metrics.MetaEvalReport.to_dict``); None when it could not be measured."""
    levels: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Level -> report, for every level that applies to the test items."""
    n: int = 0
    """Test items scored or attempted."""
    missing: int = 0
    """Test items without a score."""
    parse_failures: int = 0
    """Missing scores whose reply gave no readable score (an item never asked about is not one)."""
    parse_failure_rate: float = 0.0
    warnings: tuple[RunWarning, ...] = ()
    ledger: LedgerTotals = field(default_factory=LedgerTotals)
    """What the run's LLM calls cost, over all its resumes (the run's ledger when it finished)."""
    seconds: float = 0.0
    """Wall time, added up over resumes."""

    @property
    def scored(self) -> int:
        return self.n - self.missing

    def to_dict(self) -> dict[str, Any]:
        """The stored form: the ledger's totals stay flat keys of the summary (:data:`SUMMARY_LEDGER_KEYS`)."""
        out = asdict(self)
        out["warnings"] = [w.to_dict() for w in self.warnings]
        del out["ledger"]
        seconds = out.pop("seconds")
        out.update({key: getattr(self.ledger, name) for name, key in SUMMARY_LEDGER_KEYS.items()})
        out["seconds"] = seconds
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunSummary":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k != "ledger" and d.get(k) is not None}
        known.setdefault("missing", d.get("parse_failures") or 0)
        known["warnings"] = tuple(RunWarning.from_dict(w) for w in known.get("warnings") or ())
        known["levels"] = dict(known.get("levels") or {})
        known["ledger"] = LedgerTotals.from_dict({name: d.get(key) for name, key in SUMMARY_LEDGER_KEYS.items()})
        return cls(**known)


SUMMARY_LEDGER_KEYS = {"calls": "calls", "cache_hits": "cache_hits", "truncated": "truncated_calls",
                       "prompt_tokens": "prompt_tokens", "completion_tokens": "completion_tokens",
                       "dollars": "dollars", "failures": "failures", "seconds": "call_seconds"}
"""``LedgerTotals`` field -> its key in a stored summary (and the CLI's JSON). The six that summaries always
held keep their names, so every stored summary still reads; the summary's own ``seconds`` is wall time, so the
ledger's summed call latency is ``call_seconds``. A summary stored before ``failures`` and ``call_seconds``
were kept reads them as 0."""


@dataclass(frozen=True)
class RunEvent:
    """One thing a run reported as it happened (``log(kind, payload)`` of a fit, ``fitted``, ...)."""

    id: int
    run_id: int
    ts: float
    """When (Unix time)."""
    kind: str
    """What happened: ``fitted``, ``hpss_evaluated``, ``tree_started``, ... (each method documents its own)."""
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunEstimate:
    """What a run was expected to ask of its backend when it was made, before any cache hit
    (:func:`judge_engine.runs.cost.expected`): set beside its ledger once it has run."""

    calls: int
    """Requests its method counts (an upper bound: follow-up turns and retries are counted)."""
    prompt_tokens: int
    completion_tokens: int
    dollars: float
    """At the run's prices per 1,000 tokens (0 when none are set)."""
    seconds: float | None = None
    """Wall time (:func:`judge_engine.runs.estimate_duration`); None when this backend's speed is unknown."""
    basis: str = ""
    """Where the tokens per request come from, in words."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunEstimate":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class RunRecord:
    """A stored run: what defines it, where it stands, and (once finished) its summary.

    Read with ``Store.run`` / ``Store.runs``. ``Store.runs`` leaves the
    judge out (it can be large): there ``judge`` is None whatever the run
    holds; ``Store.run`` reads it.
    """

    id: int
    method: str
    dataset: str
    aspect: str
    status: str
    """As stored: ``queued``, ``running``, ``finished``, ``failed``, ``interrupted`` (see
    ``runs.effective_status`` for a run whose worker is gone)."""
    params: dict[str, Any] = field(default_factory=dict)
    """The method's parameters (JSON-native)."""
    split: Split | None = None
    llm: dict[str, Any] = field(default_factory=dict)
    """The backend configuration (``LLMConfig.to_dict``; never an API key)."""
    stage: str = ""
    done: int = 0
    total: int = 0
    message: str = ""
    """Why it failed or was interrupted ("" otherwise)."""
    pid: int | None = None
    """The worker process while it runs."""
    heartbeat: float | None = None
    created: float | None = None
    finished: float | None = None
    judge: dict[str, Any] | None = None
    """The fitted judge (``Judge.to_dict``), None before ``fit`` ended or when not read."""
    summary: RunSummary | None = None
    """None until the run finished."""
    ledger: LedgerTotals = field(default_factory=LedgerTotals)
    """Calls, cache hits, tokens, dollars so far (``llm.Ledger.snapshot``); all 0 before the first call."""
    version: int = 0
    """Bumped by every update (pages key their caches on it)."""
    human_aggregate: str = "imported"
    """The human score the run learned from and is measured against (see :mod:`judge_engine.annotations`)."""
    actor: str = ""
    """Who started it."""
    estimate: RunEstimate | None = None
    """What it was expected to cost when it was made; None for runs made before estimates were kept."""

    @property
    def judge_target(self) -> str:
        """The aspect the judge scores (its own record's name, which a transferred judge may rename)."""
        return str(((self.judge or {}).get("aspect") or {}).get("name") or self.aspect)

    @property
    def judge_state(self) -> dict[str, Any]:
        """What the judge learned (``Judge.state``); empty without a judge."""
        return dict((self.judge or {}).get("state") or {})

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "RunRecord":
        """A run row of the store with its JSON columns decoded (``Store.get_run``/``list_runs``)."""
        values = {k: row[k] for k in cls.__dataclass_fields__ if row.get(k) is not None}
        values["id"] = int(row["id"])
        values["split"] = Split.from_dict(row["split"]) if row.get("split") else None
        values["summary"] = RunSummary.from_dict(row["summary"]) if row.get("summary") else None
        values["ledger"] = LedgerTotals.from_dict(row.get("ledger"))
        values["estimate"] = RunEstimate.from_dict(row["estimate"]) if row.get("estimate") else None
        values["human_aggregate"] = row.get("human_aggregate") or "imported"
        return cls(**values)


# Why a verdict has no score lives beside the record, not in export: scoring, the gate and the exports all
# name it, and export sits above them.
_MISSING_SOURCES = {
    "missing": "no score in the reply",
    "text": "no score in the reply",
    "sampling": "none of the sampled replies gave a score",
    "logprobs": "no score token among the reply's probabilities",
}


def missing_reason(v: Verdict) -> str:
    """Why a verdict has no score ("" when it has one).

    The method's own words (``metadata["missing_reason"]``) when it gave them, else a
    description of where the score was to come from (``metadata["source"]``), else
    "no score in the reply" ("empty reply" when there was no text at all).
    """
    if not v.missing:
        return ""
    reason = v.metadata.get("missing_reason")
    if reason:
        return str(reason)
    source = v.metadata.get("source")
    if source:
        return _MISSING_SOURCES.get(str(source), f"no score could be read (source: {source})")
    return "no score in the reply" if v.raw.strip() else "empty reply"


def jsonable(x: Any) -> Any:
    """``x`` with every non-finite float as None: the reports' JSON rule (NaN written as null, which strict JSON
    readers accept), shared by the trust report and the probes."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
