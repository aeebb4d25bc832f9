"""``judge-workbench compare-systems JUDGE.json NEW BASE``: the gate (:mod:`judge_engine.gate`) on the command line.

Both files are read as ``score`` reads one (:class:`~judge_engine.items.ItemFile`, the same column options), the
items they share are scored through the same backend options and call cache, and the result is printed. Exit
codes, for a CI job: 1 when ``--fail-if-worse`` is given and the new system is significantly worse by more than
``--margin``; 0 otherwise, including "cannot tell" (too few sources for any claim, said in the summary); 2 on bad
input (one line, from :func:`judge_engine.__main__.main`), e.g. a ``--group-col`` with one value for every item or
a different value for each.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

HELP = "the gate: score two systems' outputs on the items they share and exit 1 if the new one is worse"
DESCRIPTION = (
    "Score NEW and BASE (two systems' outputs for the same items, joined on their ids) with an exported judge, "
    "and print the paired difference new - base with a bootstrap interval (whole groups resampled: --group-col, "
    "else items whose input repeats; fewer than 5 sources give no interval and the verdict 'cannot tell'), wins, "
    "losses and ties, and missing scores. With --fail-if-worse the exit code is 1 when the whole interval lies "
    "below -MARGIN, else 0 ('cannot tell' too); bad input exits 2. "
    "Documented in docs/ci-gate.md.")

BAD_ROWS_SHOWN = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("judge", help="JSON written by 'export' (or a bare judge JSON)")
    p.add_argument("new", help="the new system's outputs: CSV, TSV, JSON list or JSONL")
    p.add_argument("base", help="the baseline system's outputs for the same items (same columns)")
    p.add_argument("--fail-if-worse", action="store_true",
                   help="exit 1 when the new system is significantly worse by more than --margin")
    p.add_argument("--margin", type=float, default=0.0,
                   help="drop on the judge's scale that is allowed before failing (default 0)")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report (one test case: the gate)")
    p.add_argument("--summary", metavar="FILE", help="write a short Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("--json", action="store_true", help="print the whole result, per item, as JSON")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--input-col", default="input")
    p.add_argument("--output-col", default="output")
    p.add_argument("--id-col", help="the items' ids, shared by both files (default: the row number)")
    p.add_argument("--group-col", help="the items' source: items of one group are resampled together (without it, "
                                       "items whose input repeats are grouped by their input)")
    p.add_argument("--independent", action="store_true",
                   help="the items are independent: resample items, not their groups or repeated inputs")
    p.add_argument("--context-col")
    p.add_argument("--reference-col")


def _read(path: str, args: argparse.Namespace, aspect: str) -> list[Any]:
    """Every sample of one file; rows that cannot be scored are named (the first few) and left out."""
    from .items import ItemFile

    source = ItemFile(path, input_col=args.input_col, output_col=args.output_col, id_col=args.id_col,
                      context_col=args.context_col, reference_col=args.reference_col, group_col=args.group_col,
                      aspect=aspect)
    bad: list[Exception] = []

    def bad_row(exc: Exception) -> None:
        bad.append(exc)
        if len(bad) <= BAD_ROWS_SHOWN:
            print(f"skipped ({Path(path).name}): {exc}", file=sys.stderr)

    samples = [s for chunk in source.chunks(1000, bad_row) for s in chunk]
    if len(bad) > BAD_ROWS_SHOWN:
        print(f"skipped ({Path(path).name}): {len(bad) - BAD_ROWS_SHOWN} more rows", file=sys.stderr)
    return samples


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or exc}") from None


def main(args: argparse.Namespace) -> int:
    from . import evidence, gate
    from .cli_common import _progress_bar, scoring_config
    from .export import load_judge
    from .llm import make_llm
    from .store import Store

    if not math.isfinite(args.margin) or args.margin < 0:
        raise ValueError(f"--margin must be a number of at least 0 on the judge's scale, not {args.margin}")
    exported = load_judge(Path(args.judge))
    config = scoring_config(exported.llm, args)
    aspect = exported.judge.aspect["name"]
    for option in ("junit", "summary"):  # an unwritable report is named before anything is paid for
        where = getattr(args, option)
        if where and not Path(where).expanduser().resolve().parent.is_dir():
            raise ValueError(f"--{option} {where}: its folder does not exist")
    new, base = _read(args.new, args, aspect), _read(args.base, args, aspect)
    if not new or not base:
        raise ValueError(f"the {'new' if not new else 'base'} file has no items that can be scored")
    gate.shared_ids([s.id for s in new], [s.id for s in base])  # no shared id: said before the backend is made
    if args.group_col and not args.independent:
        problem = evidence.group_problem([s.group_id for s in new], column=f"--group-col {args.group_col!r}")
        if problem:
            raise ValueError(problem + " (give the column of the items' source, or --independent)")
    llm = make_llm(config, store=Store(args.db))
    progress, close = _progress_bar(args.quiet)
    try:
        result = gate.compare_samples(exported.judge, new, base, llm=llm, margin=args.margin, seed=args.seed,
                                      progress=progress, independent=args.independent)
    finally:
        close()
    if args.junit:
        _write(args.junit, gate.junit_xml(result))
    if args.summary:
        _write(args.summary, gate.summary_markdown(result))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        for line in gate.summary_lines(result):
            print(line)
    return 1 if args.fail_if_worse and result.worse else 0
