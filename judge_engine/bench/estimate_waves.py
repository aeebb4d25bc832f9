"""Estimates that count waves (issue 46): a run's estimate before it starts against the wall time it takes.

Each method runs twice through ``execute_run``, no cache, by default against the OpenAI-compatible stub server
over HTTP (:mod:`.stub_server`: SummEval answered as a judge that follows the humans, in each schema's shape,
usage counted by a stand-in tokenizer, ``--latency`` slept per request), as a user's backend answers; with
``--backend simulated`` on a simulated world (:mod:`.simulated_judge`, every schema answered) behind a set
latency (:class:`.api_speed.Slow`): the first run is the backend's history
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
from .reply_shapes import shapes

PARAMS = {"direct": {}, "geval": {}, "hd_eval": {"aggregator": "lr", "pi_repeats": 2}, "hpss": {"budget": 4},
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
    parser.add_argument("--never-seen", action="store_true",
                        help="a first run on a backend with no earlier request at all: its time is estimated from "
                             "its own first requests (execute_run's update of the run's estimate)")
    parser.add_argument("--backend", choices=("stub", "simulated"), default="stub",
                        help="stub: the OpenAI-compatible stub server over HTTP answering SummEval as a judge that "
                             "follows the humans, its latency a sleep per request (what a user's backend looks "
                             "like); simulated: the in-process simulated world (its own token counts)")
    parser.add_argument("--dataset", default="summeval", help="the stub's benchmark")
    parser.add_argument("--aspect", default="coherence")
    parser.add_argument("--price-prompt", type=float, default=0.00015, help="dollars per 1,000 prompt tokens")
    parser.add_argument("--price-completion", type=float, default=0.0006,
                        help="dollars per 1,000 completion tokens")


QUANTITIES = ("calls", "prompt_tokens", "completion_tokens", "dollars", "seconds")
"""What a run's estimate says (:class:`~judge_engine.records.RunEstimate`), each compared with what it took."""


def check_once(method: str, *, concurrency: int, latency: float, n_train: int, n_test: int,
               first_run: bool = False, never_seen: bool = False, price_prompt: float = 0.00015,
               price_completion: float = 0.0006, backend: str = "simulated", dataset_name: str = "summeval",
               aspect: str = "coherence") -> dict[str, Any]:
    from .. import runs
    from ..llm import LLM, LLMConfig, make_backend
    from ..records import Dataset
    from ..runs import RunSpec
    from ..store import Store
    from .api_speed import Slow
    from .reply_shapes import ReplyTap
    from .simulate import _aspect
    from .simulated_judge import TASK, SimulatedBackend, World

    store = Store(tempfile.mkdtemp(prefix="estimate-waves-") + "/w.db")
    stub = None
    if backend == "stub":
        from ..data import load_benchmark
        from .stub_server import StubServer

        dataset = load_benchmark(dataset_name)
        samples = len(dataset.samples)
        # a latency on every request ("*"): the server's threads sleep it, as a remote model takes its time
        stub = StubServer(follow_humans=dataset_name, hang_containing="*", hang_seconds=latency).__enter__()
        base_url, aspect_name = stub.base_url, aspect
    else:
        world = World(0, n_samples=2 * (n_train + n_test), malformed=0.0)
        dataset = Dataset(name="simulated", task=TASK.task, aspects=(_aspect(),), samples=tuple(world.samples),
                          natural_level="group", input_label=TASK.input_label, output_label=TASK.output_label)
        samples = len(world.samples)
        base_url, aspect_name = "http://stub.invalid/v1", _aspect().name
    store.save_dataset(dataset)
    # the backend the runs record (an estimate reads the history of the same one)
    config = LLMConfig(backend="openai", base_url=base_url, model="stub", concurrency=concurrency,
                       price_prompt_per_1k=price_prompt, price_completion_per_1k=price_completion)

    def spec(seed: int, of: str = method) -> RunSpec:
        return RunSpec(method=of, dataset=dataset.name, aspect=aspect_name, train_size=n_train,
                       test_size=n_test, seed=seed, llm=config, params=PARAMS.get(of, {}))

    def execute(run_id: int):
        slow = Slow(SimulatedBackend(world), latency) if stub is None else None
        tap = ReplyTap(make_backend(config, api_key="stub")) if stub is not None else None
        start = time.perf_counter()
        # no cache either way: each run's calls all reach the backend, as the estimate counts them
        summary = runs.execute_run(store, run_id, llm=LLM(config, slow if slow is not None else tap))
        return summary, slow, time.perf_counter() - start, tap

    try:
        return _measure(store, runs, spec, execute, method, concurrency, first_run, never_seen, samples)
    finally:
        if stub is not None:
            stub.__exit__(None, None, None)


def _measure(store, runs, spec, execute, method: str, concurrency: int, first_run: bool, never_seen: bool,
             samples: int) -> dict[str, Any]:

    if never_seen:
        pass  # nothing before: the run's own first requests time it
    elif first_run:  # the backend's latency from a judge of another method: every item of the world, >= 20 calls
        history = replace(spec(0, "direct"), train_size=0, test_size=min(samples, 100))
        execute(runs.create_run(store, history))
    else:
        execute(runs.create_run(store, spec(0)))
    began = time.perf_counter()
    run_id = runs.create_run(store, spec(1))  # the estimate the user is shown, made as the command makes it
    made = time.perf_counter() - began
    estimate = runs.estimate_duration(store, spec(1))  # its parts (the rendering is kept: no second one)
    summary, slow, wall, tap = execute(run_id)
    shown = store.run(run_id).estimate  # after the run: updated by its first requests when it had no time
    seconds = (estimate.minutes or 0.0) * 60
    took = {"calls": summary.ledger.calls, "prompt_tokens": summary.ledger.prompt_tokens,
            "completion_tokens": summary.ledger.completion_tokens, "dollars": summary.ledger.dollars,
            "seconds": wall}  # after the estimate was printed (create_run's own seconds are create_run_s)
    row = {"method": method, "concurrency": concurrency, "calls": summary.ledger.calls,
           "waves_counted": estimate.waves, "waves_made": len(slow.waves) if slow is not None else None, "estimate_s": round(seconds, 2),
           "calls_part_s": round(estimate.calls * (estimate.seconds_per_call or 0.0), 2),
           "measured_s": round(wall, 2), "estimate_over_measured": round(seconds / wall, 2) if wall else None,
           "create_run_s": round(made, 2),
           "prompt_per_call": round(summary.ledger.prompt_tokens / max(1, summary.ledger.calls), 1),
           "completion_per_call": round(summary.ledger.completion_tokens / max(1, summary.ledger.calls), 1),
           **(shapes(tap.kept) if tap is not None else {})}
    for q in QUANTITIES:
        said = getattr(shown, q) if shown is not None else None
        row[f"{q}_ratio"] = round(said / took[q], 2) if said is not None and took[q] else None
    return row

def run(*, methods=tuple(PARAMS), levels=(4, 32), latency: float = 0.25, n_train: int = 12, n_test: int = 6,
        first_run: bool = False, never_seen: bool = False, price_prompt: float = 0.00015,
        price_completion: float = 0.0006, backend: str = "stub", dataset: str = "summeval",
        aspect: str = "coherence", **_: Any) -> dict[str, Any]:
    rows = []
    for method in methods:
        for c in levels:
            row = check_once(method, concurrency=c, latency=latency, n_train=n_train, n_test=n_test,
                             first_run=first_run, never_seen=never_seen, price_prompt=price_prompt,
                             price_completion=price_completion, backend=backend, dataset_name=dataset,
                             aspect=aspect)
            rows.append(row)
            ratios = ", ".join(f"{q} {row[f'{q}_ratio']}" for q in QUANTITIES)
            print(f"{method} at {c}: estimate / actual: {ratios}", flush=True)
    within = all(r[f"{q}_ratio"] is not None and abs(r[f"{q}_ratio"] - 1) <= 0.3 for r in rows for q in QUANTITIES)
    return result("estimate-waves", config={"methods": list(methods), "levels": list(levels), "latency": latency,
                                            "n_train": n_train, "n_test": n_test, "first_run": first_run,
                                            "never_seen": never_seen, "backend": backend,
                                            "dataset": dataset if backend == "stub" else "simulated", "prices": [price_prompt, price_completion]},
                  rows=rows, summary={"all_within_30_percent": within},
                  notes=["<quantity>_ratio = the run's stored estimate (create_run's, updated by execute_run from its "
                         "first requests when it had no time) over what the run took; seconds = execute_run's wall "
                         "time, what follows the estimate printed (create_run_s: create_run's, the estimate's "
                         "rendering; kept within the process, so ~0 at the second level)",
                         "calls_part_s = the estimate without its waves (the calls' seconds over the calls in "
                         "flight); estimate_s / measured_s = estimate_duration before create_run against "
                         "execute_run's wall time"])
