"""Command line: ``judge-workbench {app,run,methods,resume,runs,probes,export,verdicts,score,compare-systems,metaeval,datasets,cache} ...``.

``python -m judge_engine`` is the same command under another name.

Examples
--------
judge-workbench app --port 8501
python -m judge_engine run --method geval --dataset summeval --aspect coherence --train 30 --test 40
python -m judge_engine export 3 --out judge.json
python -m judge_engine verdicts 3 --format csv --out run-3-verdicts.csv
python -m judge_engine score judge.json new_items.jsonl --out scores.jsonl
python -m judge_engine metaeval preds.jsonl --human-key scores --pred-key predict_scores --level group --group-key doc_id
"""

from __future__ import annotations

import sys

try:  # a Ctrl-C in the first tenth of a second, while these load: one line, not a traceback
    import argparse
    import os

    from .launcher import cmd_app, missing_extra
    from .paths import db_help

    # each command group in its own module; they import only the standard library at start
    from .cli_common import (_progress_bar, prices, price_arguments, require_backend,  # noqa: F401
                             scoring_backend_arguments, scoring_config)
    from .export_cli import cmd_export, cmd_verdicts
    from .info_cli import cmd_docs, cmd_methods
    from .probes_cli import cmd_probes, cmd_stress
    from .run_cli import _execute, _keep_probes, cmd_resume, cmd_run, cmd_runs  # noqa: F401
except KeyboardInterrupt:
    sys.stderr.write("stopped by Ctrl-C\n")
    raise SystemExit(130) from None


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
