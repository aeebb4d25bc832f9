"""Estimates that count waves (issue 46): a run's estimate before it starts against the wall time it takes.

Each method runs twice through ``execute_run`` on a simulated world (:mod:`.simulated_judge`, every schema
answered) behind a set latency (:class:`.api_speed.Slow`), no cache: the first run is the backend's history
the estimate reads (seconds per counted call, one call's latency), the second is estimated
(:func:`judge_engine.runs.estimate_duration`) on another split and then timed. Reported per method and
level: the estimate, the part of it that is the calls' seconds shared by the window (the estimate before
waves were counted), the waves counted and made, and estimate / measured.

``--first-run``: the method's first run on the backend instead. The history is a direct judge's run on the
same backend (its calls give one call's latency, as a user's earlier judge would), so nothing the method's
own runs show (HypoEval's refreshes, the work between waves) is read; the method's run is estimated, then
timed.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from typing import Any

from . import result

PARAMS = {"hd_eval": {"aggregator": "lr", "pi_repeats": 2}, "hpss": {"budget": 4},
          "hypoeval": {"n_init": 3, "n_init_hypotheses": 3, "top_k": 3, "w_max": 3}, "active_critic": {}}
"""Small fits: HD-Eval's linear aggregator (the MLP's CPU time is not what this measures), HPSS's 4 search
evaluations, HypoEval's quick first look's sizes."""


def add_arguments(parser) -> None:
    parser.add_argument("--methods", nargs="+", default=list(PARAMS))
    parser.add_argument("--levels", type=int, nargs="+", default=[4, 32], help="calls in flight")
    parser.add_argument("--latency", type=float, default=0.25, help="seconds each call takes")
    parser.add_argument("--n-train", type=int, default=12)
    parser.add_argument("--n-test", type=int, default=6)
    parser.add_argument("--first-run", action="store_true",
                        help="estimate each method's first run on the backend (history: a direct judge's run)")


def check_once(method: str, *, concurrency: int, latency: float, n_train: int, n_test: int,
               first_run: bool = False) -> dict[str, Any]:
    from .. import runs
    from ..llm import LLM, LLMConfig
    from ..records import Dataset
    from ..runs import RunSpec
    from ..store import Store
    from .api_speed import Slow
    from .simulate import _aspect
    from .simulated_judge import TASK, SimulatedBackend, World

    world = World(0, n_samples=2 * (n_train + n_test), malformed=0.0)
    dataset = Dataset(name="simulated", task=TASK.task, aspects=(_aspect(),), samples=tuple(world.samples),
                      natural_level="group", input_label=TASK.input_label, output_label=TASK.output_label)
    store = Store(tempfile.mkdtemp(prefix="estimate-waves-") + "/w.db")
    store.save_dataset(dataset)
    # the backend the runs record (an estimate reads the history of the same one); the calls go to the world
    config = LLMConfig(backend="openai", base_url="http://stub.invalid/v1", model="stub", concurrency=concurrency)

    def spec(seed: int, of: str = method) -> RunSpec:
        return RunSpec(method=of, dataset="simulated", aspect=_aspect().name, train_size=n_train,
                       test_size=n_test, seed=seed, llm=config, params=PARAMS.get(of, {}))

    def execute(run_id: int):
        slow = Slow(SimulatedBackend(world), latency)
        start = time.perf_counter()
        summary = runs.execute_run(store, run_id, llm=LLM(config, slow))
        return summary, slow, time.perf_counter() - start

    if first_run:  # the backend's latency from a judge of another method: every item of the world, >= 20 calls
        history = replace(spec(0, "direct"), train_size=0, test_size=len(world.samples))
        execute(runs.create_run(store, history))
    else:
        execute(runs.create_run(store, spec(0)))
    estimate = runs.estimate_duration(store, spec(1))
    summary, slow, wall = execute(runs.create_run(store, spec(1)))
    seconds = (estimate.minutes or 0.0) * 60
    return {"method": method, "concurrency": concurrency, "calls": summary.ledger.calls,
            "waves_counted": estimate.waves, "waves_made": len(slow.waves), "estimate_s": round(seconds, 2),
            "calls_part_s": round(estimate.calls * (estimate.seconds_per_call or 0.0), 2),
            "measured_s": round(wall, 2), "estimate_over_measured": round(seconds / wall, 2) if wall else None}


def run(*, methods=tuple(PARAMS), levels=(4, 32), latency: float = 0.25, n_train: int = 12, n_test: int = 6,
        first_run: bool = False, **_: Any) -> dict[str, Any]:
    rows = []
    for method in methods:
        for c in levels:
            row = check_once(method, concurrency=c, latency=latency, n_train=n_train, n_test=n_test,
                             first_run=first_run)
            rows.append(row)
            print(f"{method} at {c}: estimate {row['estimate_s']} s, measured {row['measured_s']} s "
                  f"({row['estimate_over_measured']}x)", flush=True)
    within = all(r["estimate_over_measured"] is not None and abs(r["estimate_over_measured"] - 1) <= 0.3
                 for r in rows)
    return result("estimate-waves", config={"methods": list(methods), "levels": list(levels), "latency": latency,
                                            "n_train": n_train, "n_test": n_test, "first_run": first_run},
                  rows=rows, summary={"all_within_30_percent": within},
                  notes=["calls_part_s = the estimate without its waves (the calls' seconds over the calls in "
                         "flight); measured = execute_run's wall time, fit and scoring"])
