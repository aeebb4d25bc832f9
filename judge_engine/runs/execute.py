"""Executing a run, resumably: fit (once), score the test items chunk by chunk (two in flight), summarise."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from typing import Callable

from ..aggregate import fits_kept_in
from ..llm import BackendUnavailable, EmbeddedModelUnavailable, LLMConfig, Ledger, make_llm
from ..llm.client import LLM
from ..methods import FitContext, Judge, get_method
from ..records import RunEstimate, RunRecord, RunSummary, Verdict
from ..store import Store
from ..score_files import score_stream
from .first_requests import timed_by_first_requests
from .kept_fits import KeptFits
from .spec import human_dataset
from .summary import summarize

RunProgress = Callable[[int, int, str], None]


def execute_run(store: Store, run_id: int, *, llm: LLM | None = None, api_key: str | None = None,
                progress: RunProgress | None = None, chunk_size: int | None = None,
                on_estimate: Callable[[RunEstimate], None] | None = None) -> RunSummary:
    """Do (or continue) the work of run ``run_id``; returns its summary.

    A run whose estimate has no time (a server never used from this store) gets one from its first requests
    (:func:`.first_requests.timed_by_first_requests`): stored with the run (the pages show it) and handed to
    ``on_estimate`` (the command line prints it).

    Safe to call again after a crash: the judge learned by ``fit`` is kept
    with the run, samples already scored are skipped, and cached calls cost
    nothing. The ledger adds up across resumes. Aggregator models fitted meanwhile are kept in the store for the
    next run that fits the same ones (:mod:`.kept_fits`).
    """
    with fits_kept_in(KeptFits(store)):
        return _execute_run(store, run_id, llm=llm, api_key=api_key, progress=progress, chunk_size=chunk_size,
                            on_estimate=on_estimate)


def _execute_run(store: Store, run_id: int, *, llm: LLM | None, api_key: str | None, progress: RunProgress | None,
                 chunk_size: int | None, on_estimate: Callable[[RunEstimate], None] | None) -> RunSummary:
    run = store.run(run_id)
    started = time.time()
    config = LLMConfig.from_dict(run.llm)
    ledger = Ledger(price_prompt_per_1k=config.price_prompt_per_1k,
                    price_completion_per_1k=config.price_completion_per_1k, start=run.ledger)
    store.update_run(run_id, status="running", pid=os.getpid(), heartbeat=time.time(), message="", stage="starting")

    untimed = [run.estimate is not None and run.estimate.seconds is None]

    def report(done: int, total: int, stage: str) -> None:
        snapshot = ledger.snapshot()
        store.heartbeat(run_id, done=done, total=total, stage=stage, ledger=snapshot)
        if untimed[0]:
            timed = timed_by_first_requests(run, snapshot, time.time() - started)
            if timed is not None:
                untimed[0] = False
                store.update_run(run_id, estimate=timed.to_dict())
                if on_estimate:
                    on_estimate(timed)
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
            fit_cost: list = []  # the ledger when the fit's own requests were all answered, if the method says

            context = replace(FitContext.of(dataset, llm=llm, progress=lambda d, t, s: report(d, t, f"fit: {s}"),
                                            log=lambda kind, payload: store.add_event(run_id, kind, payload)),
                              upcoming=dataset.subset(list(split.test_ids)),
                              fit_done=lambda: fit_cost.append(ledger.snapshot()))
            judge = method.fit(dataset.subset(list(split.train_ids)), aspect, context)
            store.update_run(run_id, judge=judge.to_dict(), ledger=ledger.snapshot())
            # the ledger at this point is what fitting cost (the comparison splits fit and scoring cost); a method
            # that sent the test items' requests before its fit ended (HD-Eval) said when its own were done
            fitted = fit_cost[0] if fit_cost else ledger.snapshot()
            store.add_event(run_id, "fitted", {"method": run.method, "ledger": fitted.to_dict()})
        else:
            judge = Judge.from_dict(run.judge)
        test = dataset.subset(list(split.test_ids))
        scored = store.scored_ids(run_id)
        remaining = [s for s in test if s.id not in scored]
        done = len(test) - len(remaining)
        report(done, len(test), "scoring")
        # Verdicts are saved chunk by chunk (what a crash can lose), through the loop `score` uses: while one
        # chunk's last answers come in, the next chunk's requests are already queued, so the backend's request
        # slots stay busy instead of draining at the end of every chunk (a backend that answers one call at a
        # time still gets the chunks one after the other). An item the server refuses is missing with its reason.
        step = chunk_size or max(8, 2 * config.concurrency)
        held: list[Verdict] = []
        shown = [done]  # chunks report at once: the figure shown never goes back
        showing = threading.Lock()

        def show(n: int) -> None:
            # compared and reported under one lock: between another thread's check and its report, a chunk
            # could report a higher count and then be overwritten by the lower one (a finished run read 4 of 9)
            with showing:
                if n > shown[0]:
                    shown[0] = min(n, len(test))
                    report(shown[0], len(test), "scoring")

        def save() -> None:  # a chunk's verdicts are all handed over (score_stream's flush): keep them
            store.save_verdicts(run_id, list(held))
            held.clear()
            show(len(store.scored_ids(run_id)))

        score_stream(judge, [remaining[i:i + step] for i in range(0, len(remaining), step)], llm=llm,
                     write=held.append, flush=save, progress=lambda d, _t, _s, base=done: show(base + d),
                     total=len(remaining))
        earlier = run.summary.seconds if run.summary else 0.0  # time spent before a resume
        summary = summarize(dataset, aspect.name, store.load_verdicts(run_id), ledger=ledger.snapshot(),
                            seconds=time.time() - started + earlier, judge=judge)
        store.update_run(run_id, status="finished", stage="done", finished=time.time(), summary=summary,
                         ledger=ledger.snapshot(), message="")
        return summary
    except EmbeddedModelUnavailable as exc:
        # not an outage that passes: the embedded model does not run on this machine until its file or the
        # llama.cpp build is fixed, and the message (shown by the Runs page) says how
        store.update_run(run_id, status="failed", message=str(exc), ledger=ledger.snapshot())
        raise
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
