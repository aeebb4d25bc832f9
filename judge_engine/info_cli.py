"""The commands that describe the tool itself: ``docs`` (where the documents are) and ``methods`` (the methods
with their parameters and paper defaults).

Out of :mod:`judge_engine.__main__`, which keeps the parser."""

from __future__ import annotations

import argparse
import json


def cmd_docs(args: argparse.Namespace) -> int:
    from .launcher import docs_dir, document, documents

    if args.name:
        print(document(args.name))
        return 0
    print(f"The README's docs/ links, in {docs_dir()}:")
    for name, path, title in documents():
        print(f"  {name:16} {path}  ({title})" if title else f"  {name:16} {path}")
    return 0

def cmd_methods(args: argparse.Namespace) -> int:
    from .methods import METHODS, describe_parameters

    names = [args.name] if args.name else sorted(METHODS)
    if args.name and args.name not in METHODS:
        from .methods import get_method
        get_method(args.name)  # raises the message with a close match
    for name in names:
        cls = METHODS[name]
        summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        prefix = f"{cls.title}:"
        summary = summary[len(prefix):].strip() if summary.startswith(prefix) else summary
        print(f"{name}  {cls.title}: {summary}")
        if cls.quick_params:
            print(f"    quick first look (the pages' button): {json.dumps(cls.quick_params)}")
            for smaller in cls.smaller_looks:
                print(f"      smaller, on a backend too slow for it to end in 3 minutes: {json.dumps(smaller)}")
        for p in describe_parameters(cls):
            allowed = f" [{p.allowed}]" if p.allowed else ""
            print(f"    {p.name} = {json.dumps(p.default)}{allowed}  ({p.label})")
            if p.text:
                print(f"        {p.text}")
        print()
    return 0
