"""How long a run will take on its backend: its counted requests at the backend's speed (earlier runs on it, or the
embedded model's tokens at its rates), with the method's sequential waves and its work between them.

The parts it builds on have their own modules: the counts (:mod:`.counts`), the duration record
(:mod:`.duration`), the embedded model's speed (:mod:`.embedded_speed`), tokens per request
(:mod:`.request_tokens`) and a never-seen server's time from its first requests (:mod:`.first_requests`); their
names are re-exported here, where callers have read them.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..llm import LLMConfig
from ..methods import METHODS, get_method
from ..records import Dataset, RunRecord
from ..store import Store
from .counts import _calls, _method, counted_calls, drawn_sizes, estimate, judged_item_chars, mean_item_chars, same_backend
from .duration import MIN_CALLS_FOR_TIMING, SHORT_RUN_MINUTES, Duration
from .embedded_speed import (EMBEDDED_BASIS, EMBEDDED_GENERATED_TOKENS_PER_S, EMBEDDED_LENGTH_SHARE,
                             EMBEDDED_PROMPT_TOKENS_PER_S, EMBEDDED_REFERENCE_CHARS, EMBEDDED_REPLY_SHARE, EMBEDDED_SECONDS_PER_CALL, EMBEDDED_SECONDS_PER_COUNTED_CALL,
                             EMBEDDED_SPEED_PARAMS, EMBEDDED_STRUCTURED_TOKENS_PER_S, MAX_LOAD_FACTOR, TokenRates,
                             generated_rate, length_factor, load_slowdown, look_slowdown_for, machine_load,
                             slowdown_for)
from .first_requests import RUN_FINISH_SECONDS_ALONE, finish_seconds, timed_by_first_requests
from .model_timing import embedded_rates
from .request_tokens import made_share, new_prompt_share, own_tokens, request_tokens
from .spec import RunSpec, ensure_dataset

__all__ = ["CALIBRATION_RUNS", "EMBEDDED_BASIS", "EMBEDDED_GENERATED_TOKENS_PER_S", "EMBEDDED_LENGTH_SHARE", "EMBEDDED_PROMPT_TOKENS_PER_S",
           "EMBEDDED_REFERENCE_CHARS",
           "EMBEDDED_REPLY_SHARE", "EMBEDDED_SECONDS_PER_CALL", "EMBEDDED_SECONDS_PER_COUNTED_CALL",
           "EMBEDDED_SPEED_PARAMS", "EMBEDDED_STRUCTURED_TOKENS_PER_S", "HISTORY_RUNS", "MAX_LOAD_FACTOR",
           "METHODS", "MIN_CALLS_FOR_TIMING", "RUN_FINISH_SECONDS_ALONE", "SHORT_RUN_MINUTES", "TOKEN_TIMED",
           "Duration", "TokenRates", "call_latency", "counted_calls", "drawn_sizes", "embedded_rates", "estimate",
           "estimate_duration", "finish_seconds", "generated_rate", "get_method", "length_factor",
           "look_slowdown_for", "machine_load", "made_share", "mean_item_chars", "measured_setting", "method_speed",
           "scoring_duration", "seconds_per_call", "slowdown_for", "timed_by_first_requests", "wave_costs"]

TOKEN_TIMED = ("direct", "geval")
"""Methods whose counted calls are the calls they make (one per item, or G-Eval's samples): their time on the
embedded model is their tokens at its throughput. The fitted methods' counts are upper bounds (2-4x), so
their measured seconds per counted call (:data:`~.embedded_speed.EMBEDDED_SECONDS_PER_COUNTED_CALL`) stay."""


def scoring_duration(store: Store, llm: LLMConfig, *, calls: int, prompt_tokens: float, completion_tokens: float,
                     waves: int = 1, new_share: float = 1.0) -> Duration:
    """The wall time of ``calls`` scoring requests of these tokens on ``llm`` (``score``'s estimate): on the
    embedded model its tokens at :func:`embedded_rates`, on a server the seconds per call of earlier runs on it
    (:func:`seconds_per_call`) with the judge's ``waves``; unknown on a server never used from this store."""
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if llm.embedded:
        rates = embedded_rates(store, llm)
        if rates.rough:  # ``new_share``: the prompt tokens the model evaluates (a store's rates already hold it)
            prompt_tokens *= new_share
        per_call = rates.seconds(prompt_tokens, completion_tokens) / max(1, calls)
        return Duration(calls=calls, seconds_per_call=per_call, basis=rates.basis, score_calls=calls)
    per_call, basis = seconds_per_call(store, llm)
    return Duration(calls=calls, seconds_per_call=per_call, basis=basis, score_calls=calls, waves=waves,
                    latency=call_latency(store, llm) or 0.0, parallel=parallel)


HISTORY_RUNS = 5
"""Earlier finished runs of a method on a backend an estimate reads for what its count cannot know."""


def _earlier(store: Store, method: str, llm: LLMConfig) -> list[RunRecord]:
    """The newest :data:`HISTORY_RUNS` finished runs of ``method`` on ``llm``'s backend that made calls."""
    found = []
    for run in store.runs(limit=500):
        if (run.method == method and run.status == "finished" and run.ledger.calls and run.split is not None
                and same_backend(LLMConfig.from_dict(run.llm), llm)):
            found.append(run)
            if len(found) == HISTORY_RUNS:
                break
    return found


def _waves_of(run: RunRecord, events: Sequence[Any]) -> float:
    """The waves a finished run made by its method's count: its steps plus those its replies brought."""
    method = get_method(run.method, METHODS[run.method].params_on(dict(run.params), LLMConfig.from_dict(run.llm)))
    n_train, n_test = len(run.split.train_ids), len(run.split.test_ids)
    waves = method.estimate_waves(n_train, n_test)
    return waves["fit"] + waves["score"] + method.reply_waves(n_train, [(n_train, events)])


def wave_costs(store: Store, spec: RunSpec) -> tuple[float, float]:
    """What the earlier runs of ``spec``'s method on its backend say about waves its count leaves out: the
    waves its replies bring (:meth:`~judge_engine.methods.Method.reply_waves`, HypoEval's refreshes), and the
    seconds per wave they spent beyond their calls and waves (the method's own work between waves: parsing,
    rewards, an aggregator's fit, the events it writes), each at least 0. Without such runs, the waves the
    method expects its replies to bring on a first fit (HypoEval's prior) and no work between waves; both 0 on
    the embedded model, whose seconds per call already hold that work."""
    if spec.llm.backend == "llamacpp":
        return 0.0, 0.0
    earlier = [(run, store.run_events(run.id)) for run in _earlier(store, spec.method, spec.llm)]
    if not earlier:
        return _method(spec).reply_waves(spec.train_size, []), 0.0
    extra = _method(spec).reply_waves(spec.train_size, [(len(r.split.train_ids), ev) for r, ev in earlier])
    residual = waves = 0.0
    for run, events in earlier:
        start = events[0].ts if events else run.created
        if start is None or run.finished is None:
            continue
        parallel = max(1, LLMConfig.from_dict(run.llm).concurrency)
        latency = run.ledger.seconds / run.ledger.calls
        n_waves = _waves_of(run, events)
        modelled = Duration(calls=run.ledger.calls, seconds_per_call=latency / parallel, basis="",
                            waves=round(n_waves), latency=latency, parallel=parallel)
        residual += (run.finished - start) - (modelled.minutes or 0.0) * 60.0
        waves += n_waves
    return extra, max(0.0, residual / waves) if waves else 0.0


def seconds_per_call(store: Store, llm: LLMConfig) -> tuple[float | None, str]:
    """Wall seconds per paid call on this backend, from the ledgers of earlier runs, with where it comes from.

    Calls in flight at once share the wall time, so a ledger's seconds (summed over calls) are divided by the
    backend's concurrency; the embedded model answers one call at a time.
    """
    calls = seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.calls and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger.calls
            seconds += run.ledger.seconds
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if calls >= MIN_CALLS_FOR_TIMING and seconds > 0:
        return seconds / calls / parallel, f"mean of {int(calls)} earlier requests on this backend"
    if llm.backend == "llamacpp" and not llm.model:
        return EMBEDDED_SECONDS_PER_CALL, "typical for the embedded model on 2 CPU cores"
    return None, "no timing on this backend yet (the first run measures it)"


def call_latency(store: Store, llm: LLMConfig) -> float | None:
    """Mean seconds one paid call took on this backend in earlier runs (None before
    :data:`MIN_CALLS_FOR_TIMING` calls): what each sequential wave of a run waits at least."""
    calls = seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.calls and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger.calls
            seconds += run.ledger.seconds
    return seconds / calls if calls >= MIN_CALLS_FOR_TIMING and seconds > 0 else None


def method_speed(store: Store, method: str, llm: LLMConfig, *,
                 made: tuple[float, str] | None = None) -> tuple[float | None, str]:
    """Wall seconds per counted call of ``method`` on this backend, with where it comes from.

    From the store's finished runs of the method on the backend when they count enough calls (their ledger
    seconds over the calls their method counted for them); on the embedded model without such runs, its
    measured default (:data:`EMBEDDED_SECONDS_PER_COUNTED_CALL`); else :func:`seconds_per_call` times the
    share of its counted calls the method makes: ``made`` (a run's own, :func:`made_share`, with why) or the
    method's :attr:`~judge_engine.methods.Method.made_share` (1 where not measured: every counted call taken
    as made, an upper bound).
    """
    counted = seconds = 0.0
    for run in store.runs(limit=500):
        if (run.method == method and run.status == "finished" and run.ledger.calls
                and same_backend(LLMConfig.from_dict(run.llm), llm)):
            counted += counted_calls(run)
            seconds += run.ledger.seconds
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if counted >= MIN_CALLS_FOR_TIMING and seconds > 0:
        return seconds / counted / parallel, f"earlier {METHODS[method].title} runs on this backend"
    if llm.embedded and method in EMBEDDED_SECONDS_PER_COUNTED_CALL:
        return EMBEDDED_SECONDS_PER_COUNTED_CALL[method], EMBEDDED_BASIS
    per_call, basis = seconds_per_call(store, llm)
    share = METHODS[method].made_share
    share, why = made or (share, f"x{share:.2f}: the share of its counted requests a fit makes")
    if per_call is None or share >= 1.0:
        return per_call, basis
    return per_call * share, f"{basis}, {why}"


def measured_setting(spec: RunSpec) -> bool:
    """Whether ``spec`` runs with the settings :data:`EMBEDDED_SECONDS_PER_COUNTED_CALL` were measured at: the
    pages' defaults on the embedded model (:func:`~judge_engine.runs.spec.fast_defaults`: scores read from
    the logprobs with no reasoning before them, the sample first in the prompt). The command line's paper
    defaults reason before each score and put the sample last: a HypoEval run at the pages' quick sizes made
    requests of 1,087 prompt and 82 reply tokens, 8.6 s each, where the measured speed gave 1.2 s. HPSS and
    Active-Critic were measured on looks with shorter replies (:data:`EMBEDDED_SPEED_PARAMS`)."""
    from .spec import fast_defaults

    measured_at = {**fast_defaults(spec.method, spec.llm), **EMBEDDED_SPEED_PARAMS.get(spec.method, {})}
    return all(spec.params.get(name) == value for name, value in measured_at.items())


def _counted(calls: dict[str, int]) -> Duration:
    """The method's counted calls as a :class:`Duration` without a speed (what token sizing reads)."""
    return Duration(calls=int(calls["fit"] + calls["score"]), seconds_per_call=None, basis="",
                    fit_calls=int(calls["fit"]), score_calls=int(calls["score"]))


def _token_seconds(store: Store, dataset: Dataset, spec: RunSpec, calls: dict[str, int]) -> tuple[float, str]:
    """Seconds per counted call of ``spec`` on the embedded model from its tokens (:func:`~.cost.request_tokens`:
    the store's earlier runs of the method, else its own prompts) at the model's rates (:func:`embedded_rates`)."""
    per_prompt, per_completion, _ = request_tokens(store, dataset, spec, _counted(calls))
    return _at_rates(dataset, spec, calls, per_prompt, per_completion, embedded_rates(store, spec.llm))


def _own_token_seconds(dataset: Dataset, spec: RunSpec, calls: dict[str, int]) -> float:
    """Seconds per counted call of ``spec`` from its own prompts rendered (:func:`~.cost.own_tokens`) at the
    embedded model's speed alone, whatever a store and the machine hold: what
    :func:`_calibrated_token_seconds` compares runs by."""
    per_prompt, per_completion, _ = own_tokens(dataset, spec, _counted(calls))
    alone = TokenRates(EMBEDDED_PROMPT_TOKENS_PER_S, generated_rate(spec.llm), "its speed alone")
    return _at_rates(dataset, spec, calls, per_prompt, per_completion, alone)[0]


def _at_rates(dataset: Dataset, spec: RunSpec, calls: dict[str, int], per_prompt: float, per_completion: float,
              rates: TokenRates) -> tuple[float, str]:
    """Seconds per counted call for these tokens per request at ``rates``: of the prompt tokens, those it does
    not repeat from earlier prompts (a store's own rates already hold that), and the share of its counted calls
    the method makes (:attr:`~judge_engine.methods.Method.made_share`)."""
    basis = rates.basis
    if rates.rough:
        share = new_prompt_share(dataset, spec, _counted(calls))
        per_prompt *= share
        if share < 0.95:
            basis = f"{basis}; {share:.0%} of the prompt tokens new to the model (the rest repeat earlier prompts)"
    made, why = made_share(dataset, spec, calls)
    if why:
        basis = f"{basis}; {why}"
    return made * rates.seconds(per_prompt, per_completion), f"its tokens at {basis}"


CALIBRATION_RUNS = 3
"""Earlier runs of a method whose times calibrate its token estimate on the embedded model (the latest)."""


def _calibrated_token_seconds(store: Store, dataset: Dataset, spec: RunSpec,
                              calls: dict[str, int]) -> tuple[float, str] | None:
    """Seconds per counted call of ``spec`` from its own tokens alone (:func:`_own_token_seconds`), times what the
    method's earlier runs on this backend took over the same estimate of theirs; None without such runs.

    Their seconds per counted call alone cannot see the items: a second HD-Eval run on SmolLM2 (4 Topical-Chat
    items, one layer) drew longer items than the first and took 107.5 s where the first's speed gave 66.7 s;
    its own tokens gave 84.4 s, times the first run's 71.0 s of requests over its own 59.2 s: 101.3 s (2026-11-29)."""
    took = alone = 0.0
    used = 0
    for run in store.runs(limit=200):
        if used >= CALIBRATION_RUNS:
            break
        if (run.method != spec.method or run.status != "finished" or not run.ledger.calls or run.split is None
                or not same_backend(LLMConfig.from_dict(run.llm), spec.llm)):
            continue
        earlier = RunSpec(method=run.method, dataset=run.dataset, aspect=run.aspect, params=dict(run.params),
                          train_size=len(run.split.train_ids), test_size=len(run.split.test_ids),
                          seed=run.split.seed, llm=spec.llm)
        try:
            its_dataset = dataset if run.dataset == dataset.name else ensure_dataset(store, run.dataset)
            its_calls = _calls(its_dataset, earlier)
            per_call = _own_token_seconds(its_dataset, earlier, its_calls)
        except (ValueError, KeyError):  # its dataset or aspect is gone: it cannot be compared
            continue
        took += run.ledger.seconds
        alone += per_call * (its_calls["fit"] + its_calls["score"])
        used += 1
    if not used or alone <= 0 or took <= 0:
        return None
    per_call = _own_token_seconds(dataset, spec, calls)
    factor = took / alone
    return per_call * factor, (f"its tokens at the embedded model's speed alone, x{factor:.2f}: what {used} earlier "
                               f"{METHODS[spec.method].title} run(s) on this backend took over the same estimate")


def estimate_duration(store: Store, spec: RunSpec, *, speed: tuple[float | None, str] | None = None,
                      dataset: Dataset | None = None) -> Duration:
    """Requests and minutes ``spec`` will take on its backend before any cache hit.

    ``speed`` is :func:`method_speed` when the caller already has it (a page drawing several estimates). The
    embedded model's measured default is scaled to the dataset's item length (:func:`length_factor`); a
    speed from the store's own runs is taken as it is. ``dataset``: ``spec``'s, when the caller holds it already
    (:func:`~judge_engine.runs.create_run` keeps the estimate with the run and loads the dataset once).
    """
    dataset = dataset or ensure_dataset(store, spec.dataset)
    spec = drawn_sizes(dataset, spec)
    calls = _calls(dataset, spec)
    if speed is None:  # on a server with no run of the method yet, its own rendered share of the count
        made = None if spec.llm.embedded else made_share(dataset, spec, calls)
        speed = method_speed(store, spec.method, spec.llm, made=made)
    per_call, basis = speed
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    by_tokens = spec.method in TOKEN_TIMED or not measured_setting(spec)
    if per_call is not None and basis == EMBEDDED_BASIS and not by_tokens:
        factor = length_factor(spec.method, judged_item_chars(dataset, spec))
        if abs(factor - 1.0) >= 0.05:
            per_call, basis = per_call * factor, f"{EMBEDDED_BASIS}, x{factor:.2f} for this dataset's item length"
        slower, seen = load_slowdown(look=True)  # measured alone: slower beside other work
        per_call, basis = per_call * slower, f"{basis}, x{slower:.1f} for the machine now ({seen})"
    elif per_call is not None and basis == EMBEDDED_BASIS:
        per_call, basis = _token_seconds(store, dataset, spec, calls)
    elif per_call is not None and spec.llm.embedded and by_tokens and spec.method not in TOKEN_TIMED:
        per_call, basis = _calibrated_token_seconds(store, dataset, spec, calls) or (per_call, basis)
    waves = _method(spec).estimate_waves(spec.train_size, n_test)
    extra, overhead = wave_costs(store, spec)
    n_waves = round(waves["fit"] + waves["score"] + extra)
    return Duration(calls=int(calls["fit"] + calls["score"]), seconds_per_call=per_call, basis=basis,
                    fit_calls=int(calls["fit"]), score_calls=int(calls["score"]), waves=n_waves,
                    latency=call_latency(store, spec.llm) or 0.0,
                    parallel=1 if spec.llm.backend == "llamacpp" else max(1, spec.llm.concurrency),
                    wave_overhead=overhead)
