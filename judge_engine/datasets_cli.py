"""``judge-workbench datasets``: list the built-in benchmarks, fetch them, import your own file.

``datasets`` (or ``datasets list``) lists every built-in benchmark with its source, license, size and
whether it is in the data folder; ``datasets fetch NAME``/``--all`` downloads into that folder
(:func:`judge_engine.data.fetch_benchmark`); ``datasets import FILE --name N`` imports a CSV/TSV/JSONL/JSON
file into the database with the Datasets page's own importer (:func:`judge_engine.data.importing.import_table`).
A problem is one line on standard error and exit code 2 (``__main__.main`` catches the ValueError).
"""

from __future__ import annotations

import argparse
import sys

from . import data
from .data import fetch as fetching
from .data.importing import ImportColumns, import_table, rows_read
from .paths import db_help

SEPARATOR_NAMES = {"comma": ",", "semicolon": ";", "tab": "\t", "bar": "|"}
QUOTE_NAMES = {"double": '"', "single": "'"}
DECIMAL_NAMES = {"dot": ".", "comma": ","}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="datasets_action", metavar="{list,fetch,import,import-mlflow,import-labels}",
                                    help="without one: list")
    actions.add_parser("list", help="every built-in benchmark: source, license, size, whether it is here")
    fetch = actions.add_parser("fetch", help="download built-in benchmarks into the data folder (checksummed)")
    fetch.add_argument("names", nargs="*", metavar="NAME", help=f"one or more of {', '.join(data.BENCHMARKS)}")
    fetch.add_argument("--all", action="store_true", help="every built-in benchmark")
    fetch.add_argument("--quiet", action="store_true", help="no progress bar")
    fetch.add_argument("--replace", action="store_true",
                       help="download again a file here whose bytes are not the published ones (`datasets` lists it "
                            "as damaged); the old one is kept beside it as FILE.damaged")
    imp = actions.add_parser("import", help="import your own CSV/TSV/JSONL/JSON file of human-scored outputs")
    imp.add_argument("file", help="CSV, TSV, JSONL or JSON list, one scored output per row")
    imp.add_argument("--name", required=True, help="the dataset's name in the database (not one already stored)")
    imp.add_argument("--input-col", required=True, help="what the output was generated from")
    imp.add_argument("--output-col", required=True, help="the text the humans scored")
    imp.add_argument("--score-col", action="append", required=True, metavar="COLUMN",
                     help="a human-score column, one aspect each (repeat for several)")
    imp.add_argument("--group-col", help="outputs for the same input share a group (default: each row its own)")
    imp.add_argument("--system-col", help="the system that wrote the output")
    imp.add_argument("--id-col", help="sample id (default: the row number)")
    imp.add_argument("--context-col", help="extra grounding, e.g. a fact")
    imp.add_argument("--reference-col", help="a reference output")
    imp.add_argument("--range", action="append", default=[], metavar="COLUMN=LOW:HIGH",
                     help="a score's scale, e.g. quality=1:5 (default: lowest and highest in the file)")
    imp.add_argument("--task", default="", help="the task, used in prompts (e.g. 'summarization of reviews')")
    imp.add_argument("--duplicates", choices=list(data.DUPLICATE_CHOICES), default="keep",
                     help="rows with the same input and output: keep them apart (default) or merge each into one")
    imp.add_argument("--separator", choices=list(SEPARATOR_NAMES), help="CSV cell separator (default: detected)")
    imp.add_argument("--quote", choices=list(QUOTE_NAMES), help="CSV quote character (default: detected)")
    imp.add_argument("--decimal", choices=list(DECIMAL_NAMES), help="CSV decimal mark (default: detected)")
    imp.add_argument("--db", default=None, help=db_help())  # the file an installed package uses, not the clone's
    ml = actions.add_parser("import-mlflow", help="traces with human assessments from an MLflow tracking store "
                                                  "(needs: pip install 'judge-workbench[integrations]')")
    ml.add_argument("--tracking-uri", required=True, help="e.g. sqlite:///mlruns.db or http://localhost:5000")
    ml.add_argument("--experiment", required=True, help="the experiment's name")
    ml.add_argument("--assessment", required=True, help="the feedback's name, e.g. helpfulness")
    _label_arguments(ml, default_name="the experiment's name")
    tool = actions.add_parser("import-labels", help="a Label Studio or Argilla export, or Langfuse scores: one "
                                                    "row per item, one label per annotator")
    tool.add_argument("tool", choices=["label-studio", "argilla", "langfuse"])
    tool.add_argument("file", help="the tool's export (Label Studio JSON; Argilla JSON/JSONL; Langfuse scores "
                                   "CSV/JSON)")
    tool.add_argument("--question", help="the rating/number/choices control (Label Studio, found when there is "
                                         "one), the question (Argilla) or the score's name (Langfuse)")
    tool.add_argument("--input-key", default="input", help="the field holding what the output answers")
    tool.add_argument("--output-key", default="output", help="the field holding the judged text")
    tool.add_argument("--traces", help="Langfuse: the trace export (JSON/CSV with id, input, output)")
    tool.add_argument("--aspect", help="the aspect's name (default: the question's)")
    _label_arguments(tool, default_name="the file's name")


def _label_arguments(parser: argparse.ArgumentParser, *, default_name: str) -> None:
    """Options every import of another tool's labels shares (the scale, the name, the database)."""
    parser.add_argument("--name", help=f"the dataset's name in the database (default: {default_name})")
    parser.add_argument("--value", action="append", default=[], metavar="LABEL=NUMBER",
                        help="a category's number on the scale, e.g. good=1 (default: booleans false=0 true=1, "
                             "categories 0, 1, 2, ... in sorted order; numbers as they are)")
    parser.add_argument("--range", metavar="LOW:HIGH", help="the scale's ends (default: the lowest and highest)")
    parser.add_argument("--task", default="", help="the task, used in prompts (e.g. 'answering support questions')")
    parser.add_argument("--db", default=None, help=db_help())


def main(args: argparse.Namespace) -> int:
    action = getattr(args, "datasets_action", None)
    if action == "fetch":
        return fetch(args)
    if action == "import":
        return import_file(args)
    if action == "import-mlflow":
        return import_mlflow(args)
    if action == "import-labels":
        return import_labels(args)
    return list_benchmarks()


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def list_benchmarks() -> int:
    where, why = data.data_dir_origin()
    print(f"Benchmarks are read from {where} ({why}).")
    statuses = fetching.benchmark_status(where)
    for status in statuses:
        source = status.spec.source
        state = "damaged" if status.damaged else "here" if status.here else "not downloaded"
        print(f"{status.name:<16} {state:<15} {_size(source.size):>7}  {source.license:<8}  {source.label}  "
              f"{status.spec.task}")
    for status in statuses:
        for path in status.damaged:
            print(f"{status.name}: {path} is not the published file (its sha256 differs: cut or edited); fetch it "
                  f"again with: judge-workbench datasets fetch {status.name} --replace (the old one is kept as "
                  f"{path.name}.damaged)")
    if not all(s.here or s.damaged for s in statuses):
        print(f"Download: judge-workbench datasets fetch NAME (or --all); from a mirror: set {fetching.DATA_URL_ENV}.")
    return 0


def fetch(args: argparse.Namespace) -> int:
    names = list(data.BENCHMARKS) if args.all else args.names
    if not names:
        raise ValueError(f"name a benchmark to fetch ({', '.join(data.BENCHMARKS)}) or give --all")
    for name in names:
        data.benchmarks._spec(name)  # an unknown name is refused before anything is downloaded
    where = data.default_data_dir()
    mirror = fetching.mirror_url()
    for name in names:
        spec = data.BENCHMARKS[name]
        origin = mirror or f"{spec.source.label} ({spec.source.license})"
        bars = []  # drawn at the first byte: an unreachable source leaves its one-line message alone

        def progress(done: int, total: int) -> None:
            if args.quiet:
                return
            if not bars:
                from tqdm import tqdm

                bars.append(tqdm(total=total, desc=name, unit="B", unit_scale=True, file=sys.stderr, leave=False))
            bars[0].n = done
            bars[0].refresh()

        try:
            result = fetching.fetch_benchmark(name, where, progress=progress, replace_damaged=args.replace)
        finally:
            for bar in bars:
                bar.close()
        said = "downloaded from" if result.downloaded else "already here; published at"
        print(f"{name}: {said} {origin} -> {result.folder}")
    return 0


def _dialect(args: argparse.Namespace) -> data.CsvDialect | None:
    if not (args.separator or args.quote or args.decimal):
        return None  # detected by the import
    found = data.detect_dialect(args.file) or data.CsvDialect()
    return data.CsvDialect(SEPARATOR_NAMES[args.separator] if args.separator else found.delimiter,
                           QUOTE_NAMES[args.quote] if args.quote else found.quotechar,
                           DECIMAL_NAMES[args.decimal] if args.decimal else found.decimal)


def _ranges(specs: list[str]) -> dict[str, tuple[float, float]]:
    ranges = {}
    for text in specs:
        column, _, scale = text.partition("=")
        low, _, high = scale.partition(":")
        try:
            ranges[column.strip()] = (float(low), float(high))
        except ValueError:
            raise ValueError(f"--range {text!r} must read COLUMN=LOW:HIGH, e.g. quality=1:5") from None
    return ranges


def import_file(args: argparse.Namespace) -> int:
    from .store import Store

    columns = ImportColumns(input=args.input_col, output=args.output_col, scores=tuple(args.score_col),
                            group=args.group_col, system=args.system_col, id=args.id_col,
                            context=args.context_col, reference=args.reference_col)
    ranges = _ranges(args.range)
    dataset, warnings = import_table(Store(args.db), args.file, name=args.name, columns=columns,
                                     aspect_ranges=ranges, task=args.task.strip(), dialect=_dialect(args),
                                     duplicates=args.duplicates)
    read = rows_read(dataset)
    merged = read - len(dataset.samples)
    left_out = (f"{merged} duplicate row(s) merged into others (--duplicates merge)" if merged
                else "no row left out")
    print(f"Imported {args.file} as {dataset.name!r}: {read} rows -> {len(dataset.samples)} samples, "
          f"aspects {', '.join(dataset.aspect_names)}; {left_out}.")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _range(text: str | None) -> tuple[float, float] | None:
    if not text:
        return None
    low, _, high = text.partition(":")
    try:
        return float(low), float(high)
    except ValueError:
        raise ValueError(f"--range {text!r} must read LOW:HIGH, e.g. 1:5") from None


def import_mlflow(args: argparse.Namespace) -> int:
    from .integrations.labels import parse_mapping
    from .integrations.mlflow_traces import import_mlflow as read
    from .store import Store

    result = read(Store(args.db), args.tracking_uri, args.experiment, args.assessment, name=args.name,
                  mapping=parse_mapping(args.value), value_range=_range(args.range), task=args.task.strip())
    print(f"Imported {args.assessment!r} of MLflow experiment {args.experiment!r} as {result.dataset.name!r}: "
          f"{result.summary()}")
    return 0


def import_labels(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .integrations.annotation_exports import import_labels as read
    from .integrations.labels import parse_mapping
    from .store import Store

    result = read(Store(args.db), args.tool, args.file, name=args.name or Path(args.file).stem,
                  question=args.question, input_key=args.input_key, output_key=args.output_key,
                  traces=args.traces, aspect=args.aspect, mapping=parse_mapping(args.value),
                  value_range=_range(args.range), task=args.task.strip())
    print(f"Imported {args.file} ({args.tool}) as {result.dataset.name!r}: {result.summary()}")
    return 0
