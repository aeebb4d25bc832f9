"""Meta-evaluate any predictions file against the human scores it carries.

Backs ``python -m judge_engine metaeval FILE``::

    python -m judge_engine metaeval predictions.json \\
        --human-key scores --pred-key predict_scores \\
        [--level sample|group|system] [--group-key doc_id] [--system-key system_id] \\
        [--format json|table] [--bootstrap N] [--seed S] [--confidence C]

FILE is either JSON (a list of records) or JSONL (one record per line). Each
record holds a dict of human scores per aspect under ``--human-key`` and a dict
of predicted scores under ``--pred-key``, e.g. UniEval's released
``*_result.json`` files (``scores`` / ``predict_scores``, ``doc_id``,
``system_id``). Either dict may also be stored as a Python-dict *string*
(``"{'coherence': 3.0}"``); it is parsed with :func:`ast.literal_eval`.

The aspects evaluated are those appearing in both the human and the predicted
dicts; an aspect on one side only (e.g. SummEval's ``ctc_relevance`` metric) is
ignored. A missing or non-numeric predicted value (``None``, NaN, ``"n/a"``, or
no prediction dict at all) counts as a missing prediction: excluded and
reported, never imputed. The correlations themselves come from
:func:`judge_engine.metrics.meta_evaluate`, which follows UniEval's conventions
so published numbers are reproduced.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Hashable, Sequence

from .metrics import COEFFICIENTS, LEVELS, MetaEvalReport, meta_evaluate

__all__ = [
    "MetaEvalError",
    "add_arguments",
    "format_table",
    "load_records",
    "main",
    "metaeval_records",
    "reports_to_json",
]

FORMATS = ("table", "json")


class MetaEvalError(ValueError):
    """A problem with the input file or its records, with a user-facing message."""


# --------------------------------------------------------------------------- loading


def load_records(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Read a JSON list or a JSONL file of records.

    Parameters
    ----------
    path : str or Path
        The file. If its first non-blank character is ``[`` it is read as one
        JSON array, otherwise as JSON Lines (blank lines are skipped).

    Returns
    -------
    records : list of dict
    locations : list of str
        Where each record came from (``"line 3"`` for JSONL, ``"record 3"``
        for a JSON array, 1-based), for error messages.

    Raises
    ------
    MetaEvalError
        The file cannot be read or parsed, or holds something other than
        records (JSON objects); the message names the file and line/record.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise MetaEvalError(f"{path}: file not found") from None
    except UnicodeDecodeError as e:
        raise MetaEvalError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise MetaEvalError(f"{path}: cannot read file ({e.strerror or e})") from None

    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise MetaEvalError(
                f"{path}: line {e.lineno}, column {e.colno}: invalid JSON ({e.msg})"
            ) from None
        records, locations = [], []
        for i, rec in enumerate(data, start=1):
            if not isinstance(rec, dict):
                raise MetaEvalError(
                    f"{path}: record {i}: expected a JSON object, got {type(rec).__name__}"
                )
            records.append(rec)
            locations.append(f"record {i}")
    else:
        records, locations = [], []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise MetaEvalError(
                    f"{path}: line {lineno}, column {e.colno}: invalid JSON ({e.msg})"
                ) from None
            if not isinstance(rec, dict):
                raise MetaEvalError(
                    f"{path}: line {lineno}: expected a JSON object, got {type(rec).__name__}"
                )
            records.append(rec)
            locations.append(f"line {lineno}")
    if not records:
        raise MetaEvalError(f"{path}: no records found")
    return records, locations


# --------------------------------------------------------------------------- records


def _parse_scores(value: Any, *, where: str, key: str) -> dict[str, Any] | None:
    """A score dict, possibly stored as a Python-dict or JSON string; None if absent."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise MetaEvalError(
                    f"{where}: {key!r} is a string that is not a dict literal"
                ) from None
    if not isinstance(value, dict):
        raise MetaEvalError(f"{where}: {key!r} should map aspects to scores, got {type(value).__name__}")
    return value


def _number(value: Any) -> float:
    """Float value, NaN when missing or not numeric."""
    if value is None or isinstance(value, (dict, list, tuple)):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _human_number(value: Any, *, where: str, key: str, aspect: str) -> float:
    if value is None:
        return math.nan
    if not isinstance(value, (int, float, str)):
        raise MetaEvalError(f"{where}: {key}[{aspect!r}] is not a number: {value!r}")
    try:
        return float(value)
    except ValueError:
        raise MetaEvalError(f"{where}: {key}[{aspect!r}] is not a number: {value!r}") from None


def _label(value: Any) -> Hashable:
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def _column(
    records: Sequence[dict[str, Any]],
    key: str | None,
    where: Sequence[str],
    *,
    required: bool,
    purpose: str,
) -> list[Hashable] | None:
    """Labels under ``key``. Required: every record must have it. Optional: used only if all do."""
    if not key:
        if required:
            raise MetaEvalError(f"{purpose} needs a key; none given")
        return None
    missing = [i for i, r in enumerate(records) if key not in r]
    if not missing:
        return [_label(r[key]) for r in records]
    if required:
        raise MetaEvalError(f"{where[missing[0]]}: no {key!r} key ({purpose} needs it)")
    return None


def metaeval_records(
    records: Sequence[dict[str, Any]],
    *,
    human_key: str = "scores",
    pred_key: str = "predict_scores",
    level: str = "sample",
    group_key: str | None = "doc_id",
    system_key: str | None = "system_id",
    n_bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    source: str = "<records>",
    locations: Sequence[str] | None = None,
) -> dict[str, MetaEvalReport]:
    """Meta-evaluate every aspect scored both by humans and by the judge.

    Parameters
    ----------
    records : sequence of dict
        One item each: human scores under ``human_key``, predictions under
        ``pred_key`` (dicts, or Python-dict / JSON strings).
    human_key, pred_key : str
        Keys of the human and predicted score dicts.
    level : {"sample", "group", "system"}
        Meta-evaluation level (see :mod:`judge_engine.metrics`).
    group_key : str or None
        Record key of the group label (article, prompt). Every record must have
        it at group level. At system level it is used (whole groups as
        bootstrap units) when every record has it.
    system_key : str or None
        Record key of the system label. Every record must have it at system
        level; elsewhere used only to report ``n_systems``.
    n_bootstrap : int
        Bootstrap resamples for the CIs (0 disables them).
    seed : int or None
        Bootstrap seed.
    confidence : float
        CI coverage.
    source : str
        Name used in error messages (the file name).
    locations : sequence of str, optional
        Per-record location used in error messages (``"line 4"``); defaults to
        ``"record i"`` (1-based).

    Returns
    -------
    dict
        Aspect name → :class:`~judge_engine.metrics.MetaEvalReport`, in the
        order aspects first appear among the human scores.

    Raises
    ------
    MetaEvalError
        Records lack the human key, a needed group/system key, hold malformed
        score dicts, or share no aspect between human and predicted scores.
    """
    if level not in LEVELS:
        raise MetaEvalError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    if not records:
        raise MetaEvalError(f"{source}: no records")
    if locations is None:
        locations = [f"record {i}" for i in range(1, len(records) + 1)]
    where = [f"{source}: {loc}" for loc in locations]

    humans: list[dict[str, Any]] = []
    preds: list[dict[str, Any]] = []
    pred_seen = False
    for rec, w in zip(records, where):
        if human_key not in rec:
            raise MetaEvalError(f"{w}: no {human_key!r} key (human scores)")
        h = _parse_scores(rec[human_key], where=w, key=human_key)
        humans.append(h or {})
        pred_seen = pred_seen or pred_key in rec
        try:
            p = _parse_scores(rec.get(pred_key), where=w, key=pred_key)
        except MetaEvalError:
            p = None  # an unparseable prediction dict is a parse failure: all missing
        preds.append(p or {})
    if not pred_seen:
        raise MetaEvalError(f"{source}: no record has a {pred_key!r} key (predicted scores)")

    human_aspects = list(dict.fromkeys(a for h in humans for a in h))
    pred_aspects = {a for p in preds for a in p}
    aspects = [a for a in human_aspects if a in pred_aspects]
    if not aspects:
        raise MetaEvalError(
            f"{source}: no aspect is scored under both {human_key!r} "
            f"({', '.join(map(str, human_aspects)) or 'none'}) and {pred_key!r} "
            f"({', '.join(sorted(map(str, pred_aspects))) or 'none'})"
        )

    groups = _column(
        records, group_key, where, required=level == "group", purpose="group level"
    )
    systems = _column(
        records, system_key, where, required=level == "system", purpose="system level"
    )

    reports: dict[str, MetaEvalReport] = {}
    for aspect in aspects:
        hv = [
            _human_number(h.get(aspect), where=w, key=human_key, aspect=str(aspect))
            for h, w in zip(humans, where)
        ]
        pv = [_number(p.get(aspect)) for p in preds]
        reports[str(aspect)] = meta_evaluate(
            hv,
            pv,
            level=level,
            groups=groups if level in ("group", "system") else None,
            systems=systems,
            n_bootstrap=n_bootstrap,
            confidence=confidence,
            seed=seed,
        )
    return reports


# --------------------------------------------------------------------------- output


def reports_to_json(reports: dict[str, MetaEvalReport]) -> dict[str, dict[str, Any]]:
    """``{aspect: {"pearson", "spearman", "kendall", "n", ...rest of to_dict}}``; NaN → None."""
    out: dict[str, dict[str, Any]] = {}
    for aspect, rep in reports.items():
        d = rep.to_dict()
        head = {k: d.pop(k) for k in (*COEFFICIENTS, "n")}
        out[aspect] = {**head, **d}
    return out


def _fmt(x: float, digits: int = 4) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def format_table(reports: dict[str, MetaEvalReport], *, confidence: float = 0.95) -> str:
    """A readable aligned table: one row per aspect, each coefficient with its CI."""
    if not reports:
        return "(no aspects)"
    first = next(iter(reports.values()))
    header = ["aspect", "n", "missing"]
    if first.level == "group":
        header += ["groups", "skipped"]
    header += [f"{m} [{confidence:.0%} CI]" for m in COEFFICIENTS]
    rows = []
    for aspect, rep in reports.items():
        row = [aspect, str(rep.n), str(rep.n_missing)]
        if rep.level == "group":
            row += [str(rep.n_groups), str(rep.groups_skipped)]
        for m in COEFFICIENTS:
            c = getattr(rep, m)
            ci = "" if math.isnan(c.ci_low) else f" [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]"
            row.append(_fmt(c.value) + ci)
        rows.append(row)
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    title = f"{first.level}-level correlations"
    if first.level == "system":
        title += f" over {first.n_systems} systems"
    out = [title, line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------- CLI


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``metaeval`` command's arguments to ``parser``."""
    parser.add_argument("file", help="predictions file: a JSON list of records, or JSONL")
    parser.add_argument(
        "--human-key", default="scores", help="record key of the human score dict (default: scores)"
    )
    parser.add_argument(
        "--pred-key",
        default="predict_scores",
        help="record key of the predicted score dict (default: predict_scores)",
    )
    parser.add_argument(
        "--level", choices=LEVELS, default="sample", help="meta-evaluation level (default: sample)"
    )
    parser.add_argument(
        "--group-key",
        default="doc_id",
        help="record key of the group (article, prompt); needed at group level (default: doc_id)",
    )
    parser.add_argument(
        "--system-key",
        default="system_id",
        help="record key of the system; needed at system level (default: system_id)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    parser.add_argument(
        "--bootstrap",
        type=_non_negative_int,
        default=1000,
        metavar="N",
        help="bootstrap resamples for confidence intervals, 0 to disable (default: 1000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    parser.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        help="confidence level of the intervals (default: 0.95)",
    )


def main(args: argparse.Namespace) -> int:
    """Run the ``metaeval`` command; returns the exit code (2 on bad input)."""
    confidence = getattr(args, "confidence", 0.95)
    try:
        records, locations = load_records(args.file)
        reports = metaeval_records(
            records,
            human_key=args.human_key,
            pred_key=args.pred_key,
            level=args.level,
            group_key=args.group_key,
            system_key=args.system_key,
            n_bootstrap=args.bootstrap,
            seed=args.seed,
            confidence=confidence,
            source=str(args.file),
            locations=locations,
        )
    except MetaEvalError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.format == "json":
        text = json.dumps(reports_to_json(reports), indent=2)
    else:
        text = format_table(reports, confidence=confidence)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # output piped into e.g. `head`, which exited early
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":  # pragma: no cover - the package CLI is the usual entry point
    _parser = argparse.ArgumentParser(prog="python -m judge_engine.metaeval", description=__doc__.splitlines()[0])
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
