"""A run on a server never used from this store: its time from its own first requests, and the seconds it takes
after its last answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..llm import LLMConfig
from ..methods import METHODS, get_method
from ..records import RunEstimate, RunRecord
from . import embedded_speed
from .duration import MIN_CALLS_FOR_TIMING, Duration

RUN_FINISH_SECONDS_ALONE = 0.75
"""Seconds a run on a server takes after its last answer, alone on the machine: ``summarize``'s bootstrap of the
metrics (about 900 resamples of scipy's correlations, one thread). Measured 2026-12-07 23:45-23:50 UTC with 32
threads of other processes running on 2 cores (load 35-42; one thread's share of the cores 1/16.5) on the stub
server, SummEval, 30 + 20 items: 6.7-23.9 s after the last answer (37.8 s under a profiler, 37.7 s of it
``summarize``), so 0.4-1.4 s alone; not modelled before, direct and G-Eval runs of 24-25 requests were
estimated at 0.15-0.57 of their time."""


WAVE_WORK_SECONDS = {"hd_eval": 3.8, "hpss": 0.7, "hypoeval": 0.7, "active_critic": 0.57}
"""Seconds of a method's own work per wave beyond its calls (parsing, rewards, an aggregator's fit, the events it
writes, the client's threads), for a run on a server no earlier run of it timed (:func:`~.estimates.wave_costs`
reads them from earlier runs when there are some). Measured 2026-12-08 02:13-02:55 UTC (``estimate-waves
--never-seen --n-train 30 --n-test 20``, SummEval coherence and HANNA engagement; load 14-42 on 2 cores): the
run's wall from its first event to its end less its calls and waves at their mean latency, per wave: HD-Eval
3.2-4.6 s (5 waves, its ``lr`` aggregator's fits and permutation importances between them), HPSS 0.52-1.21,
HypoEval 0.55-1.12 (49-54 waves), Active-Critic 0.55-0.58. They did not grow with the load over that span
(HypoEval 0.55-1.12 at load 14-25, 0.64-0.76 at 33-40), and scaled by one thread's share of the cores they put
HypoEval at 1.6-1.85x its time at load 31-34; so they are taken as they are. Not measured on a quiet machine,
where they are likely smaller: there a first run's time errs high by up to these seconds per wave. Not modelled
before: a HypoEval run at 32 in flight was estimated at 0.39 of its time, Active-Critic at 0.59."""


def _alone_factor(llm: LLMConfig) -> float:
    """How much slower than alone one thread of this process runs now: its share of the cores among the other
    processes' running threads (:func:`~.embedded_speed.machine_load`)."""
    cores, others, _ = embedded_speed.machine_load()
    return max(1.0, (others + 1) / max(1, cores))


def wave_work_seconds(method: str, llm: LLMConfig) -> float:
    """:data:`WAVE_WORK_SECONDS` of ``method`` (0 on the embedded model, whose estimates hold that work)."""
    if llm.backend == "llamacpp":
        return 0.0
    return WAVE_WORK_SECONDS.get(method, 0.0)


def finish_seconds(llm: LLMConfig) -> float:
    """:data:`RUN_FINISH_SECONDS_ALONE` at the machine's load now: one thread among the other processes' running
    threads gets its share of the cores (:func:`machine_load`; the embedded model's :func:`slowdown_for`, capped
    for a model's threads, put it at 2.2-4.1x the time of direct and G-Eval runs at load 13). 0 on the embedded
    model, whose estimates are calibrated on whole runs that include it. Added to a time from the run's first
    requests (:func:`timed_by_first_requests`); a time from earlier runs (:func:`estimate_duration`) is left as
    it was: with their seconds per call it landed within 30% of runs on a server (tests), and adding this put a
    HypoEval run at 1.46x."""
    if llm.backend == "llamacpp":
        return 0.0
    return RUN_FINISH_SECONDS_ALONE * _alone_factor(llm)


def timed_by_first_requests(run: RunRecord, ledger: Any, elapsed: float = 0.0) -> RunEstimate | None:
    """``run``'s estimate with the time its own first requests give, when it had none (a server never used from
    this store: :func:`seconds_per_call` knows nothing of it); None while fewer than :data:`MIN_CALLS_FOR_TIMING`
    requests are answered, or when the estimate has a time already.

    The seconds the run has taken so far (``elapsed``, its start-up and work between calls included), and for the
    requests still to come their share of the whole run at the first requests' mean latency (``ledger``: the run's
    :class:`~judge_engine.llm.client.LedgerTotals` so far) over the calls in flight with the method's waves
    (:class:`Duration`, what :func:`estimate_duration` makes of a backend's earlier requests) and the method's own
    work per wave (:func:`wave_work_seconds`)."""
    est = run.estimate
    if (est is None or est.seconds is not None or run.split is None or run.method not in METHODS
            or ledger.calls < MIN_CALLS_FOR_TIMING or ledger.seconds <= 0):
        return None
    llm = LLMConfig.from_dict(run.llm)
    if llm.backend == "llamacpp":  # timed by its tokens before it starts (:func:`embedded_rates`)
        return None
    latency = ledger.seconds / ledger.calls
    parallel = max(1, llm.concurrency)
    method = get_method(run.method, METHODS[run.method].params_on(dict(run.params), llm))
    n_train, n_test = len(run.split.train_ids), len(run.split.test_ids)
    waves = method.estimate_waves(n_train, n_test)
    n_waves = round(waves["fit"] + waves["score"] + method.reply_waves(n_train, []))
    took = Duration(calls=est.calls, seconds_per_call=latency / parallel, basis="", waves=n_waves, latency=latency,
                    parallel=parallel, wave_overhead=wave_work_seconds(run.method, llm))
    to_come = max(0.0, 1.0 - ledger.calls / est.calls) if est.calls else 0.0
    finish = finish_seconds(llm)  # the run's summary after its last answer, whatever is still to come
    return replace(est, seconds=round(elapsed + to_come * (took.minutes or 0.0) * 60.0 + finish, 1),
                   basis=f"{est.basis}; time: from its first {ledger.calls} requests ({latency:.2f} s each, "
                         f"{parallel} in flight)")
