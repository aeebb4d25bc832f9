"""The ``score`` command: a file of items scored with an exported judge (:mod:`judge_engine.score_files` does the
work; this reads the options, prints the expected cost, the progress and the summary, and says how to resume)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

DEFAULT_TIMEOUT_S = 30.0
"""Seconds one request of ``score`` may take before the client gives up on it and retries (``--timeout``)."""
DEFAULT_RETRIES = 2
"""Retries of a request that failed (timeout, connection, 429, 5xx) before it counts as failed (``--retries``)."""


def stopped_line(args: argparse.Namespace) -> str:
    """What Ctrl-C prints: the command that resumes (the same one), or that nothing was kept without ``--out``."""
    if getattr(args, "command", None) != "score":
        return "stopped by Ctrl-C"
    if not getattr(args, "out", None):
        return "stopped by Ctrl-C (the scores went to standard output; with --out FILE a re-run resumes)"
    prog, argv = getattr(args, "command_line", ("judge-workbench", []))
    return ("stopped by Ctrl-C; run the same command again to score the rest (the answers so far are cached, the "
            "lines written are kept): " + " ".join([prog, *map(shlex.quote, argv)]))


SKIPPED_SHOWN = 10
"""Rows that cannot be scored named one by one on standard error; the rest are only counted."""


def cmd_score(args: argparse.Namespace) -> int:
    """``score``: every item of a file scored into ``--out`` (or standard output), the summary on standard error."""
    from .__main__ import _progress_bar, scoring_config
    from .export import load_judge
    from .items import ItemFile
    from .llm import make_llm
    from .score_files import output_format, score_file
    from .store import Store

    exported = load_judge(Path(args.judge))
    config = scoring_config(exported.llm, args)
    judge = exported.judge
    fmt = output_format(args.out, args.format)
    source = ItemFile(args.data, input_col=args.input_col, output_col=args.output_col, id_col=args.id_col,
                      context_col=args.context_col, reference_col=args.reference_col, human_col=args.human_col,
                      aspect=judge.aspect["name"])
    if source.id_chosen:
        print("ids: the file's column 'id' (--id-col names another; --id-col '' numbers the rows)", file=sys.stderr)
    store = Store(args.db)
    llm = make_llm(config, store=store)
    from .runs.model_timing import before_first_estimate

    before_first_estimate(store, config, llm)
    estimate = _scoring_estimate(store, judge, config, source)
    started = time.monotonic()
    bad_row = _first_few("skipped", "skipped: more rows (every one is counted in the summary)")
    warn_row = _first_few("warning", "warning: more rows cleaned (every one is counted in the summary: rows_cleaned)")

    progress, close = _progress_bar(args.quiet)
    try:
        summary = score_file(judge, source, llm=llm, out=args.out, fmt=fmt, stream=None if args.out else sys.stdout,
                             progress=progress, bad_row=bad_row, notice=lambda text: print(text, file=sys.stderr),
                             retry_missing=args.retry_missing, warn_row=warn_row)
    except KeyboardInterrupt:
        close()
        print(stopped_line(args), file=sys.stderr)
        return 130
    finally:
        close()
    summary = {**summary, "concurrency": config.concurrency, **llm.ledger.snapshot().to_dict()}
    answers_429 = getattr(llm.backend, "answers_429", 0)  # the client's own retries included
    if llm.governor.lowered or answers_429:  # the server rate-limited: how often, and how far the pace came down
        summary["rate_limited"] = {"answers_429": answers_429, "times": llm.governor.lowered,
                                   "fewest_in_flight": llm.governor.lowest, "in_flight_at_the_end": llm.governor.limit}
    if estimate is not None:
        from .runs.cost import against

        # what it cost against what was expected (stderr: scores may be going to stdout), before the summary
        print(f"score cost: {against(llm.ledger.snapshot(), estimate, wall=time.monotonic() - started)}",
              file=sys.stderr)
        summary["estimate"] = estimate.to_dict()
    print(json.dumps(summary, indent=2), file=sys.stderr)
    return 0


def _scoring_estimate(store, judge, config, source):
    """Print what scoring ``source`` is expected to cost before the first call (to stderr, so that verdicts
    written to stdout stay machine-readable); the estimate, or None for a file with no readable first item."""
    from .runs.cost import RENDERED_ITEMS, describe, expected_scoring

    first = next(iter(source.chunks(RENDERED_ITEMS, lambda exc: None)), [])  # bad rows are reported when scored
    if not first:
        return None
    estimate = expected_scoring(store, judge, config, first, source.estimated_rows())
    print(f"score: expected before any cache hit, for the file's {source.estimated_rows():,} rows: "
          f"{describe(estimate, config)}" + (f", {seconds_text(estimate.seconds)}" if estimate.seconds is not None else "")
          + f" ({estimate.basis})", file=sys.stderr)
    return estimate


def seconds_text(seconds: float) -> str:
    """A duration as the expected-cost lines say it."""
    return f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"


def _first_few(word: str, more: str):
    """A printer of rows' messages to standard error: the first :data:`SKIPPED_SHOWN` as ``word: message``, then
    ``more`` once; the summary counts every row."""
    count = 0

    def say(exc: Exception) -> None:
        nonlocal count
        count += 1
        if count <= SKIPPED_SHOWN:
            print(f"{word}: {exc}", file=sys.stderr)
        elif count == SKIPPED_SHOWN + 1:
            print(more, file=sys.stderr)
    return say
