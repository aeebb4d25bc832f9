"""Runs: configure, start outside the UI, execute resumably, summarise.

A run is a row in the store. :func:`create_run` fixes everything about it
(method and parameters, dataset, aspect, split, backend); :func:`execute_run`
does the work and can be called again on a killed or failed run: the fitted
judge is kept once learned, scored samples are skipped, and every LLM call
already made is answered by the persistent cache, so nothing is paid twice.
:func:`start_run` executes a run in a detached process so a browser refresh
or a page switch never stops it; the page only polls the store.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from . import annotations, data, metrics
from .llm import BackendUnavailable, LLMConfig, Ledger, make_llm
from .llm.client import LLM
from .methods import FitContext, Judge, get_method
from .records import Dataset, RunRecord, RunSummary, RunWarning, Split, Verdict
from .store import Store

HEARTBEAT_STALE_S = 90.0
"""A queued run that no worker picked up within this many seconds is shown as interrupted."""

RunProgress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run; a page builds one from its form."""

    method: str
    dataset: str
    aspect: str
    params: dict[str, Any] = field(default_factory=dict)
    """Method parameters that differ from the paper defaults."""
    train_size: int = 30
    test_size: int | None = 40
    """None = every item not in train."""
    seed: int = 0
    llm: LLMConfig = field(default_factory=LLMConfig)


def ensure_dataset(store: Store, name: str) -> Dataset:
    """The stored dataset ``name``; a built-in benchmark is imported on first use."""
    if store.has_dataset(name):
        return store.load_dataset(name)
    if name in data.BENCHMARKS:
        dataset = data.load_benchmark(name)
        store.save_dataset(dataset)
        return dataset
    raise ValueError(f"no dataset named {name!r}: import it first (built-ins: {', '.join(data.BENCHMARKS)})")


def human_dataset(store: Store, name: str, aggregate: str | None = None) -> Dataset:
    """Dataset ``name`` with the human score of ``aggregate`` (default: the dataset's chosen one).

    ``imported`` gives the dataset as it was imported; any other aggregate is
    computed from the stored labels (see :mod:`judge_engine.annotations`).
    """
    dataset = ensure_dataset(store, name) if not store.has_dataset(name) else store.load_dataset(name)
    chosen = annotations.parse_aggregate(aggregate if aggregate is not None else store.human_aggregate(name))
    if chosen.kind == "imported":
        return dataset
    return annotations.apply_aggregate(dataset, store.annotations(name), chosen, store.experts())


def create_run(store: Store, spec: RunSpec, *, judge: Judge | None = None, split: Split | None = None,
               actor: str = "") -> int:
    """Validate ``spec``, make its split and store a queued run; returns the run id.

    With ``judge`` (e.g. one a person edited after an earlier run), the run
    skips ``fit`` and only scores the test split with that judge; calls
    whose prompts did not change are answered by the cache. With ``split``
    (e.g. another run's ``store.run(other).split``) the run uses
    exactly those train and test items instead of drawing a split from the
    spec's sizes and seed, so baselines and re-scorings meet the same items.

    The run records the dataset's human aggregate at this moment (the human
    score it learns from and is meta-evaluated against) and ``actor``, who
    started it. With an aggregate other than ``imported``, a drawn split only
    takes items that have a score under it.
    """
    if not store.has_dataset(spec.dataset):
        ensure_dataset(store, spec.dataset)
    aggregate = str(annotations.parse_aggregate(store.human_aggregate(spec.dataset)))
    dataset = human_dataset(store, spec.dataset, aggregate)
    aspect = dataset.aspect(spec.aspect)
    method = get_method(spec.method, spec.params)
    method._validate_params()
    if judge is not None and (judge.method != spec.method or judge.aspect.get("name") != aspect.name):
        raise ValueError(f"the judge is a {judge.method} judge of {judge.aspect.get('name')!r}, "
                         f"not {spec.method} of {aspect.name!r}")
    if split is None:
        pool = dataset if aggregate == "imported" else annotations.with_human(dataset, aspect.name)
        split = data.make_split(pool, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
    else:
        known = set(dataset.by_id())
        unknown = [i for i in (*split.train_ids, *split.test_ids) if i not in known]
        if split.dataset != dataset.name or unknown:
            raise ValueError(f"the split is not one of dataset {dataset.name!r} "
                             f"({len(unknown)} unknown item ids)" if unknown else
                             f"the split belongs to dataset {split.dataset!r}, not {dataset.name!r}")
    store.save_split(split)
    return store.create_run(method=spec.method, params=judge.params if judge else method.get_params(),
                            dataset=dataset.name, aspect=aspect.name, split=split, llm=spec.llm.to_dict(),
                            judge=judge.to_dict() if judge else None, human_aggregate=aggregate, actor=actor)


def estimate(store: Store, spec: RunSpec) -> dict[str, int]:
    """LLM calls the run will request before any cache hit."""
    dataset = ensure_dataset(store, spec.dataset)
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    return get_method(spec.method, spec.params).estimate_calls(spec.train_size, n_test)


def execute_run(store: Store, run_id: int, *, llm: LLM | None = None, api_key: str | None = None,
                progress: RunProgress | None = None, chunk_size: int | None = None) -> RunSummary:
    """Do (or continue) the work of run ``run_id``; returns its summary.

    Safe to call again after a crash: the judge learned by ``fit`` is kept
    with the run, samples already scored are skipped, and cached calls cost
    nothing. The ledger adds up across resumes.
    """
    run = store.run(run_id)
    started = time.time()
    config = LLMConfig.from_dict(run.llm)
    ledger = Ledger(price_prompt_per_1k=config.price_prompt_per_1k,
                    price_completion_per_1k=config.price_completion_per_1k, start=run.ledger or None)
    store.update_run(run_id, status="running", pid=os.getpid(), heartbeat=time.time(), message="", stage="starting")

    def report(done: int, total: int, stage: str) -> None:
        store.heartbeat(run_id, done=done, total=total, stage=stage, ledger=ledger.snapshot())
        if progress:
            progress(done, total, stage)

    try:
        if llm is None:
            llm = make_llm(config, store=store, api_key=api_key, ledger=ledger)
        else:
            llm.ledger = ledger
        # the human score recorded with the run, whatever the dataset's choice is now
        dataset = human_dataset(store, run.dataset, run.human_aggregate)
        if run.split is None:
            raise ValueError(f"run {run_id} has no split")
        split = run.split
        aspect = dataset.aspect(run.aspect)
        if run.judge is None:
            # a fit interrupted before it finished starts over (its calls come back from the cache) and logs
            # every event again: the interrupted attempt's events would show each step twice
            store.clear_events(run_id)
            method = get_method(run.method, run.params)
            context = FitContext.of(dataset, llm=llm, progress=lambda d, t, s: report(d, t, f"fit: {s}"),
                                    log=lambda kind, payload: store.add_event(run_id, kind, payload))
            judge = method.fit(dataset.subset(list(split.train_ids)), aspect, context)
            store.update_run(run_id, judge=judge.to_dict(), ledger=ledger.snapshot())
            # the ledger at this point is what fitting cost (the comparison splits fit and scoring cost)
            store.add_event(run_id, "fitted", {"method": run.method, "ledger": ledger.snapshot()})
        else:
            judge = Judge.from_dict(run.judge)
        test = dataset.subset(list(split.test_ids))
        scored = store.scored_ids(run_id)
        remaining = [s for s in test if s.id not in scored]
        done = len(test) - len(remaining)
        report(done, len(test), "scoring")
        # Verdicts are saved chunk by chunk (what a crash can lose); by default a chunk keeps every
        # request slot of the backend busy.
        step = chunk_size or max(8, 2 * config.concurrency)
        for start in range(0, len(remaining), step):
            chunk = remaining[start:start + step]
            verdicts = judge.score(chunk, llm=llm,
                                   progress=lambda d, t, s, base=done: report(base + min(d, len(chunk)), len(test),
                                                                             "scoring"))
            store.save_verdicts(run_id, verdicts)
            done += len(chunk)
            report(done, len(test), "scoring")
        earlier = run.summary.seconds if run.summary else 0.0  # time spent before a resume
        summary = summarize(dataset, aspect.name, store.load_verdicts(run_id), ledger=ledger.snapshot(),
                            seconds=time.time() - started + earlier, judge=judge)
        store.update_run(run_id, status="finished", stage="done", finished=time.time(), summary=summary,
                         ledger=ledger.snapshot(), message="")
        return summary
    except BackendUnavailable as exc:
        store.update_run(run_id, status="interrupted", message=f"backend unavailable: {exc}", ledger=ledger.snapshot())
        raise
    except BaseException as exc:
        store.update_run(run_id, status="failed" if isinstance(exc, Exception) else "interrupted",
                         message=f"{type(exc).__name__}: {exc}", ledger=ledger.snapshot())
        raise


NO_JUDGE_PREFIX = "ValueError: "
"""How :func:`execute_run` records a fit that raised ``ValueError``: the method decided there is no judge (no
candidate agrees with the humans, nothing usable was generated)."""


def ended_without_judge(run: RunRecord) -> str:
    """Why a failed run's method found no judge ("" for any other run). A resume would replay the same cached
    calls to the same end, so the pages offer none."""
    if run.status == "failed" and run.message.startswith(NO_JUDGE_PREFIX):
        return run.message.removeprefix(NO_JUDGE_PREFIX)
    return ""


def summarize(dataset: Dataset, aspect: str, verdicts: list[Verdict], *, ledger: dict[str, Any],
              seconds: float, n_bootstrap: int = 1000, judge: Judge | None = None) -> RunSummary:
    """Meta-evaluation of a run's verdicts at every level that applies, its cost, and its warnings.

    ``missing`` counts every test item without a score; ``parse_failures``
    only those whose reply gave no readable score (an item the judge never
    asked the model about, marked ``metadata["source"] == "not_asked"``, is
    missing but not a parse failure). ``warnings`` (see :func:`run_warnings`)
    says in words what the figures alone do not.
    """
    index = dataset.by_id()
    samples = [index[v.sample_id] for v in verdicts]
    human = [s.human.get(aspect, math.nan) for s in samples]
    pred = [v.score for v in verdicts]
    groups = [s.group_id for s in samples]
    systems = [s.system_id for s in samples]
    levels: dict[str, Any] = {}
    for level in metrics.LEVELS:
        if level == "system" and len(set(systems)) < 3:
            continue
        if level == "group" and len(set(groups)) == len(groups):
            continue
        levels[level] = metrics.meta_evaluate(human, pred, level=level, groups=groups, systems=systems,
                                              n_bootstrap=n_bootstrap).to_dict()
    natural = dataset.natural_level if dataset.natural_level in levels else "sample"
    n_missing = sum(1 for v in verdicts if v.missing)
    n_unparsed = sum(1 for v in verdicts if v.missing and v.metadata.get("source") != "not_asked")
    return RunSummary(level=natural, correlations=levels.get(natural), levels=levels, n=len(verdicts),
                      missing=n_missing, parse_failures=n_unparsed,
                      parse_failure_rate=round(n_unparsed / len(verdicts), 4) if verdicts else 0.0,
                      warnings=tuple(run_warnings(verdicts, ledger=ledger, judge=judge)),
                      calls=int(ledger.get("calls", 0)), cache_hits=int(ledger.get("cache_hits", 0)),
                      truncated_calls=int(ledger.get("truncated", 0)),
                      prompt_tokens=int(ledger.get("prompt_tokens", 0)),
                      completion_tokens=int(ledger.get("completion_tokens", 0)),
                      dollars=float(ledger.get("dollars", 0.0)), seconds=round(seconds, 2))


def run_warnings(verdicts: list[Verdict], *, ledger: dict[str, Any], judge: Judge | None = None) -> list[RunWarning]:
    """What a person must know about a run before trusting its figures.

    The judge's own fit-time warnings come first (an empty hypothesis bank, no
    criteria inferred, a decomposition without children: see
    :func:`judge_engine.methods.judge_warning`), then the generated rubric
    entries the checks refused (``Judge.state["rejected"]``, see
    :mod:`judge_engine.rubric_checks`) and those used with flags
    (``Judge.state["flagged"]``), then what the verdicts show:
    explanations not shown because they were empty or repetitive
    (``metadata["explanation_rejected"]``), scores read from the
    alternatives of a reply that stated none, criteria
    imputed, missing scores with their most common reasons, and prompts cut to
    fit the model's context.
    """
    out = [dict(w) for w in ((judge.state.get("warnings") if judge else None) or [])]
    rejected = (judge.state.get("rejected") if judge else None) or []
    if rejected:
        rules: dict[str, int] = {}
        for r in rejected:
            rules[r.get("rule", "")] = rules.get(r.get("rule", ""), 0) + 1
        listed = ", ".join(f"{k.replace('_', ' ')} {c}" for k, c in sorted(rules.items(), key=lambda kv: -kv[1]))
        out.append({"code": "rubric_rejected", "count": len(rejected),
                    "message": f"{len(rejected)} generated rubric entries were rejected before use ({listed}); "
                               "they are kept with their reasons on the method's page"})
    flagged = (judge.state.get("flagged") if judge else None) or []
    if flagged:
        rules = {}
        for f in flagged:
            for flag in f.get("flags") or []:
                rules[flag.get("rule", "")] = rules.get(flag.get("rule", ""), 0) + 1
        listed = ", ".join(f"{k.replace('_', ' ')} {c}" for k, c in sorted(rules.items(), key=lambda kv: -kv[1]))
        out.append({"code": "rubric_flagged", "count": len(flagged),
                    "message": f"{len(flagged)} generated rubric entries were used with flags ({listed}); read them "
                               "beside the entries on the method's page (selection by training correlation kept "
                               "or dropped them as for any entry)"})
    n = len(verdicts)
    refused = sum(1 for v in verdicts if v.metadata.get("explanation_rejected"))
    if refused:
        out.append({"code": "explanations_rejected", "count": refused,
                    "message": f"{refused} of {n} judge explanations were empty or one line repeated over and over; "
                               "they are not shown as explanations (the replies are kept in raw)"})
    from_alternatives = sum(1 for v in verdicts if v.metadata.get("source") == "logprobs_first_position")
    if from_alternatives:
        out.append({"code": "scores_from_alternatives", "count": from_alternatives,
                    "message": f"{from_alternatives} of {n} scores were read from the probabilities of a reply that "
                               "stated no number (the scale's tokens among its first position's alternatives)"})
    imputed = [int(v.metadata.get("imputed_criteria") or 0) for v in verdicts]
    if any(imputed):
        out.append({"code": "criteria_imputed", "count": sum(imputed),
                    "message": f"{sum(imputed)} criterion scores were imputed (not read) in "
                               f"{sum(1 for k in imputed if k)} of {n} items"})
    missing = [v for v in verdicts if v.missing]
    if missing:
        reasons: dict[str, int] = {}
        for v in missing:
            why = str(v.metadata.get("missing_reason") or ("no readable score in the reply" if (v.raw or "").strip()
                                                          else "no reply"))
            reasons[why] = reasons.get(why, 0) + 1
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
        listed = "; ".join(f"{k} ({c})" for k, c in top)
        out.append({"code": "scores_missing", "count": len(missing),
                    "message": f"{len(missing)} of {n} items have no score: {listed}"})
    truncated = int(ledger.get("truncated", 0) or 0)
    if truncated:
        out.append({"code": "prompts_cut", "count": truncated,
                    "message": f"{truncated} prompts were cut to fit the model's context window"})
    return [RunWarning.from_dict(w) for w in out]


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (finished child not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def effective_status(run: RunRecord | dict[str, Any]) -> str:
    """The stored status, except that a 'running' run whose worker is gone is 'interrupted'.

    ``run`` may still be a store row (``Store.get_run``): the pages read those until they move to ``Store.run``.
    """
    run = RunRecord.of(run)
    status = run.status
    if status == "running" and not _pid_alive(run.pid):
        return "interrupted"
    if status == "queued" and time.time() - (run.heartbeat or 0) > HEARTBEAT_STALE_S:
        return "interrupted"  # queued but no worker ever picked it up
    return status


def start_run(db_path: str | Path, run_id: int, *, api_key: str | None = None,
              log_dir: str | Path | None = None) -> subprocess.Popen:
    """Execute run ``run_id`` in a detached worker process (``python -m judge_engine resume``).

    The API key, if any, reaches the worker through its environment only; it
    is not written to the database, the command line or the log.
    """
    db_path = Path(db_path)
    run = Store(db_path).run(run_id)
    env = dict(os.environ)
    if api_key:
        env[LLMConfig.from_dict(run.llm).api_key_env] = api_key
    log_dir = Path(log_dir) if log_dir else db_path.parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / f"run-{run_id}.log", "ab")
    repo = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "judge_engine", "resume", str(run_id), "--db", str(db_path),
                             "--quiet"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, cwd=str(repo), start_new_session=True)
    log.close()  # the worker holds its own copy
    # reap the worker when it ends, so a long-lived app process does not collect zombies
    threading.Thread(target=proc.wait, name=f"reap-run-{run_id}", daemon=True).start()
    return proc


# --------------------------------------------------------------------------- starting runs and their baselines

BASELINES = ("direct", "geval")
"""The methods every paper compares against; a method's run can bring them on its own split."""


@dataclass(frozen=True)
class Baseline:
    """A comparison run on another run's split: a method with its parameters (paper defaults when empty)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    """How pages name it (the method's title when empty)."""


@dataclass(frozen=True)
class Started:
    """A run :func:`launch` created, and whether its worker is running."""

    run_id: int
    method: str
    role: str
    """``run``, or ``baseline`` for a comparison run on the run's split."""
    worker_error: str = ""
    """Why the worker could not start (the run exists and can be resumed); empty when it runs."""
    reused: bool = False
    """A baseline that already existed on this split and backend (nothing new started)."""


def same_backend(a: LLMConfig, b: LLMConfig) -> bool:
    """The same model behind the same endpoint (settings such as concurrency do not change scores)."""
    return (a.backend, a.model, a.base_url) == (b.backend, b.model, b.base_url)


def runs_on_same_split(store: Store, run: RunRecord | dict[str, Any], *, methods: tuple[str, ...] | None = None,
                       include_failed: bool = False) -> list[RunRecord]:
    """Other runs scored on exactly ``run``'s test items, with the same human aggregate and backend.

    Only these are comparable with ``run`` number for number: the same items,
    the same human score and the same model. Newest first; ``methods``
    filters by method; failed and cancelled runs are left out unless asked.
    """
    run = RunRecord.of(run)
    test_ids = run.split.test_ids if run.split else None
    llm = LLMConfig.from_dict(run.llm)
    out = []
    for other in store.runs(dataset=run.dataset, limit=1000):
        if other.id == run.id or other.aspect != run.aspect:
            continue
        if methods is not None and other.method not in methods:
            continue
        if not include_failed and other.status in ("failed", "cancelled"):
            continue
        if ((other.split.test_ids if other.split else None) != test_ids
                or other.human_aggregate != run.human_aggregate
                or not same_backend(LLMConfig.from_dict(other.llm), llm)):
            continue
        out.append(other)
    return out


def launch(store: Store, spec: RunSpec, *, judge: Judge | None = None, split: Split | None = None,
           baselines: Sequence[str | Baseline] = (), actor: str = "", api_key: str | None = None,
           log_dir: str | Path | None = None) -> list[Started]:
    """Create a run and start its worker, with ``baselines`` on exactly its split: the one way pages start work.

    A baseline (paper-default parameters) that already exists on the same
    split, human score and backend is reused, not started again. A spec the
    engine refuses raises ValueError (or NotFound) before anything is
    created; a worker that cannot start leaves its run created, to be
    resumed, and says why in :attr:`Started.worker_error`.
    """
    run_id = create_run(store, spec, judge=judge, split=split, actor=actor)
    started = [_start_worker(store, run_id, spec.method, "run", api_key=api_key, log_dir=log_dir)]
    if not baselines:
        return started
    wanted = [b if isinstance(b, Baseline) else Baseline(b) for b in baselines]
    run = store.run(run_id)
    existing = runs_on_same_split(store, run, methods=tuple({b.method for b in wanted}))
    for b in wanted:
        params = get_method(b.method, b.params).get_params()
        found = next((r for r in existing if r.method == b.method and r.params == params), None)
        if found is not None:
            started.append(Started(found.id, b.method, "baseline", reused=True))
            continue
        baseline = RunSpec(method=b.method, dataset=spec.dataset, aspect=spec.aspect, params=dict(b.params),
                           train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed, llm=spec.llm)
        base_id = create_run(store, baseline, split=run.split, actor=actor)
        started.append(_start_worker(store, base_id, b.method, "baseline", api_key=api_key, log_dir=log_dir))
    return started


def _start_worker(store: Store, run_id: int, method: str, role: str, *, api_key: str | None,
                  log_dir: str | Path | None) -> Started:
    try:
        start_run(store.path, run_id, api_key=api_key, log_dir=log_dir)
    except OSError as exc:
        return Started(run_id, method, role, worker_error=str(exc))
    return Started(run_id, method, role)


# --------------------------------------------------------------------------- how long a run will take

EMBEDDED_SECONDS_PER_CALL = 3.0
"""Seconds per call of the embedded SmolLM2 when this store has no history yet: the median of the alignment
runs on 2 shared CPU cores (2026-11-24, prompts of 300-1,500 tokens, 0.4-7 s per call)."""

MIN_CALLS_FOR_TIMING = 20
"""Finished calls on a backend before their mean stands for it."""


@dataclass(frozen=True)
class Duration:
    """An estimate of a run's wall time before cache hits."""

    calls: int
    """Requests to fit and to score, together."""
    seconds_per_call: float | None
    """None when nothing is known about this backend's speed yet."""
    basis: str
    """Where the speed comes from, in words."""
    fit_calls: int = 0
    score_calls: int = 0

    @property
    def minutes(self) -> float | None:
        return None if self.seconds_per_call is None else self.calls * self.seconds_per_call / 60.0

    def describe(self) -> str:
        """E.g. ``about 14 min (3.0 s per call: ...)``."""
        if self.minutes is None:
            return f"{self.calls} requests; {self.basis}"
        shown = f"{self.minutes:.0f} min" if self.minutes >= 1.5 else "under 2 min"
        return f"about {shown} ({self.seconds_per_call:.1f} s per request: {self.basis})"


def seconds_per_call(store: Store, llm: LLMConfig) -> tuple[float | None, str]:
    """Wall seconds per paid call on this backend, from the ledgers of earlier runs, with where it comes from.

    Calls in flight at once share the wall time, so a ledger's seconds (summed over calls) are divided by the
    backend's concurrency; the embedded model answers one call at a time.
    """
    calls = seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.get("calls") and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger["calls"]
            seconds += float(run.ledger.get("seconds") or 0.0)
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if calls >= MIN_CALLS_FOR_TIMING and seconds > 0:
        return seconds / calls / parallel, f"mean of {int(calls)} earlier requests on this backend"
    if llm.backend == "llamacpp" and not llm.model:
        return EMBEDDED_SECONDS_PER_CALL, "typical for the embedded model on 2 CPU cores"
    return None, "no timing on this backend yet (the first run measures it)"


def estimate_duration(store: Store, spec: RunSpec, *,
                      speed: tuple[float | None, str] | None = None) -> Duration:
    """Requests and minutes ``spec`` will take on its backend before any cache hit.

    ``speed`` is :func:`seconds_per_call` when the caller already has it (a page drawing several estimates).
    """
    calls = estimate(store, spec)
    per_call, basis = speed if speed is not None else seconds_per_call(store, spec.llm)
    return Duration(calls=int(calls["fit"] + calls["score"]), seconds_per_call=per_call, basis=basis,
                    fit_calls=int(calls["fit"]), score_calls=int(calls["score"]))
