"""Command line: ``python -m judge_engine {run,resume,runs,metaeval,datasets} ...``.

Examples
--------
python -m judge_engine run --method geval --dataset summeval --aspect coherence --train 30 --test 20
python -m judge_engine metaeval preds.jsonl --human-key scores --pred-key predict_scores --level group --group-key doc_id
"""

from __future__ import annotations

import argparse
import json
import sys

from tqdm import tqdm


def _progress_bar(quiet: bool):
    bars: dict[str, tqdm] = {}

    def progress(done: int, total: int, stage: str) -> None:
        if quiet:
            return
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[stage] = tqdm(total=total, desc=stage, unit="item", file=sys.stderr)
        bar.total = total
        bar.n = done
        bar.refresh()

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close


def cmd_run(args: argparse.Namespace) -> int:
    from .llm import LLMConfig
    from .runs import RunSpec, create_run, execute_run
    from .store import Store

    params = json.loads(args.params) if args.params else {}
    llm = LLMConfig(backend=args.backend, model=args.model or "", base_url=args.base_url or "",
                    concurrency=args.concurrency)
    store = Store(args.db)
    spec = RunSpec(method=args.method, dataset=args.dataset, aspect=args.aspect, params=params,
                   train_size=args.train, test_size=args.test, seed=args.seed, llm=llm)
    run_id = create_run(store, spec)
    return _execute(store, run_id, quiet=args.quiet)


def _execute(store, run_id: int, *, quiet: bool) -> int:
    from .runs import execute_run

    progress, close = _progress_bar(quiet)
    try:
        summary = execute_run(store, run_id, progress=progress)
    finally:
        close()
    print(json.dumps({"run_id": run_id, **summary}, indent=2))
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from .store import Store

    return _execute(Store(args.db), args.run_id, quiet=args.quiet)


def cmd_runs(args: argparse.Namespace) -> int:
    from .runs import effective_status
    from .store import Store

    for r in Store(args.db).list_runs(limit=args.limit):
        corr = (r.get("summary") or {}).get("correlations") or {}
        print(f"{r['id']:>5}  {effective_status(r):<11} {r['method']:<10} {r['dataset']}/{r['aspect']:<16} "
              f"{r['done']}/{r['total']}  spearman={corr.get('spearman')}")
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    from . import data

    for name in data.available_benchmarks():
        spec = data.BENCHMARKS[name]
        print(f"{name:<16} {spec.task}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import metaeval

    parser = argparse.ArgumentParser(prog="python -m judge_engine", description="Judge Workbench engine")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="fit a judge on a split and score the test items")
    run.add_argument("--method", required=True, help="direct, geval, ...")
    run.add_argument("--dataset", required=True, help="a built-in benchmark or an imported dataset name")
    run.add_argument("--aspect", required=True)
    run.add_argument("--train", type=int, default=30, help="training items (default 30)")
    run.add_argument("--test", type=int, default=40, help="test items (default 40)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--params", help="method parameters as JSON, e.g. '{\"n_samples\": 10}'")
    run.add_argument("--backend", default="llamacpp", choices=["llamacpp", "openai", "vllm"])
    run.add_argument("--model", help="model name (openai/vllm) or GGUF path (llamacpp)")
    run.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    run.add_argument("--concurrency", type=int, default=4)
    run.set_defaults(func=cmd_run)

    resume = sub.add_parser("resume", help="continue an interrupted or failed run")
    resume.add_argument("run_id", type=int)
    resume.set_defaults(func=cmd_resume)

    runs = sub.add_parser("runs", help="list stored runs")
    runs.add_argument("--limit", type=int, default=20)
    runs.set_defaults(func=cmd_runs)

    datasets = sub.add_parser("datasets", help="list the built-in benchmarks found")
    datasets.set_defaults(func=cmd_datasets)

    for p in (run, resume, runs):
        p.add_argument("--db", default=None, help="database file (default $JUDGE_WORKBENCH_DB or data/workbench.db)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    me = sub.add_parser("metaeval", help="correlate predicted with human scores in any predictions file")
    metaeval.add_arguments(me)
    me.set_defaults(func=metaeval.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .data import DataImportError
    from .llm import LLMError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (LLMError, DataImportError, ValueError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
