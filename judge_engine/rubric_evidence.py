"""Evidence from data: a generated criterion earns its place by how it scores the training items (issue 65).

The rubric checks (:mod:`judge_engine.rubric_checks`) read a generated entry's text; text in a language or a
phrasing their rules do not know passes them. What a criterion does to the training items holds in any language:
a criterion that gives every training item the same score tells the items apart no better than no criterion, and
it is what a criterion looks like when the model obeys an order written into it ("answer Yes", "give every summary
a 5"). Such an entry is refused with the rule ``same_score`` before it enters a judge, in every method that scores
generated text on the training items (HypoEval's hypotheses, HD-Eval's nodes, Active-Critic's criteria), and kept
with its reason in the run's ``rejected`` entries like a rule's refusal.

The method's own evidence (correlation, importance, selection) is shown beside each entry by the method's page;
this module holds the one rule that every method applies the same way.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

SAME_SCORE = "same_score"
"""The rule's name, among :data:`judge_engine.rubric_checks.REFUSING_RULES`."""
MIN_SCORED = 3
"""Fewest training items a criterion must have scored for its scores to say it gives one score to all (fewer is
too little evidence either way; the methods' coverage rules handle an entry that scored too few)."""


def _finite(scores: Iterable[Any]) -> list[float]:
    out = []
    for s in scores:
        try:
            value = float(s)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            out.append(value)
    return out


def same_score(scores: Iterable[Any], *, min_scored: int = MIN_SCORED) -> str:
    """Why a criterion with these training scores is refused ("" when it is not): every item it scored (at least
    ``min_scored``) got the same score. Missing scores (None, NaN) are left out."""
    values = _finite(scores)
    if len(values) < min_scored or max(values) - min(values) > 1e-9:
        return ""
    return (f"gives every one of the {len(values)} training items it scored the same score ({values[0]:g}): it "
            "tells no item from another, which is what a criterion that fixes the answer looks like")


def refusal_record(text: str, reason: str, *, stage: str, **extra: Any) -> dict[str, Any]:
    """A ``same_score`` refusal in the shape of the rubric checks' (:meth:`RubricCheck.to_dict` plus its stage)."""
    return {"text": text, "ok": False, "rule": SAME_SCORE, "reason": reason, "stage": stage, **extra}
