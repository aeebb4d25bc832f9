"""First look: the pages' "Quick first look" button, timed from the click until its last run ends.

For each method page (HypoEval, HPSS, Active-Critic, HD-Eval) the look a person starts with one click on
the page's defaults is started the way the button starts it: the page's spec (its aspect, the backend's
fast defaults in its form, the split seed) through :func:`judge_engine.runs.quick_spec` and
:func:`judge_engine.runs.launch` with the page's baselines (direct scoring and G-Eval; on the HPSS page
the MT-Bench base prompt, the only comparison its form ticks by default). ``launch`` creates the runs and
starts one worker process per run, as for the person; the wall clock runs from the launch until every
started run has ended (the store polled every ``--poll-s``; a run's end is its ``finished`` stamp when
it has one). Every look gets a new temporary store, so no call is answered from the cache, and,
unless ``JUDGE_WORKBENCH_LLAMA_LOCK`` is set, its own embedded-model lock file, so the look's workers
take turns with each other as they do on a person's machine but not with other processes.

Recorded per look: the estimate the button shows (:func:`judge_engine.runs.estimate_duration` with
:func:`judge_engine.runs.seconds_per_call` of the store: the "typical" speed on a fresh one) and the
estimates of the baselines' specs, the wall seconds, the load average before and after; per run: its
status, its end, its ledger (calls, seconds, tokens) and its test correlations. A look longer than
``--timeout-min`` is cancelled (:func:`cancel_runs`) and recorded as ``timed out``. Seconds per request
two ways: the look's wall time over its requests, and the ledgers' seconds over them (which include the
wait for the model's lock, so they exceed the model's own time when calls queue).

Per method: the median wall seconds over ``--repeats`` (the looks interleaved: methods in order, then in
reverse), min and max, the median estimate of the whole look (method and baselines) and its ratio to the
wall time, and the median number of requests made.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import med, result

if TYPE_CHECKING:  # the engine is imported when a look runs, so that ``--help`` stays quick
    from ..records import Dataset
    from ..runs import Baseline, RunSpec
    from ..store import Store

METHODS_MEASURED = ("hypoeval", "hpss", "active_critic", "hd_eval")
"""The method pages that offer a quick first look, in the app's order."""

DONE_STATUSES = ("finished", "failed", "interrupted")
"""A run in one of these (:func:`judge_engine.runs.effective_status`) makes no more calls."""

TIMED_OUT = "timed out"

ROW_FIELDS = ("method", "repeat", "status", "wall_s", "calls", "estimate_label", "look_estimate_calls",
              "look_estimate_s", "estimate_over_actual", "wall_seconds_per_call", "ledger_seconds_per_call",
              "load_before", "load_after")
"""A look's fields in the printed table; everything else is under ``looks`` in the JSON."""

# --------------------------------------------------------------------------- what each page's button starts
# Copied from the pages (a benchmark imports no page module); tests/test_bench_first_look.py clicks each page's
# button and checks that the bench starts the same runs.

FORM_PARAMETERS = {
    "hypoeval": ("n_init_hypotheses", "top_k", "w_max", "n_refine", "max_bank", "n_selected", "layout", "joint",
                 "weighted", "reasoning"),
    "hpss": ("search", "budget", "validation_size", "fitness_level"),
    "active_critic": ("variant", "n_candidates", "n_demos", "eval_subsample", "max_batches", "max_tokens", "weighted",
                      "no_positive_set"),
    "hd_eval": ("max_layers", "k_child", "k_expand", "aggregator", "layout", "weighted"),
}
"""Each page's ``MAIN_PARAMETERS``: the fields whose values the backend's fast defaults fill (the HPSS page
fills none)."""

FAST_DEFAULTS_IN_FORM = ("hypoeval", "active_critic", "hd_eval")
"""Pages whose main fields start at :func:`judge_engine.runs.fast_defaults` rather than the paper's values."""

PREFERRED_ASPECT = {"active_critic": "overall"}
"""A page that preselects an aspect when the dataset has it (the others start on the dataset's first)."""

HPSS_BASE_PROMPT = "MT-Bench base prompt"
HPSS_SEARCH_ONLY = ("search", "budget", "population", "mutations", "exploit_prob", "temperature", "exploration_weight")
"""Parameters the HPSS page leaves out of the base-prompt comparison (``SEARCH_ONLY`` in pages/hpss.py)."""


@dataclass(frozen=True)
class QuickLook:
    """What one click on a page's "Quick first look" starts."""

    page_spec: RunSpec
    """The :class:`~judge_engine.runs.RunSpec` of the page's form, before the quick look is chosen."""
    baselines: tuple[Baseline, ...]
    """The :class:`~judge_engine.runs.Baseline` runs ``launch`` starts beside it, in the page's order."""
    params: dict[str, Any] | None = None
    """The page's own parameters on top of the quick ones (``params`` of :func:`judge_engine.runs.quick_look`)."""

    @property
    def spec(self) -> RunSpec:
        """The quick spec at the method's largest quick look (what a fast backend is given)."""
        from ..runs import QUICK_TEST_SIZES, QUICK_TRAIN_SIZES, quick_spec

        return quick_spec(self.page_spec, self.params, train_size=QUICK_TRAIN_SIZES[0], test_size=QUICK_TEST_SIZES[0])


def page_aspect(method: str, dataset: Dataset) -> str:
    """The aspect the method's page starts on for ``dataset``."""
    preferred = PREFERRED_ASPECT.get(method)
    return preferred if preferred in dataset.aspect_names else dataset.aspect_names[0]


def _changed(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that differ from the paper defaults (what the start form records)."""
    from ..methods import METHODS

    defaults = METHODS[method].default_params()
    return {k: v for k, v in params.items() if k not in defaults or v != defaults[k]}


def _form_values(method: str, llm) -> dict[str, Any]:
    """The values the page's main fields start with, where they differ from the paper's."""
    from ..runs import fast_defaults

    if method not in FAST_DEFAULTS_IN_FORM:
        return {}
    return {k: v for k, v in fast_defaults(method, llm).items() if k in FORM_PARAMETERS[method]}


def page_look(method: str, dataset: Dataset, aspect: str | None = None, *, seed: int = 0, llm=None) -> QuickLook:
    """The quick look the ``method`` page's button starts on ``dataset`` with the form left as it opens.

    ``aspect`` None is the page's own choice (:func:`page_aspect`). Mirrors ``quick_start`` in
    pages/ui/start_form.py and the ``spec`` each method page builds.
    """
    from ..llm import LLMConfig
    from ..methods import METHODS
    from ..runs import BASELINES, Baseline, RunSpec

    if method not in METHODS_MEASURED:
        raise ValueError(f"no quick first look on a {method!r} page; choose from {', '.join(METHODS_MEASURED)}")
    llm = llm if llm is not None else LLMConfig()
    aspect = aspect or page_aspect(method, dataset)
    dataset.aspect(aspect)  # an aspect the dataset lacks is named here
    quick_params = METHODS[method].quick_params
    form = _form_values(method, llm)
    baselines: tuple[Baseline, ...] = tuple(Baseline(b) for b in BASELINES)
    if method == "hypoeval":
        if form.get("weighted"):  # the page turns reasoning off while weighted scores are ticked
            form["reasoning"] = False
        # the training-items field (its default capped at half the dataset) is passed as n_train too; the look
        # sets n_train to its own training items (runs.quick_spec)
        train_field = min(METHODS[method].default_params()["n_train"], len(dataset.samples) // 2)
        chosen = _changed(method, {**form, "n_train": min(train_field, 1000)})
    elif method == "hpss":
        chosen = _changed(method, METHODS[method].default_params())
        baselines = (_hpss_base_prompt({**chosen, **quick_params}, dataset.aspect(aspect)),)
    elif method == "hd_eval":  # every aspect on layer 1, no guidelines
        chosen = {**_changed(method, form), "aspects": list(dataset.aspect_names), "guidelines": None}
    else:
        chosen = _changed(method, form)
    spec = RunSpec(method=method, dataset=dataset.name, aspect=aspect, params=chosen, seed=seed, llm=llm)
    return QuickLook(spec, baselines)


def choose(store: Store, look: QuickLook) -> tuple[Any, tuple[Baseline, ...]]:
    """The :class:`judge_engine.runs.QuickLook` the page's button chooses on ``store``'s backend speed, and the
    baselines it starts with it (HPSS's base prompt takes the chosen search's settings, as on the page)."""
    from ..runs import quick_look

    chosen = quick_look(store, look.page_spec, look.baselines, look.params)
    if look.page_spec.method != "hpss":
        return chosen, look.baselines
    aspect = store.load_dataset(look.page_spec.dataset).aspect(chosen.spec.aspect)
    return chosen, (_hpss_base_prompt(chosen.spec.params, aspect),)


def _hpss_base_prompt(params: dict[str, Any], aspect) -> Baseline:
    """HPSS with the search's starting strategy fixed and its other settings (``comparisons`` in pages/hpss.py)."""
    from ..methods.hpss import base_strategy, strategy_name
    from ..runs import Baseline

    kept = {k: v for k, v in params.items() if k not in HPSS_SEARCH_ONLY}
    base = strategy_name(base_strategy(aspect, params.get("base_scale")))
    return Baseline("hpss", {**kept, "fixed_strategy": base}, HPSS_BASE_PROMPT)


def baseline_specs(quick: RunSpec, baselines: Sequence[str | Baseline]) -> list[RunSpec]:
    """The specs :func:`judge_engine.runs.launch` creates for ``baselines`` beside ``quick``."""
    from ..runs import Baseline

    return [Baseline.of(b).beside(quick) for b in baselines]


# --------------------------------------------------------------------------- cancelling a look
# A run's worker is a detached ``python -m judge_engine resume RUN --db PATH``; the engine stops it
# (:func:`judge_engine.runs.stop_runs`), the way the pages' Stop button does.

def worker_pids(store: Store, run_id: int) -> list[int]:
    """Processes executing run ``run_id`` of ``store``: those whose command line is its worker's."""
    from ..runs.workers import worker_pids as found

    return found(store, run_id)


def cancel_runs(store: Store, run_ids: Sequence[int], *, reason: str, grace_s: float = 10.0) -> list[int]:
    """Stop the workers of ``run_ids`` and leave no run queued or running; returns the pids signalled.

    Each worker gets SIGINT (``execute_run`` then records ``interrupted`` with its ledger); one still there
    once its run is recorded, or after ``grace_s`` (a worker whose threads wait on a reply does not exit),
    gets SIGKILL. A run left ``queued`` or ``running`` is then set ``interrupted`` with ``reason``, which
    also replaces the interrupt's own message (:func:`judge_engine.runs.stop_runs`).
    """
    from ..runs import stop_runs

    stopped = stop_runs(store, run_ids, reason=reason, grace_s=grace_s)
    return sorted({pid for s in stopped for pid in s.signalled})


# --------------------------------------------------------------------------- one look

def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return [math.nan] * 3


def _log_tail(store, run_id: int, lines: int = 5) -> str:
    path = Path(store.path).parent / "logs" / f"run-{run_id}.log"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _run_record(store, started, title: str, launched: float, ended: float | None) -> dict[str, Any]:
    from ..runs import counted_calls, effective_status

    run = store.run(started.run_id)
    status = effective_status(run)
    if run.finished and status == "finished":
        ended = run.finished  # the worker's own stamp, finer than the polling
    summary = run.summary
    report = (summary.levels.get(summary.level) or summary.correlations or {}) if summary else {}
    ledger = run.ledger
    record = {"run_id": run.id, "role": started.role, "method": run.method, "title": title, "status": status,
              "reused": started.reused, "wall_s": None if ended is None else round(ended - launched, 3),
              "calls": ledger.calls, "counted_calls": counted_calls(run), "cache_hits": ledger.cache_hits,
              "ledger_seconds": round(ledger.seconds, 3),
              "prompt_tokens": ledger.prompt_tokens, "completion_tokens": ledger.completion_tokens,
              "failures": ledger.failures, "level": summary.level if summary else None,
              "pearson": report.get("pearson"), "spearman": report.get("spearman"),
              "n_test": len(run.split.test_ids) if run.split else None, "missing": summary.missing if summary else None,
              "stage": run.stage, "done": run.done, "total": run.total}
    if status == "finished":
        from ..trust import trust_report

        trust = trust_report(store, run.id)
        record["verdict"], record["verdict_reasons"] = trust.verdict, list(trust.reasons)
    error = started.worker_error or (run.message if status != "finished" else "")
    if status != "finished":
        record["error"] = error or _log_tail(store, run.id) or "no reason recorded"
    return record


def measure_look(store: Store, method: str, dataset: Dataset, aspect: str | None = None, *, seed: int = 0, llm=None,
                 timeout_s: float = 1200.0, poll_s: float = 1.0, grace_s: float = 10.0,
                 actor: str = "first-look bench") -> dict[str, Any]:
    """Start the ``method`` page's quick look in ``store`` (``dataset`` imported first, off the clock) and wait
    for all its runs; returns the look's record with its runs under ``runs``."""
    from ..runs import effective_status, launch

    if not store.has_dataset(dataset.name):
        store.save_dataset(dataset)  # what choosing a built-in benchmark on the page does, before any click
    look = page_look(method, dataset, aspect, seed=seed, llm=llm)
    chosen, baselines = choose(store, look)  # what the button shows and starts
    look = QuickLook(look.page_spec, baselines, look.params)
    quick, durations = chosen.spec, chosen.estimate.durations
    shown = chosen.estimate.duration
    estimate_s = chosen.estimate.seconds
    record: dict[str, Any] = {
        "method": method, "aspect": quick.aspect, "llm": quick.llm.label, "params": dict(quick.params),
        "smaller": dict(chosen.smaller), "baselines": [b.title or b.method for b in look.baselines],
        "estimate_calls": durations[0].calls, "estimate_minutes": shown.minutes, "estimate_label": shown.label,
        "estimate_basis": shown.basis, "seconds_per_call_assumed": durations[0].seconds_per_call,
        "baseline_estimates": [{"method": s.method, "calls": d.calls, "minutes": d.minutes, "label": d.label}
                               for s, d in zip(baseline_specs(quick, look.baselines), durations[1:])],
        "look_estimate_calls": chosen.estimate.calls,
        "look_estimate_s": estimate_s, "load_before": _load()}
    launched_wall = time.time()
    started = launch(store, quick, baselines=look.baselines, actor=actor)
    titles = [method] + [b.title or b.method for b in look.baselines]
    ends: dict[int, float] = {}
    deadline = launched_wall + timeout_s
    timed_out = False
    while True:
        now = time.time()
        for s in started:
            if s.run_id not in ends and effective_status(store.run(s.run_id)) in DONE_STATUSES:
                ends[s.run_id] = now
        if len(ends) == len(started):
            break
        if now >= deadline:
            timed_out = True
            cancel_runs(store, [s.run_id for s in started if s.run_id not in ends],
                        reason=f"{TIMED_OUT}: the first-look bench cancelled it after {timeout_s / 60:g} min",
                        grace_s=grace_s)
            break
        time.sleep(min(poll_s, max(0.0, deadline - now)))
    cancelled_at = time.time()
    record["runs"] = [_run_record(store, s, t, launched_wall, ends.get(s.run_id)) for s, t in zip(started, titles)]
    record["load_after"] = _load()
    ends_s = [r["wall_s"] for r in record["runs"]]
    record["wall_s"] = round(cancelled_at - launched_wall, 3) if timed_out else max(ends_s)
    statuses = [r["status"] for r in record["runs"]]
    record["status"] = (TIMED_OUT if timed_out else "finished" if all(s == "finished" for s in statuses)
                        else "ended with " + ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses))
                                                       if s != "finished"))
    calls = sum(r["calls"] for r in record["runs"])
    seconds = sum(r["ledger_seconds"] for r in record["runs"])
    record["calls"] = calls
    # the ledger's seconds include the wait for the model's lock (calls in flight in a run, the other runs'
    # workers): what seconds_per_call would read from this look's history, not the model's time per call
    record["ledger_seconds_per_call"] = round(seconds / calls, 3) if calls else None
    record["wall_seconds_per_call"] = round(record["wall_s"] / calls, 3) if calls else None
    record["estimate_over_actual"] = (estimate_s / record["wall_s"]
                                      if estimate_s is not None and record["wall_s"] and not timed_out else None)
    record["workers_left_after_s"] = wait_for_workers_to_exit(store, [s.run_id for s in started])
    return record


def wait_for_workers_to_exit(store: Store, run_ids: Sequence[int], *, timeout_s: float = 30.0) -> float | None:
    """Wait until no worker of ``run_ids`` is running; the seconds that took (None: some still ran at the timeout).

    A run is done once it is stamped, while its worker process may still be closing its model. The next look's
    estimate counts the threads running when it is made, and HD-Eval's look that followed HypoEval's counted
    those workers as other work (2026-11-29: estimated at x2.35 the time alone beside one spinning process, not
    x2.0): a person's click does not come on the heels of another look's end.
    """
    start = time.time()
    while any(worker_pids(store, run_id) for run_id in run_ids):
        if time.time() - start >= timeout_s:
            return None
        time.sleep(0.2)
    return round(time.time() - start, 2)


# --------------------------------------------------------------------------- the benchmark

def add_arguments(parser) -> None:
    parser.add_argument("--methods", nargs="+", default=list(METHODS_MEASURED), choices=METHODS_MEASURED)
    parser.add_argument("--repeats", type=int, default=3, help="looks per method, each on a new store")
    parser.add_argument("--dataset", default="topical_chat", help="a built-in benchmark")
    parser.add_argument("--aspect", default=None,
                        help="default: the page's own (the dataset's first aspect; 'overall' on Active-Critic)")
    parser.add_argument("--seed", type=int, default=0, help="the split seed (the form's default is 0)")
    parser.add_argument("--timeout-min", type=float, default=20.0,
                        help="a look still running after this long is cancelled and recorded as timed out")
    parser.add_argument("--keep", action="store_true", help="keep the temporary stores (their path is printed)")
    parser.add_argument("--backend", default="llamacpp", help="default: the embedded SmolLM2")
    parser.add_argument("--model", default="")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--poll-s", type=float, default=1.0, help="seconds between reads of the runs' status")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(*, methods: Sequence[str] = METHODS_MEASURED, repeats: int = 3, dataset: str = "topical_chat",
        aspect: str | None = None, seed: int = 0, timeout_min: float = 20.0, keep: bool = False,
        backend: str = "llamacpp", model: str = "", base_url: str = "", poll_s: float = 1.0, grace_s: float = 10.0,
        say: Callable[[str], None] = _say, **_: Any) -> dict[str, Any]:
    """``say`` prints the progress lines (stderr)."""
    import shutil

    from ..data import load_benchmark
    from ..llm import LLMConfig
    from ..llm.llamacpp import LOCK_ENV
    from ..store import Store

    unknown = [m for m in methods if m not in METHODS_MEASURED]
    if unknown:
        raise ValueError(f"no quick first look for {', '.join(unknown)}; choose from {', '.join(METHODS_MEASURED)}")
    if repeats < 1 or timeout_min <= 0:
        raise ValueError("--repeats must be at least 1 and --timeout-min above 0")
    llm = LLMConfig(backend=backend, model=model, base_url=base_url)
    source = load_benchmark(dataset)
    for m in methods:
        page_look(m, source, aspect, seed=seed, llm=llm)  # an unknown aspect fails before any work
    root = Path(tempfile.mkdtemp(prefix="bench-first-look-"))
    own_lock = LOCK_ENV not in os.environ
    looks = []
    try:
        for r in range(repeats):
            for m in (methods if r % 2 == 0 else list(methods)[::-1]):
                folder = root / f"{m}-{r}"
                if own_lock:
                    os.environ[LOCK_ENV] = str(folder / "llamacpp.lock")
                say(f"first-look: {m} repeat {r + 1}/{repeats} starting (store {folder})")
                try:
                    look = measure_look(Store(folder / "workbench.db"), m, source, aspect, seed=seed, llm=llm,
                                        timeout_s=60.0 * timeout_min, poll_s=poll_s, grace_s=grace_s)
                finally:
                    if own_lock:
                        os.environ.pop(LOCK_ENV, None)
                look["repeat"] = r
                looks.append(look)
                say(f"first-look: {m} repeat {r + 1}/{repeats} {look['status']} after {look['wall_s']:.1f} s "
                    f"({look['calls']} requests; estimate {_seconds(look['look_estimate_s'])})")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    rows = [{k: look[k] for k in ROW_FIELDS} for look in looks]
    doc = result("first-look", config={"methods": list(methods), "repeats": repeats, "dataset": dataset,
                                       "aspect": aspect, "seed": seed, "timeout_min": timeout_min,
                                       "llm": llm.label, "poll_s": poll_s,
                                       "lock": "one per look" if own_lock else os.environ[LOCK_ENV],
                                       "stores": str(root) if keep else None},
                 rows=rows, summary=summarize_looks(looks, methods),
                 notes=["wall_s runs from launch until every run of the look has ended; the estimate is the "
                        "page's (fresh store: no timing history) summed over the run and its baselines"])
    doc["looks"] = looks
    return doc


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0f} s"


def summarize_looks(looks: Sequence[dict[str, Any]], methods: Sequence[str]) -> dict[str, Any]:
    """Per method: medians over its looks that ended (a timed-out look's time is only a lower bound)."""
    out: dict[str, Any] = {}
    for m in methods:
        mine = [x for x in looks if x["method"] == m]
        ended = [x for x in mine if x["status"] != TIMED_OUT]
        walls = [x["wall_s"] for x in ended]
        estimates = [x["look_estimate_s"] for x in mine if x["look_estimate_s"] is not None]
        ratios = [x["estimate_over_actual"] for x in ended if x["estimate_over_actual"] is not None]
        out[m] = {"looks": len(mine), "timed_out": len(mine) - len(ended),
                  "failed_runs": sum(1 for x in mine for r in x["runs"] if r["status"] != "finished"),
                  "median_wall_s": med(walls), "min_wall_s": min(walls, default=math.nan),
                  "max_wall_s": max(walls, default=math.nan),
                  "estimate_label": mine[0]["estimate_label"] if mine else None,
                  "median_shown_estimate_s": med([60.0 * x["estimate_minutes"] for x in mine
                                                  if x["estimate_minutes"] is not None]),
                  "median_look_estimate_s": med(estimates),
                  "median_estimate_over_actual": med(ratios),
                  "median_calls": med([x["calls"] for x in ended]),
                  "look_estimate_calls": mine[0]["look_estimate_calls"] if mine else None}
    ended = [x for x in looks if x["status"] != TIMED_OUT]
    ratios = [x["estimate_over_actual"] for x in ended if x["estimate_over_actual"] is not None]
    out["overall"] = {"looks": len(looks), "timed_out": len(looks) - len(ended),
                      "median_wall_s": med([x["wall_s"] for x in ended]),
                      "median_estimate_over_actual": med(ratios),
                      "total_wall_s": sum(x["wall_s"] for x in looks)}
    return out


def _cell(value: Any, fmt: str = "{:.0f}") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return fmt.format(value)


def markdown(doc: dict[str, Any]) -> str:
    """method | median wall (s) | range | estimate shown | estimate/actual | requests."""
    lines = ["| method | median wall (s) | range | estimate shown | estimate/actual | requests |",
             "|---|---:|---|---|---:|---:|"]
    summary = doc["summary"]
    for m in doc["config"]["methods"]:
        s = summary[m]
        walls = f"{_cell(s['min_wall_s'])}-{_cell(s['max_wall_s'])}"
        if s["timed_out"]:
            walls += f" ({s['timed_out']} of {s['looks']} timed out)"
        shown = f"{s['estimate_label'] or 'unknown'} (look {_cell(s['median_look_estimate_s'])} s)"
        lines.append(f"| {m} | {_cell(s['median_wall_s'])} | {walls} | {shown} | "
                     f"{_cell(s['median_estimate_over_actual'], '{:.2f}')} | "
                     f"{_cell(s['median_calls'])} of {_cell(s['look_estimate_calls'])} estimated |")
    overall = summary["overall"]
    lines.append(f"| all | {_cell(overall['median_wall_s'])} | {overall['looks']} looks, "
                 f"{overall['timed_out']} timed out | | {_cell(overall['median_estimate_over_actual'], '{:.2f}')} | |")
    return "\n".join(lines)
