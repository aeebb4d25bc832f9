"""Take a finished judge away and use it anywhere: a versioned JSON model card, and scoring new files.

An exported judge is one JSON document: the :class:`~judge_engine.methods.Judge`
(method, parameters, everything it learned: rubric, criteria, tree,
strategy, demos, aggregator weights), the backend settings it was fitted
with (never an API key), and its meta-evaluation and cost: a small model
card. :func:`load_judge` reads it back (or a bare Judge JSON), and
:func:`score_file` scores a CSV/JSONL file with it through the cached LLM path.

From Python::

    from judge_engine import export, make_llm, Store
    card = export.load_judge(open("judge.json").read())
    verdicts = export.score_file(card.judge, "new.jsonl", llm=make_llm(card.llm, store=Store()))
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import data
from .llm import LLM, LLMConfig
from .methods import Judge
from .records import Dataset, Verdict
from .store import Store

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


def model_card(store: Store, run_id: int) -> dict[str, Any]:
    """The export document of finished run ``run_id``."""
    run = store.get_run(run_id)
    if run.get("judge") is None:
        raise ValueError(f"run {run_id} has no fitted judge yet (status {run['status']})")
    summary = run.get("summary") or {}
    split = run.get("split") or {}
    return {
        "format": CARD_FORMAT, "version": CARD_VERSION, "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "judge": run["judge"],
        "llm": run["llm"],
        "provenance": {"run_id": run_id, "dataset": run["dataset"], "aspect": run["aspect"],
                       "seed": split.get("seed"), "n_train": len(split.get("train_ids") or []),
                       "n_test": len(split.get("test_ids") or []), "status": run["status"],
                       # the human score the judge learned from and was meta-evaluated against, and who started it
                       "human_aggregate": run.get("human_aggregate") or "imported", "started_by": run.get("actor") or ""},
        "meta_evaluation": {k: summary.get(k) for k in ("level", "correlations", "levels", "n", "parse_failures",
                                                        "parse_failure_rate")},
        "cost": {k: summary.get(k, (run.get("ledger") or {}).get(k)) for k in
                 ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "dollars", "seconds")},
    }


def export_judge(store: Store, run_id: int) -> str:
    """:func:`model_card` as indented JSON text."""
    return json.dumps(model_card(store, run_id), indent=2, ensure_ascii=False)


def load_judge(text: str | dict[str, Any]) -> ExportedJudge:
    """Read an exported judge (model card) or a bare Judge JSON; clear ``ValueError`` if it is neither."""
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
               progress: Callable[[int, int], Any] | None = None) -> Dataset:
    """Items to score from a CSV/TSV/JSON/JSONL file; ``human_col`` optionally holds human scores."""
    return data.load_table(path, input_col=input_col, output_col=output_col, id_col=id_col, context_col=context_col,
                           reference_col=reference_col, score_cols={aspect: human_col} if human_col else [],
                           task=task, progress=progress, require_scores=False)


def score_file(judge: Judge, path: str | Path, *, llm: LLM, progress: Callable[[int, int, str], None] | None = None,
               **columns: Any) -> list[Verdict]:
    """Score every item of a file with ``judge`` (see :func:`read_items` for the column options)."""
    items = read_items(path, task=judge.task.get("task", ""), **columns)
    return judge.score(items.samples, llm=llm, progress=progress)


def verdict_record(v: Verdict) -> dict[str, Any]:
    """One JSON line of ``score``'s output."""
    return {"id": v.sample_id, "aspect": v.aspect, "score": None if v.missing else v.score, "missing": v.missing,
            "criteria": {k: (None if x != x else x) for k, x in v.criteria.items()},
            "explanation": v.explanation}
