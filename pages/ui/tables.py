"""Engine records as the DataFrames the pages display: datasets, samples, runs, correlations, verdicts."""

from __future__ import annotations

import math
import time
from typing import Any, Iterable

import pandas as pd

from judge_engine import store as store_module
from judge_engine.records import Dataset, RunRecord, RunSummary, Verdict
from judge_engine.runs import effective_status


def fmt_time(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


def datasets_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Overview of stored datasets (``store.list_datasets()``)."""
    return pd.DataFrame([{
        "name": r["name"], "task": r["task"], "samples": r["n_samples"],
        "aspects": ", ".join(a["name"] for a in r["aspects"]),
        "natural level": r["natural_level"], "imported": fmt_time(r.get("created")),
    } for r in rows], columns=["name", "task", "samples", "aspects", "natural level", "imported"])


def samples_frame(dataset: Dataset, limit: int = 50) -> pd.DataFrame:
    """The first ``limit`` samples with their human scores, one column per aspect."""
    rows = []
    for s in dataset.samples[:limit]:
        row = {"id": s.id, "group": s.group_id, "system": s.system_id,
               dataset.input_label.lower(): s.input, dataset.output_label.lower(): s.output}
        for a in dataset.aspect_names:
            row[a] = s.human.get(a)
        rows.append(row)
    return pd.DataFrame(rows)


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _ci(ci: Any) -> str:
    if not ci or len(ci) < 2 or ci[0] is None or ci[1] is None:
        return "–"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def ordered_levels(summary: RunSummary) -> list[str]:
    """Levels of a run summary, the natural level first."""
    levels = list(summary.levels.keys())
    natural = summary.level
    if natural in levels:
        levels.remove(natural)
        levels.insert(0, natural)
    return levels


def correlation_frame(summary: RunSummary) -> pd.DataFrame:
    """One row per meta-evaluation level (natural first): coefficients, 95% CIs and counts."""
    rows = []
    natural = summary.level
    for level in ordered_levels(summary):
        c = summary.levels[level] or {}
        rows.append({
            "level": f"{level} (natural)" if level == natural else level,
            "pearson": _num(c.get("pearson")), "pearson 95% CI": _ci(c.get("pearson_ci")),
            "spearman": _num(c.get("spearman")), "spearman 95% CI": _ci(c.get("spearman_ci")),
            "kendall": _num(c.get("kendall")), "kendall 95% CI": _ci(c.get("kendall_ci")),
            "n": c.get("n"), "missing": c.get("n_missing"), "groups used": c.get("n_groups"),
            "groups skipped": c.get("groups_skipped"), "systems": c.get("n_systems"),
            # e.g. "too few groups for an interval": the sample-level row beside it has one
            "note": c.get("ci_note") or "",
        })
    return pd.DataFrame(rows)


LIVE_STATUSES = store_module.LIVE_STATUSES


def runs_frame(runs: Iterable[RunRecord]) -> pd.DataFrame:
    """Overview of runs (``store.runs()``) with the natural-level correlations of finished ones."""
    rows = []
    for r in runs:
        corr = (r.summary.correlations if r.summary else None) or {}
        ledger = r.ledger  # llm.LedgerTotals: all 0 before the run's first call
        rows.append({
            "run": r.id, "method": r.method, "dataset": r.dataset, "aspect": r.aspect,
            "status": effective_status(r),
            "progress": f"{r.done}/{r.total}" if r.total else "",
            "level": r.summary.level if r.summary else "",
            "pearson": _num(corr.get("pearson")), "spearman": _num(corr.get("spearman")),
            "kendall": _num(corr.get("kendall")),
            "calls": ledger.calls, "cache hits": ledger.cache_hits,
            "dollars": float(ledger.dollars),
            "expected dollars": float(r.estimate.dollars) if r.estimate else None,  # None: made before estimates
            "created": fmt_time(r.created),
            "human score": r.human_aggregate, "started by": r.actor,
        })
    return pd.DataFrame(rows, columns=["run", "method", "dataset", "aspect", "status", "progress", "level",
                                       "pearson", "spearman", "kendall", "calls", "cache hits", "dollars",
                                       "expected dollars", "created", "human score", "started by"])


def agreement_row(result: Any) -> dict[str, Any]:
    """One table row of an :class:`judge_engine.annotations.Agreement`."""
    return {"annotators": len(result.annotators), "items (2+ labels)": result.n_items,
            "Krippendorff's alpha": _num(None if math.isnan(result.alpha) else result.alpha),
            "alpha 95% CI": _ci(None if any(math.isnan(x) for x in result.alpha_ci) else result.alpha_ci),
            **{f"ceiling {m}": _num(None if math.isnan(v) else v) for m, v in result.ceiling.items()},
            "ceiling spearman 95% CI": _ci(None if any(math.isnan(x) for x in result.ceiling_ci["spearman"])
                                           else result.ceiling_ci["spearman"])}


def run_label(run: RunRecord) -> str:
    """A stable label for a run (no status: a select box must not relabel its value as the run progresses)."""
    return f"#{run.id} · {run.method} · {run.dataset}/{run.aspect} · {fmt_time(run.created)}"


def verdicts_frame(dataset: Dataset | None, aspect: str, verdicts: list[Verdict]) -> pd.DataFrame:
    """One row per verdict: sample id, human score, judge score, parse failure flag, raw reply."""
    index = dataset.by_id() if dataset is not None else {}
    rows = []
    for v in verdicts:
        sample = index.get(v.sample_id)
        rows.append({
            "sample id": v.sample_id,
            "human": _num(sample.human.get(aspect)) if sample is not None else float("nan"),
            "judge": float("nan") if v.missing else float(v.score),
            "parse failure": bool(v.missing),
            "raw reply": v.raw, "explanation": v.explanation,
        })
    return pd.DataFrame(rows, columns=["sample id", "human", "judge", "parse failure", "raw reply",
                                       "explanation"])
