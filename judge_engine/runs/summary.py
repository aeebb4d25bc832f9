"""A finished run's summary: meta-evaluation, cost, and the warnings a person must read with its figures."""

from __future__ import annotations

import math
from typing import Any

from .. import metrics
from ..llm import LedgerTotals
from ..methods import Judge
from ..records import Dataset, RunSummary, RunWarning, Verdict


def summarize(dataset: Dataset, aspect: str, verdicts: list[Verdict], *, ledger: LedgerTotals,
              seconds: float, n_bootstrap: int = 1000, judge: Judge | None = None) -> RunSummary:
    """Meta-evaluation of a run's verdicts at every level that applies, its cost, and its warnings.

    ``missing`` counts every test item without a score; ``parse_failures``
    only those whose reply gave no readable score (an item the judge never
    asked the model about, marked ``metadata["source"] == "not_asked"``, is
    missing but not a parse failure). ``warnings`` (see :func:`run_warnings`)
    says in words what the figures alone do not.
    """
    index = dataset.by_id()
    samples = [index[v.sample_id] for v in verdicts]
    human = [s.human.get(aspect, math.nan) for s in samples]
    pred = [v.score for v in verdicts]
    groups = [s.group_id for s in samples]
    systems = [s.system_id for s in samples]
    levels: dict[str, Any] = {}
    for level in metrics.LEVELS:
        if level == "system" and len(set(systems)) < 3:
            continue
        if level == "group" and len(set(groups)) == len(groups):
            continue
        levels[level] = metrics.meta_evaluate(human, pred, level=level, groups=groups, systems=systems,
                                              n_bootstrap=n_bootstrap).to_dict()
    natural = dataset.natural_level if dataset.natural_level in levels else "sample"
    n_missing = sum(1 for v in verdicts if v.missing)
    n_unparsed = sum(1 for v in verdicts if v.missing and v.metadata.get("source") != "not_asked")
    return RunSummary(level=natural, correlations=levels.get(natural), levels=levels, n=len(verdicts),
                      missing=n_missing, parse_failures=n_unparsed,
                      parse_failure_rate=round(n_unparsed / len(verdicts), 4) if verdicts else 0.0,
                      warnings=tuple(run_warnings(verdicts, ledger=ledger, judge=judge)),
                      ledger=ledger, seconds=round(seconds, 2))


def run_warnings(verdicts: list[Verdict], *, ledger: LedgerTotals, judge: Judge | None = None) -> list[RunWarning]:
    """What a person must know about a run before trusting its figures.

    The judge's own fit-time warnings come first (an empty hypothesis bank, no
    criteria inferred, a decomposition without children: see
    :func:`judge_engine.methods.judge_warning`), then the generated rubric
    entries the checks refused (``Judge.state["rejected"]``, see
    :mod:`judge_engine.rubric_checks`) and those used with flags
    (``Judge.state["flagged"]``) and how many of the judge's own entries are
    flagged (:mod:`judge_engine.judge_flags`), then what the verdicts show:
    explanations not shown because they were empty or repetitive
    (``metadata["explanation_rejected"]``), scores read from the
    alternatives of a reply that stated none, criteria
    imputed, missing scores with their most common reasons, and prompts cut to
    fit the model's context.
    """
    out = [dict(w) for w in ((judge.state.get("warnings") if judge else None) or [])]
    rejected = (judge.state.get("rejected") if judge else None) or []
    if rejected:
        rules: dict[str, int] = {}
        for r in rejected:
            rules[r.get("rule", "")] = rules.get(r.get("rule", ""), 0) + 1
        listed = ", ".join(f"{k.replace('_', ' ')} {c}" for k, c in sorted(rules.items(), key=lambda kv: -kv[1]))
        out.append({"code": "rubric_rejected", "count": len(rejected),
                    "message": f"{len(rejected)} generated rubric entries were rejected before use ({listed}); "
                               "they are kept with their reasons on the method's page"})
    flagged = (judge.state.get("flagged") if judge else None) or []
    if flagged:
        rules = {}
        for f in flagged:
            for flag in f.get("flags") or []:
                rules[flag.get("rule", "")] = rules.get(flag.get("rule", ""), 0) + 1
        listed = ", ".join(f"{k.replace('_', ' ')} {c}" for k, c in sorted(rules.items(), key=lambda kv: -kv[1]))
        out.append({"code": "rubric_flagged", "count": len(flagged),
                    "message": f"{len(flagged)} generated rubric entries were used with flags ({listed}); read them "
                               "beside the entries on the method's page (selection by training correlation kept "
                               "or dropped them as for any entry)"})
    if judge is not None:
        out.extend(_judge_entries_flagged(judge))
    n = len(verdicts)
    refused = sum(1 for v in verdicts if v.metadata.get("explanation_rejected"))
    if refused:
        out.append({"code": "explanations_rejected", "count": refused,
                    "message": f"{refused} of {n} judge explanations were empty or one line repeated over and over; "
                               "they are not shown as explanations (the replies are kept in raw)"})
    from_alternatives = sum(1 for v in verdicts if v.metadata.get("source") == "logprobs_first_position")
    if from_alternatives:
        out.append({"code": "scores_from_alternatives", "count": from_alternatives,
                    "message": f"{from_alternatives} of {n} scores were read from the probabilities of a reply that "
                               "stated no number (the scale's tokens among its first position's alternatives)"})
    imputed = [int(v.metadata.get("imputed_criteria") or 0) for v in verdicts]
    if any(imputed):
        out.append({"code": "criteria_imputed", "count": sum(imputed),
                    "message": f"{sum(imputed)} criterion scores were imputed (not read) in "
                               f"{sum(1 for k in imputed if k)} of {n} items"})
    missing = [v for v in verdicts if v.missing]
    if missing:
        reasons: dict[str, int] = {}
        for v in missing:
            why = str(v.metadata.get("missing_reason") or ("no readable score in the reply" if (v.raw or "").strip()
                                                          else "no reply"))
            reasons[why] = reasons.get(why, 0) + 1
        top = sorted(reasons.items(), key=lambda kv: -kv[1])[:3]
        listed = "; ".join(f"{k} ({c})" for k, c in top)
        out.append({"code": "scores_missing", "count": len(missing),
                    "message": f"{len(missing)} of {n} items have no score: {listed}"})
    truncated = ledger.truncated
    if truncated:
        out.append({"code": "prompts_cut", "count": truncated,
                    "message": f"{truncated} prompts were cut to fit the model's context window"})
    return [RunWarning.from_dict(w) for w in out]


FLAGGED_LISTED = 5
"""Flagged judge entries quoted in the summary's warning; the count covers all of them."""


def _judge_entries_flagged(judge: Judge) -> list[dict[str, Any]]:
    """The ``judge_entries_flagged`` warning: which of the entries the judge scores with carry flags."""
    from ..judge_flags import flagged_in_judge, judge_entries

    found = flagged_in_judge(judge.method, judge.state)
    if not found:
        return []
    total = len(judge_entries(judge.method, judge.state))
    quoted = "; ".join(f"{e.key} {e.text[:80]!r}: {e.flag_text()}" for e in found[:FLAGGED_LISTED])
    more = f"; and {len(found) - FLAGGED_LISTED} more" if len(found) > FLAGGED_LISTED else ""
    return [{"code": "judge_entries_flagged", "count": len(found),
             "message": f"{len(found)} of the judge's {total} entries carry rubric-check flags ({quoted}{more}); "
                        "they were selected like any entry: a person accepts or edits them on the method's page"}]
