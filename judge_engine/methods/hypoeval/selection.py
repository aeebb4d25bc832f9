"""§3.2 hypothesis selection: H_ev by coverage-aware Pearson on S_tr, positive correlations only."""

from __future__ import annotations

import math
from typing import Any, Sequence

from ... import metrics
from ...records import Sample
from ...rubric_evidence import refusal_record, same_score
from .context import Context
from .evaluation import evaluate_hypotheses

def select_hypotheses(ctx: Context, bank: Sequence[dict[str, Any]], train: Sequence[Sample], n_selected: int, *,
                      accepted_by_person: bool = False) -> list[dict[str, Any]]:
    """H_ev: up to ``n_selected`` hypotheses by coverage-aware Pearson fitness on S_tr (§3.2).

    Every hypothesis is scored on all of S_tr (scores from stage 1 come from
    the cache: same prompt). Its fitness is
    :func:`judge_engine.metrics.selection_fitness`: the Pearson r on the
    items it scored times the share of items it scored, not eligible below
    the minimum coverage (a hypothesis that scores 2 of 10 items perfectly
    cannot beat one that scores all 10 a little less well). Ranking is by
    that value, ties broken by the stage-1 reward (ours). A hypothesis that
    gives every training item the same score is refused (``same_score``,
    :mod:`judge_engine.rubric_evidence`) with that reason as its fitness
    reason and a ``hypothesis_refused`` event; only a person's acceptance
    (curated runs, below) can still keep it.

    Only *selectable* hypotheses (eligible and r > 0) are selected on their
    own: a hypothesis that disagrees with the humans on the training items is
    never adopted silently. When fewer qualify than ``n_selected``, fewer
    are selected and a ``fewer_selected`` warning says so. When none
    qualifies, the fit cannot build a judge and raises ``ValueError`` —
    unless a person accepted the hypotheses (``accepted_by_person``,
    curated runs): then the person's ones fill the remaining places in
    fitness order, each marked ``accepted_by="person"``, with a
    ``person_accepted`` warning.

    Raises
    ------
    ValueError
        "HypoEval found no hypothesis that agrees with the human scores ..."
        when nothing is selectable and no person accepted the hypotheses.
    """
    evaluate_hypotheses(ctx, bank, train, "selection on the training samples")
    human = [ctx.human(s) for s in train]
    for e in bank:
        pred = [math.nan if e["scores"].get(s.id) is None else e["scores"][s.id] for s in train]
        fit = metrics.selection_fitness(human, pred)
        e["fitness"] = None if math.isnan(fit.value) else fit.value
        e["train_pearson"] = None if math.isnan(fit.correlation) else fit.correlation
        e["train_parsed"] = fit.n_scored
        e["coverage"] = fit.coverage
        e["selectable"] = fit.selectable
        e["fitness_reason"] = fit.reason or ("" if fit.selectable else "correlation at or below zero")
        # evidence in any language (issue 65): one score for every training item is refused with that reason,
        # kept in the bank (its fitness reason, shown on the page) and said in an event
        constant = same_score(pred)
        if constant:
            e["selectable"], e["fitness_reason"] = False, constant
            ctx.emit("hypothesis_refused", refusal_record(e.get("text", ""), constant, key=e["key"],
                                                          stage="selection on the training samples"))
        ctx.emit("hypothesis_evaluated", {"key": e["key"], "train_pearson": e["train_pearson"],
                                          "fitness": e["fitness"], "coverage": round(fit.coverage, 4),
                                          "selectable": fit.selectable, "reason": e["fitness_reason"],
                                          "parsed": fit.n_scored, "of": len(train)})

    def rank(e: dict[str, Any]) -> tuple[float, float]:
        return (-math.inf if e["fitness"] is None else e["fitness"],
                -math.inf if e["reward"] is None else e["reward"])

    ranked = sorted(bank, key=rank, reverse=True)
    selected = [e for e in ranked if e["selectable"]][:n_selected]
    rejected = [e for e in ranked if not e["selectable"]]
    if len(selected) < n_selected and accepted_by_person and rejected:
        added = rejected[:n_selected - len(selected)]
        for e in added:
            e["accepted_by"] = "person"
        selected += added
        ctx.warn("person_accepted", f"{len(added)} hypothesis(es) a person accepted were kept although their "
                                    "training fitness does not qualify them (no positive correlation with the "
                                    "human scores at sufficient coverage)", count=len(added))
    n_qualified = sum(e["selectable"] for e in bank)
    if not selected:
        reasons = sorted({e["fitness_reason"] for e in bank})
        message = (f"HypoEval found no hypothesis that agrees with the human scores on the {len(train)} training "
                   f"items: none of the {len(bank)} in the bank has a positive Pearson correlation at sufficient "
                   f"coverage ({'; '.join(reasons)})")
        ctx.warn("no_selectable", message)
        ctx.emit("selection", {"selected": [], "bank_size": len(bank), "qualified": 0, "wanted": n_selected})
        raise ValueError(message)
    if len(selected) < n_selected:
        ctx.warn("fewer_selected", f"only {n_qualified} of the {len(bank)} hypotheses correlate positively with "
                                   f"the human scores at sufficient coverage; {len(selected)} selected instead of "
                                   f"{n_selected}", count=n_selected - n_qualified)
    ctx.emit("selection", {"selected": [{"key": e["key"], "train_pearson": e["train_pearson"],
                                         "fitness": e["fitness"], "coverage": round(e["coverage"], 4),
                                         "accepted_by": e.get("accepted_by", "selection")} for e in selected],
                           "bank_size": len(bank), "qualified": n_qualified, "wanted": n_selected,
                           "rule": "coverage-aware Pearson (metrics.selection_fitness), correlation > 0 only"})
    return selected
