"""The commands that write what a run made: ``export`` (its judge as a JSON model card) and ``verdicts``
(CSV or JSONL).

Out of :mod:`judge_engine.__main__`, which keeps the parser."""

from __future__ import annotations

import argparse
import sys


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_judge
    from .store import Store

    text = export_judge(Store(args.db), args.run_id)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as exc:
            raise ValueError(f"cannot write {args.out}: {exc.strerror or exc}") from None
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0


def cmd_verdicts(args: argparse.Namespace) -> int:
    from .export import verdict_table, verdicts_text
    from .store import Store

    text = verdicts_text(verdict_table(Store(args.db), args.run_id), args.format)
    if args.out:
        # newline="": the CSV text already ends its lines as CSV wants (\r\n); no translation on any OS
        try:
            with open(args.out, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        except OSError as exc:
            raise ValueError(f"cannot write {args.out}: {exc.strerror or exc}") from None
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
