"""The commands that question a finished run's judge: ``probes`` (where and why it disagrees with the humans)
and ``stress`` (perturbed test items).

Out of :mod:`judge_engine.__main__`, which keeps the parser."""

from __future__ import annotations

import argparse
import json
import sys

from .cli_common import _progress_bar


def cmd_probes(args: argparse.Namespace) -> int:
    from .methods import get_method
    from .probes import probe_run, probe_stability, stability_calls, stability_lines, summary_lines
    from .store import Store

    store = Store(args.db)
    report = probe_run(store, args.run_id)
    found = None
    if args.stability:
        run = store.run(args.run_id)
        n = min(args.items, report.n + report.n_missing)
        calls = stability_calls(get_method(run.method, run.judge.get("params") if run.judge else None), n,
                                args.repeats)
        # new calls: say how many before the first one is sent (cached draws cost nothing)
        print(f"stability ({args.vary}): re-scoring {n} test items {args.repeats} times, at most {calls} calls "
              "(draws asked before come from the cache)", file=sys.stderr)
        progress, close = _progress_bar(args.quiet)
        try:
            found = probe_stability(store, args.run_id, items=args.items, repeats=args.repeats, vary=args.vary,
                                    progress=progress)
        finally:
            close()
    if args.json:
        out = report.to_dict()
        if found is not None:
            out["stability"] = found.to_dict()
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        lines = summary_lines(report) + (stability_lines(found) if found is not None else [])
        for line in lines:
            # sample ids come from imported files: no control character reaches the terminal
            print("".join(ch if ch.isprintable() else " " for ch in line))
    return 0

def cmd_stress(args: argparse.Namespace) -> int:
    from .store import Store
    from .stress import TRANSFORMATIONS, load_table, stress_lines, stress_run

    if args.list:
        for record in TRANSFORMATIONS.values():
            print(f"{record.name}: {record.description}")
        return 0
    if args.run_id is None:
        raise ValueError("name the run to stress (judge-workbench runs lists them), or --list the transformations")
    if args.items < 1:
        raise ValueError(f"--items must be at least 1, not {args.items}")
    table = load_table(args.table)
    progress, close = _progress_bar(args.quiet)
    try:
        report = stress_run(Store(args.db), args.run_id, transformations=args.transform, table=table,
                            items=args.items, seed=args.seed, progress=progress)
    finally:
        close()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, allow_nan=False))
    else:
        for line in stress_lines(report):
            print("".join(ch if ch.isprintable() else " " for ch in line))
    return 0
