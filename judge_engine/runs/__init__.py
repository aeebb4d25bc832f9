"""Runs: configure, start outside the UI, execute resumably, summarise.

A run is a row in the store. :func:`create_run` fixes everything about it
(method and parameters, dataset, aspect, split, backend); :func:`execute_run`
does the work and can be called again on a killed or failed run: the fitted
judge is kept once learned, scored samples are skipped, and every LLM call
already made is answered by the persistent cache, so nothing is paid twice.
:func:`start_run` executes a run in a detached process so a browser refresh
or a page switch never stops it; the page only polls the store.

Modules, one job each:

- :mod:`.spec`: :class:`RunSpec`, the dataset a run needs (:func:`ensure_dataset`, :func:`human_dataset`),
  :func:`create_run`, and a quick first look (:func:`quick_spec`, with the backend's :func:`fast_defaults`).
- :mod:`.execute`: :func:`execute_run` (fit once, score chunk by chunk, resumable) and how a run that found no
  judge is told apart (:func:`ended_without_judge`).
- :mod:`.summary`: :func:`summarize` (meta-evaluation and cost) and the warnings in words
  (:func:`run_warnings`).
- :mod:`.workers`: the detached worker process (:func:`start_run`), whether it still lives
  (:func:`effective_status`), stopping it so that the run resumes later without paying again (:func:`stop_run`,
  :func:`stop_runs`), and the other runs taking turns on a model that answers one call at a time
  (:func:`busy_with`, :func:`busy_note`).
- :mod:`.supervisor`: the process that waits for a worker and records how it died when it could not (run as
  ``python -m judge_engine.runs.supervisor``, so not imported here); :mod:`.exits`: those ends, read by the
  ``runs`` and ``resume`` commands and the pages, and a run that died twice at one step (:func:`.exits.repeated_death`).
- :mod:`.launching`: :func:`launch`, a run with its baselines on exactly its split, and which runs are
  comparable with it (:func:`runs_on_same_split`).
- :mod:`.estimates`: LLM calls (:func:`estimate`) and wall time (:func:`estimate_duration`) before a run starts,
  a run with its baselines (:func:`estimate_look`), and the quick first look that fits the backend
  (:func:`quick_look`); :mod:`.cost`: the tokens and dollars expected before the start (:func:`.cost.expected`,
  kept with the run by :func:`create_run`) and what a run cost against them (:func:`.cost.against`).
"""

import importlib
from typing import TYPE_CHECKING, Any

# The names below load with their module on first use (PEP 562): a run's supervisor process imports
# judge_engine.runs.supervisor, which needs only the store and the exits, and importing every module here made
# it load the methods, scikit-learn and scipy first (5.0 s at load 5 before the worker it starts could begin,
# issue 62 item 6).
if TYPE_CHECKING:
    from .estimates import (EMBEDDED_SECONDS_PER_CALL, EMBEDDED_SECONDS_PER_COUNTED_CALL, MIN_CALLS_FOR_TIMING,
                            SHORT_RUN_MINUTES, Duration, counted_calls, estimate, estimate_duration, method_speed,
                            seconds_per_call)
    from .creating import create_run
    from .execute import NO_JUDGE_PREFIX, RunProgress, ended_without_judge, execute_run
    from .launching import (BASELINES, Baseline, Started, launch, refuse_unavailable, resume, runs_on_same_split,
                            same_backend)
    from .looks import QUICK_LOOK_SECONDS, LookEstimate, QuickLook, estimate_look, quick_look
    from .spec import (QUICK_TEST, QUICK_TEST_SIZES, QUICK_TRAIN, QUICK_TRAIN_SIZES, RunSpec, ensure_dataset, fast_defaults, human_dataset,
                       quick_spec)
    from .summary import run_warnings, summarize
    from .workers import (HEARTBEAT_STALE_S, Stopped, busy_note, busy_with, effective_status, keep_standby,
                          poll_interval, serialises_calls, start_run, stop_run, stop_runs)

_EXPORTS = {
    "estimates": ('EMBEDDED_SECONDS_PER_CALL', 'EMBEDDED_SECONDS_PER_COUNTED_CALL', 'MIN_CALLS_FOR_TIMING', 'SHORT_RUN_MINUTES', 'Duration', 'counted_calls', 'estimate', 'estimate_duration', 'method_speed', 'seconds_per_call'),
    "creating": ("create_run",),
    "execute": ('NO_JUDGE_PREFIX', 'RunProgress', 'ended_without_judge', 'execute_run'),
    "launching": ('BASELINES', 'Baseline', 'Started', 'launch', 'refuse_unavailable', 'resume', 'runs_on_same_split',
                  'same_backend'),
    "looks": ('QUICK_LOOK_SECONDS', 'LookEstimate', 'QuickLook', 'estimate_look', 'quick_look'),
    "spec": ('QUICK_TEST', 'QUICK_TEST_SIZES', 'QUICK_TRAIN', 'QUICK_TRAIN_SIZES', 'RunSpec', 'ensure_dataset', 'fast_defaults', 'human_dataset', 'quick_spec'),
    "summary": ('run_warnings', 'summarize'),
    "workers": ('HEARTBEAT_STALE_S', 'Stopped', 'busy_note', 'busy_with', 'effective_status', 'keep_standby',
                'poll_interval', 'serialises_calls', 'start_run', 'stop_run', 'stop_runs'),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE) | set(_SUBMODULES))


_SUBMODULES = ("cost", "counts", "creating", "duration", "embedded_speed", "estimates", "execute", "exits", "first_requests", "kept_fits", "launching", "looks", "model_timing", "rendering",
               "reply_lengths", "request_tokens", "schema_replies", "spec", "summary", "supervisor", "workers")


__all__ = ["BASELINES", "EMBEDDED_SECONDS_PER_CALL", "EMBEDDED_SECONDS_PER_COUNTED_CALL", "LookEstimate",
           "QUICK_LOOK_SECONDS", "QuickLook", "counted_calls", "estimate_look", "method_speed", "quick_look", "HEARTBEAT_STALE_S", "MIN_CALLS_FOR_TIMING", "NO_JUDGE_PREFIX",
           "QUICK_TEST", "QUICK_TEST_SIZES", "QUICK_TRAIN", "QUICK_TRAIN_SIZES", "SHORT_RUN_MINUTES", "Baseline", "Duration", "RunProgress", "RunSpec", "Started", "create_run",
           "effective_status", "ended_without_judge", "ensure_dataset", "estimate", "estimate_duration",
           "execute_run", "fast_defaults", "human_dataset", "launch", "quick_spec", "run_warnings", "runs_on_same_split",
           "refuse_unavailable", "resume", "same_backend", "seconds_per_call", "start_run", "summarize",
           "Stopped", "busy_note", "busy_with", "keep_standby", "poll_interval", "serialises_calls", "stop_run", "stop_runs"]
