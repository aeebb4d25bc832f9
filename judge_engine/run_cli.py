"""The commands that start and follow runs: ``run``, ``resume`` and ``runs``.

Out of :mod:`judge_engine.__main__`, which keeps the parser; every heavy import is inside the command that
needs it."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .cli_common import _progress_bar, prices, require_backend


def cmd_run(args: argparse.Namespace) -> int:
    from .llm import LLMConfig
    from .runs import RunSpec, create_run
    from .store import Store

    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"--params is not valid JSON ({exc.msg} at column {exc.colno}): {args.params}") from None
    if not isinstance(params, dict):
        raise ValueError(f"--params must be a JSON object such as '{{\"n_samples\": 10}}', not {args.params}")
    from .methods import get_method
    get_method(args.method, params)  # an unknown method or parameter is named before anything is stored
    require_backend(args.backend, args.model)  # a missing extra is named before a run is made (and left half-made)
    if args.concurrency is not None and args.concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, not {args.concurrency}")
    llm = LLMConfig(backend=args.backend, model=args.model or "", base_url=args.base_url or "",
                    concurrency=args.concurrency,  # None: the backend's default (llm.DEFAULT_IN_FLIGHT)
                    **prices(args))
    store = Store(args.db)
    spec = RunSpec(method=args.method, dataset=args.dataset, aspect=args.aspect, params=params,
                   train_size=args.train, test_size=args.test, seed=args.seed, llm=llm)
    import getpass
    import os

    run_id = create_run(store, spec, actor=os.environ.get("JUDGE_WORKBENCH_USER") or getpass.getuser())
    from .runs.cost import describe, expected

    # after create_run: bad input (a dataset, an aspect, a parameter's type) is named before the model loads
    from .runs.model_timing import before_first_estimate

    if before_first_estimate(store, llm):
        store.update_run(run_id, estimate=expected(store, spec).to_dict())

    estimate = store.run(run_id).estimate
    from .runs import ensure_dataset
    from .trust import split_note

    note = split_note(ensure_dataset(store, spec.dataset), spec)
    if note:  # a run that cannot conclude says so while Ctrl-C still costs nothing
        print(f"run {run_id}: {note}", file=sys.stderr)
    # before the first call: what the run may cost, while Ctrl-C still costs nothing
    from .score_cli import seconds_text

    from .runs.estimates import MIN_CALLS_FOR_TIMING

    untimed = f", time unknown until its first {MIN_CALLS_FOR_TIMING} requests" if llm.backend != "llamacpp" else ""
    print(f"run {run_id}: expected before any cache hit: {describe(estimate, llm)}"
          + (f", {seconds_text(estimate.seconds)}" if estimate.seconds else untimed)
          + f" ({estimate.basis})", file=sys.stderr)
    return _execute(store, run_id, quiet=args.quiet)

def _execute(store, run_id: int, *, quiet: bool) -> int:
    from .runs import execute_run

    from .runs.supervisor import fatal_errors_logged

    progress, close = _progress_bar(quiet)

    def timed(estimate) -> None:  # a run that had no time gets one from its first requests
        from tqdm import tqdm

        from .score_cli import seconds_text

        tqdm.write(f"run {run_id}: {seconds_text(estimate.seconds)} in all "
                   f"({estimate.basis.rsplit('time: ', 1)[-1]})", file=sys.stderr)

    try:
        with fatal_errors_logged(store.path, run_id):  # a crash in native code leaves its Python stack in the log
            summary = execute_run(store, run_id, progress=progress, on_estimate=timed)
    except KeyboardInterrupt:  # execute_run has marked the run interrupted; its answers so far are cached
        close()
        print(f"run {run_id} stopped by Ctrl-C; continue it with: judge-workbench resume {run_id} (the calls "
              "answered so far come back from the cache)", file=sys.stderr)
        return 130
    finally:
        close()
    from .runs.cost import against
    from .trust import trust_report

    run = store.run(run_id)
    # the figures and, beside them, whether to trust the judge (anti-correlated, below a baseline, ...) and
    # what it cost against what was expected
    print(json.dumps({"run_id": run_id, **summary.to_dict(), "trust": trust_report(store, run_id).to_dict(),
                      "estimate": run.estimate.to_dict() if run.estimate else None}, indent=2))
    print(f"run {run_id} cost: {against(run.ledger, run.estimate)}", file=sys.stderr)
    _keep_probes(store, run_id)
    return 0

def _keep_probes(store, run_id: int) -> None:
    """A worker the app started computes the finished run's probes and keeps them (:func:`.probes.probe_run`),
    after the run is shown finished: the Compare page then reads them instead of computing every run's on its
    first visit (5-20 s a run at 1,600 items, issue 67). A run in a terminal leaves them to the first reader."""
    from .runs.supervisor import RUN_LOG_ENV

    if not os.environ.get(RUN_LOG_ENV):
        return
    from .probes import probe_run

    try:
        probe_run(store, run_id)
    except Exception as exc:  # noqa: BLE001 - the run is finished and kept; its probes are computed when read
        print(f"run {run_id}: probes not kept ({type(exc).__name__}: {exc}); they are computed when first shown",
              file=sys.stderr)

def cmd_resume(args: argparse.Namespace) -> int:
    from .runs import exits, supervisor
    from .store import Store

    store = Store(args.db)
    supervisor.settle(store, args.run_id)  # a worker found gone is recorded first: it counts as a death below
    death = exits.last_death(store, args.run_id)
    if death is not None and store.run(args.run_id).message == death.reason and not os.environ.get(
            supervisor.RUN_LOG_ENV):  # a worker's own log would only get the tail again
        tail = "".join(f"\n    {line}" for line in death.log_tail.splitlines())
        print(f"run {args.run_id}: {death.reason}" + (f"; the last lines of its log:{tail}" if tail else ""),
              file=sys.stderr)
    repeated = exits.repeated_death(store, args.run_id)
    if repeated is not None and not args.force:
        raise ValueError(exits.refusal(args.run_id, repeated))
    return _execute(store, args.run_id, quiet=args.quiet)

def cmd_runs(args: argparse.Namespace) -> int:
    from .runs import effective_status, ended_without_judge
    from .runs.exits import last_death
    from .runs.supervisor import found_gone
    from .store import STOPPED_STATUSES, Store
    from .trust import one_line, trust_report

    from .runs.cost import dollars

    store = Store(args.db)
    listed = store.runs(limit=args.limit)
    if not listed:
        print(f"no runs in {store.path} (--db or $JUDGE_WORKBENCH_DB names another database)")
    for r in listed:
        summary = r.summary
        # what it cost so far, and what was expected when it was made
        cost = f"  {r.ledger.calls:,} calls, {dollars(r.ledger.dollars)}" + (
            f" (expected {dollars(r.estimate.dollars)})" if r.estimate else "")
        rho = (summary.correlations or {}).get("spearman") if summary else None
        figure = f"spearman={rho:.2f}" if isinstance(rho, (int, float)) else "spearman=n/a"
        scored = ""
        if summary:
            scored = f"  scored {summary.scored}, missing {summary.missing}"
            if summary.warnings:
                scored += f"  ({len(summary.warnings)} warning{'s' if len(summary.warnings) != 1 else ''})"
        if r.status == "finished" and summary:
            try:
                scored += "  " + one_line(trust_report(store, r.id))
            except (ValueError, KeyError) as exc:  # e.g. its dataset was deleted since: the list goes on
                scored += f"  trust: n/a ({exc})"
        status = effective_status(r)
        if status in STOPPED_STATUSES and not summary:
            # its step count and an "n/a" figure say nothing; why it stopped does
            why = ended_without_judge(r)
            death = found_gone(store, r) or last_death(store, r.id)  # how its worker died, when it did
            if death is not None and r.message not in ("", death.reason):
                death = None  # a later end recorded its own reason
            reason = why or r.message or (death.reason if death else "") or "no reason recorded"
            if death is not None and death.last_line:
                reason += f" (log: {death.last_line})"
            reason = " ".join(reason.split())
            said = "ended without a judge" if why else f"stopped at step {r.done} of {r.total}"
            print(f"{r.id:>5}  {status:<11} {r.method:<10} {r.dataset}/{r.aspect:<16} {cost.strip()}  {said}: {reason[:300]}")
            continue
        print(f"{r.id:>5}  {status:<11} {r.method:<10} {r.dataset}/{r.aspect:<16} "
              f"{r.done}/{r.total}  {figure}{scored}{cost}")
    return 0
