"""Take a finished judge away and use it anywhere: a versioned JSON model card, and scoring new files.

An exported judge is one JSON document: the :class:`~judge_engine.methods.Judge`
(method, parameters, everything it learned: rubric, criteria, tree,
strategy, demos, aggregator weights), the backend settings it was fitted
with (never an API key), and its meta-evaluation and cost: a small model
card. :func:`load_judge` reads it back (or a bare Judge JSON), and
:func:`score_file` scores a CSV/JSONL file with it through the cached LLM path.

:func:`verdict_table` is a run's verdicts as one table (the Runs page's download and
``python -m judge_engine verdicts`` both write it with :func:`verdicts_text`); its CSV
goes through :mod:`judge_engine.spreadsheet`, so no cell runs as a formula.

From Python::

    import judge_engine
    judge = judge_engine.load_judge("judge.json")
    scores = judge.score_table(frame)  # a pandas DataFrame with input and output columns
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from . import data, spreadsheet
from .llm import LLM, LLMConfig, make_llm
from .methods import Judge
from .records import Dataset, Sample, Verdict, missing_reason  # noqa: F401  (part of this module's API)
from .store import NotFound, Store
from .score_files import judge_fingerprint, verdict_record  # noqa: F401  (part of this module's API)

CARD_FORMAT = "judge-workbench/judge"
CARD_VERSION = 1


@dataclass(frozen=True)
class ExportedJudge:
    """A judge read back from JSON, with the backend it was made with and its card."""

    judge: Judge
    """Ready to ``score``."""
    llm: LLMConfig
    """Backend settings stored with it (the default embedded model for a bare judge)."""
    card: dict[str, Any]
    """The whole document (meta-evaluation, cost, provenance)."""

    def score_table(self, table: Any, *, input_col: str = "input", output_col: str = "output",
                    id_col: str | None = None, context_col: str | None = None, reference_col: str | None = None,
                    llm: LLMConfig | LLM | None = None, db: str | Path | None = None,
                    progress: Callable[[int, int, str], None] | None = None) -> Any:
        """Score the rows of a pandas DataFrame; one row out per row in, in order.

        Columns out: ``id`` (``id_col``, else a column named ``id``, else the rows numbered from 1 as ``score``
        numbers a file's rows, or the table's own index when it is not 0, 1, 2, ...), ``score`` (on the judge's human scale; ``<NA>``
        when the reply gave none: a missing score is never a number), ``missing``, ``missing_reason`` and
        ``explanation``. ``llm`` replaces the backend the judge was made with (an :class:`LLMConfig`, e.g. the same
        model on your own server, or an LLM already made with :func:`make_llm`); every call goes through the
        call cache in ``db`` (default database), so scoring the same rows again costs nothing.
        """
        import pandas as pd

        samples = table_samples(table, input_col=input_col, output_col=output_col, id_col=id_col,
                                context_col=context_col, reference_col=reference_col)
        ids = [s.id for s in samples]
        client = llm if isinstance(llm, LLM) else make_llm(llm or self.llm, store=Store(db))
        verdicts = {v.sample_id: v for v in self.judge.score(samples, llm=client, progress=progress)}
        rows = [verdicts[i] for i in ids]
        return pd.DataFrame({"id": ids,
                             "score": pd.array([None if v.missing else v.score for v in rows], dtype="Float64"),
                             "missing": [v.missing for v in rows],
                             "missing_reason": [missing_reason(v) for v in rows],
                             "explanation": [v.explanation for v in rows]})

    def compare(self, new: Any, base: Any, *, input_col: str = "input", output_col: str = "output",
                id_col: str | None = None, group_col: str | None = None, context_col: str | None = None,
                reference_col: str | None = None, margin: float = 0.0, llm: LLMConfig | LLM | None = None,
                db: str | Path | None = None, seed: int = 0,
                progress: Callable[[int, int, str], None] | None = None, independent: bool = False) -> Any:
        """The gate from Python: score two systems' outputs (pandas DataFrames with the same columns) on the ids
        they share and compare them; a :class:`judge_engine.gate.GateResult`.

        The same as ``judge-workbench compare-systems``: ``margin`` is the drop on the judge's scale that is
        allowed, ``group_col`` the items' source (whole groups are resampled; without it, items whose input
        repeats; ``independent=True`` resamples items; fewer than 5 sources: verdict "cannot tell").
        ``judge_engine.gate.assert_not_worse(result)`` fails a test with the summary.
        """
        from .gate import compare_samples

        columns = dict(input_col=input_col, output_col=output_col, id_col=id_col, context_col=context_col,
                       reference_col=reference_col, group_col=group_col)
        client = llm if isinstance(llm, LLM) else make_llm(llm or self.llm, store=Store(db))
        return compare_samples(self.judge, table_samples(new, **columns), table_samples(base, **columns),
                               llm=client, margin=margin, seed=seed, progress=progress, independent=independent)

    def stress(self, table: Any, *, input_col: str = "input", output_col: str = "output",
               id_col: str | None = None, group_col: str | None = None, context_col: str | None = None,
               reference_col: str | None = None, transformations: Sequence[str] | None = None,
               table_file: str | Path | None = None, seed: int = 0, llm: LLMConfig | LLM | None = None,
               db: str | Path | None = None, progress: Callable[[int, int, str], None] | None = None) -> Any:
        """Stress-test the judge on the rows of a pandas DataFrame; a :class:`judge_engine.stress.StressReport`.

        The same as ``judge-workbench stress``: each row's output and its perturbed twins are scored through the
        call cache in ``db``; ``transformations`` default to the table's for the judge's aspect (``table_file``:
        a user's copy of the table). ``group_col`` names each row's source, so another group's output is another
        source's (default: every row its own group).
        """
        from .stress import load_table, stress

        samples = table_samples(table, input_col=input_col, output_col=output_col, id_col=id_col,
                                context_col=context_col, reference_col=reference_col, group_col=group_col)
        client = llm if isinstance(llm, LLM) else make_llm(llm or self.llm, store=Store(db))
        return stress(self.judge, samples, self.judge.aspect["name"], llm=client, transformations=transformations,
                      table=load_table(table_file), seed=seed, progress=progress)

    def to_mlflow_scorer(self, *, name: str | None = None, llm: LLMConfig | LLM | None = None,
                         db: str | Path | None = None) -> Any:
        """This judge as a scorer for ``mlflow.genai.evaluate(data=..., scorers=[...])``: its score, explanation
        and missing reason as feedback with the judge's fingerprint as the source, every call through the LLM
        path and the call cache in ``db`` (:mod:`judge_engine.integrations.mlflow_scorer`; needs mlflow)."""
        from .integrations.mlflow_scorer import mlflow_scorer

        return mlflow_scorer(self, name=name, llm=llm, db=db)

    def to_inspect_scorer(self, *, llm: LLMConfig | LLM | None = None, db: str | Path | None = None) -> Any:
        """This judge as an inspect_ai scorer (needs inspect-ai; :mod:`judge_engine.integrations.eval_frameworks`)."""
        from .integrations.eval_frameworks import inspect_scorer

        return inspect_scorer(self, llm=llm, db=db)

    def to_deepeval_metric(self, *, threshold: float = 0.5, llm: LLMConfig | LLM | None = None,
                           db: str | Path | None = None) -> Any:
        """This judge as a DeepEval metric (needs deepeval; :mod:`judge_engine.integrations.eval_frameworks`)."""
        from .integrations.eval_frameworks import deepeval_metric

        return deepeval_metric(self, threshold=threshold, llm=llm, db=db)

    def score_file(self, path: str | Path, out: str | Path, *, input_col: str = "input", output_col: str = "output",
                   id_col: str | None = None, context_col: str | None = None, reference_col: str | None = None,
                   human_col: str | None = None, fmt: str | None = None, llm: LLMConfig | LLM | None = None,
                   db: str | Path | None = None, progress: Callable[[int, int, str], None] | None = None,
                   bad_row: Callable[[Exception], None] | None = None, retry_missing: bool = False) -> dict[str, Any]:
        """Score a CSV/TSV/JSONL file of any size into ``out`` (JSONL, or CSV for a ``.csv`` name or ``fmt``).

        The same as ``judge-workbench score``: read a chunk at a time, each verdict written as it is known,
        resumed when ``out`` already holds some of them (its missing items scored again with ``retry_missing``),
        rows that cannot be scored given to ``bad_row`` and left out, an item whose request keeps failing written
        missing with the reason. ``llm`` may be an :class:`LLMConfig` with its own ``timeout`` and ``max_retries``.
        Returns the summary (items scored, skipped, left out, missing by reason, correlations with ``human_col``).
        """
        from .items import ItemFile
        from .score_files import score_file

        source = ItemFile(path, input_col=input_col, output_col=output_col, id_col=id_col, context_col=context_col,
                          reference_col=reference_col, human_col=human_col, aspect=self.judge.aspect["name"])
        client = llm if isinstance(llm, LLM) else make_llm(llm or self.llm, store=Store(db))
        return score_file(self.judge, source, llm=client, out=out, fmt=fmt, progress=progress, bad_row=bad_row,
                          retry_missing=retry_missing)


def table_samples(table: Any, *, input_col: str = "input", output_col: str = "output", id_col: str | None = None,
                  context_col: str | None = None, reference_col: str | None = None,
                  group_col: str | None = None) -> list[Sample]:
    """The rows of a pandas DataFrame as samples to score (ids from ``id_col``, else a column named ``id``, else
    the rows numbered from 1, or the table's own index); ValueError naming a column that is not there or ids that
    repeat."""
    import pandas as pd

    from .items import DEFAULT_ID_COL

    for role, col in (("input_col", input_col), ("output_col", output_col), ("id_col", id_col),
                      ("context_col", context_col), ("reference_col", reference_col), ("group_col", group_col)):
        if col is not None and col not in table.columns:
            raise ValueError(f"{role}={col!r} is not a column of the table (its columns: "
                             f"{', '.join(map(str, table.columns))})")

    def text(row: Any, col: str | None) -> str | None:
        if col is None:
            return None
        value = row[col]
        return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)

    if id_col is None and DEFAULT_ID_COL in table.columns:
        id_col = DEFAULT_ID_COL  # the table's own ids, as score takes a file's column named id
    # without ids: a default index (0, 1, 2, ...) numbers the rows from 1, as score numbers a file's rows; an index
    # of the table's own (names, dates) is kept
    index = table.index
    plain = isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1
    ids = [str(x) for x in (table[id_col] if id_col else (range(1, len(table) + 1) if plain else index))]
    if len(set(ids)) != len(ids):
        raise ValueError(f"the ids ({id_col or 'the index'}) repeat: each row needs its own")
    return [Sample(id=i, input=text(row, input_col) or "", output=text(row, output_col) or "",
                   group_id=(text(row, group_col) or i) if group_col else i,
                   context=text(row, context_col), reference=text(row, reference_col))
            for i, (_, row) in zip(ids, table.iterrows())]


def model_card(store: Store, run_id: int) -> dict[str, Any]:
    """The export document of finished run ``run_id``."""
    # imported here: they load scipy.stats, and `score` imports this module for load_judge before its first request
    from .probes import probe_run
    from .trust import trust_report

    run = store.run(run_id)
    if run.judge is None:
        raise ValueError(f"run {run_id} has no fitted judge yet (status {run.status})")
    summary = run.summary.to_dict() if run.summary else {}
    split = run.split
    return {
        "format": CARD_FORMAT, "version": CARD_VERSION, "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "judge": run.judge,
        "llm": run.llm,
        "provenance": {"run_id": run_id, "dataset": run.dataset, "aspect": run.aspect,
                       "seed": split.seed if split else None, "n_train": len(split.train_ids) if split else 0,
                       "n_test": len(split.test_ids) if split else 0, "status": run.status,
                       # the human score the judge learned from and was meta-evaluated against, and who started it
                       "human_aggregate": run.human_aggregate, "started_by": run.actor},
        # the warnings travel with the judge: whoever loads the file sees what the run's figures alone do not say
        "meta_evaluation": {k: summary.get(k) for k in ("level", "correlations", "levels", "n", "missing",
                                                        "parse_failures", "parse_failure_rate", "warnings")},
        # before the run finished, the ledger so far
        "cost": {k: summary[k] if summary else getattr(run.ledger, k) for k in
                 ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "dollars", "seconds")},
        # whether to trust it: training and test correlation, baselines on the same split, a warning in words
        "trust": trust_report(store, run_id).to_dict() if run.status == "finished" and summary else None,
        # where and why it disagrees with the humans on its test items (length, collapse, slices, themes)
        "probes": probe_run(store, run_id).to_dict() if run.status == "finished" and summary else None,
    }


def export_judge(store: Store, run_id: int) -> str:
    """:func:`model_card` as indented JSON text."""
    return json.dumps(model_card(store, run_id), indent=2, ensure_ascii=False)


def load_judge(source: str | Path | dict[str, Any]) -> ExportedJudge:
    """Read an exported judge (model card) or a bare Judge JSON; clear ``ValueError`` if it is neither.

    ``source`` is the file's path (a :class:`~pathlib.Path`, or a string that does not start with ``{``), its
    JSON text, or the parsed document."""
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
        try:
            source = Path(source).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the judge file {str(source)!r}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    text = source
    try:
        doc = json.loads(text) if isinstance(text, str) else dict(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON document (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise ValueError("an exported judge is a JSON object")
    if doc.get("format") == CARD_FORMAT:
        if doc.get("version") != CARD_VERSION:
            raise ValueError(f"exported judge version {doc.get('version')!r} is not supported "
                             f"(expected {CARD_VERSION})")
        judge = Judge.from_dict(doc["judge"])
        return ExportedJudge(judge, LLMConfig.from_dict(doc.get("llm") or {}), doc)
    if "method" in doc and "state" in doc:
        return ExportedJudge(Judge.from_dict(doc), LLMConfig(), {"judge": doc})
    raise ValueError("this JSON is neither an exported judge nor a judge (no 'format' or 'method' field)")


def read_items(path: str | Path, *, input_col: str = "input", output_col: str = "output", id_col: str | None = None,
               context_col: str | None = None, reference_col: str | None = None, human_col: str | None = None,
               aspect: str = "score", task: str = "",
               progress: Callable[[int, int], Any] | None = None,
               skipped: list[data.DataImportError] | None = None) -> Dataset:
    """Items to score from a CSV/TSV/JSON/JSONL file; ``human_col`` optionally holds human scores.

    With ``skipped`` (a list), a row that cannot be scored (no output, an empty id, a repeated id) is added
    to it and left out instead of stopping the whole file."""
    return data.load_table(path, input_col=input_col, output_col=output_col, id_col=id_col, context_col=context_col,
                           reference_col=reference_col, score_cols={aspect: human_col} if human_col else [],
                           task=task, progress=progress, require_scores=False, skipped=skipped)


def score_file(judge: Judge, path: str | Path, *, llm: LLM, progress: Callable[[int, int, str], None] | None = None,
               **columns: Any) -> list[Verdict]:
    """Score every item of a file with ``judge`` (see :func:`read_items` for the column options)."""
    items = read_items(path, task=judge.task.get("task", ""), **columns)
    return judge.score(items.samples, llm=llm, progress=progress)


# --------------------------------------------------------------------------- verdict tables

VERDICT_FORMATS = ("csv", "jsonl")

VERDICT_COLUMNS = ("sample_id", "input", "output", "human_score", "judge_score", "missing", "missing_reason",
                   "raw_reply", "explanation")
"""Columns of :func:`verdict_table`; per-criterion scores follow as ``criterion: <name>``."""

def _number(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class VerdictTable:
    """A run's verdicts as rows of plain values (None where there is no number)."""

    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]


def build_verdict_table(dataset: Dataset | None, aspect: str, verdicts: Sequence[Verdict]) -> VerdictTable:
    """One row per verdict: the item's texts and human score (when ``dataset`` is known), the judge's score,
    whether it is missing and why, the raw reply, the explanation, and per-criterion scores where the method
    has criteria."""
    index = dataset.by_id() if dataset is not None else {}
    criteria: dict[str, None] = {}
    for v in verdicts:
        for name in v.criteria:
            criteria.setdefault(str(name), None)
    rows = []
    for v in verdicts:
        sample = index.get(v.sample_id)
        row = {
            "sample_id": v.sample_id,
            "input": sample.input if sample is not None else None,
            "output": sample.output if sample is not None else None,
            "human_score": _number(sample.human.get(aspect)) if sample is not None else None,
            "judge_score": None if v.missing else float(v.score),
            "missing": bool(v.missing),
            "missing_reason": missing_reason(v),
            "raw_reply": v.raw,
            "explanation": v.explanation,
        }
        for name in criteria:
            row[f"criterion: {name}"] = _number(v.criteria.get(name))
        rows.append(row)
    return VerdictTable(VERDICT_COLUMNS + tuple(f"criterion: {n}" for n in criteria), tuple(rows))


def verdict_table(store: Store, run_id: int) -> VerdictTable:
    """:func:`build_verdict_table` of stored run ``run_id`` (texts and human scores left empty when its
    dataset is no longer stored)."""
    run = store.run(run_id)
    try:
        dataset = store.load_dataset(run.dataset)
    except NotFound:
        dataset = None
    return build_verdict_table(dataset, run.aspect, store.load_verdicts(run_id))


def verdicts_text(table: VerdictTable, fmt: str = "csv") -> str:
    """The table as CSV (spreadsheet-safe: see :mod:`judge_engine.spreadsheet`) or JSON lines."""
    if fmt == "csv":
        return spreadsheet.to_csv(table.columns, ([row[c] for c in table.columns] for row in table.rows))
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in table.rows)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(VERDICT_FORMATS)}")
