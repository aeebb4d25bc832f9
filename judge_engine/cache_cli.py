"""``judge-workbench cache``: how much the call cache holds, and clearing it (all of it, a model's, or older calls).

Out of :mod:`judge_engine.__main__` as :mod:`judge_engine.datasets_cli` is: the command's printing lives here, the
cache's queries in :mod:`judge_engine.store_cache`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


def main(args: argparse.Namespace) -> int:
    """``judge-workbench cache``: the call cache's size by backend and model, or ``--clear`` (by model, by age)."""
    from .store import Store, default_db_path
    from .store_cache import cache_size, clear_cache, older_than_days

    days = older_than_days(args.older_than) if args.older_than is not None else None
    if not args.clear and (args.model is not None or days is not None):
        raise ValueError("--model and --older-than choose what --clear deletes; add --clear (nothing was deleted)")
    where = Path(args.db) if args.db else default_db_path()
    if not where.is_file():  # a report must not make an empty database where there was none
        raise ValueError(f"no database at {where}")
    store = Store(where)
    if args.clear:
        done = clear_cache(store, model=args.model, older_than=days)
        what = " and ".join(part for part in (f"of model {args.model!r}" if args.model is not None else "",
                                              f"older than {days:g} days" if days is not None else "") if part)
        print(f"deleted {done.rows:,} cached calls{' ' + what if what else ''} ({_size(done.bytes)} of text); "
              f"{done.rows_left:,} left; {where} went from {_size(done.file_bytes_before)} to "
              f"{_size(done.file_bytes_after)} after VACUUM")
        return 0
    size = cache_size(store)
    print(f"{where}: {_size(size.file_bytes)} on disk; call cache {size.rows:,} rows, {_size(size.bytes)} of text")
    for g in size.groups:
        since = time.strftime("%Y-%m-%d", time.localtime(g.oldest)) if g.oldest else "?"
        print(f"  {g.backend or '?'}  {g.model or '(default model)'}: {g.rows:,} rows, {_size(g.bytes)}, since {since}")
    return 0
