"""HPSS's fitness r(𝒯) (§3.1, App. A.1): how well one strategy's ratings of the validation items agree with the humans.

:func:`fitness` is the coverage-aware Spearman, :func:`search_value` the number the search ranks by and learns
advantages from (× 100), :func:`select_best` the strategy a fit may adopt, and :class:`ValidationFitness` the
search's ``evaluate`` callback, which judges the validation items (:mod:`.evaluation`) and records each
evaluation. Moved out of :mod:`judge_engine.methods.hpss.method` (issue 46 item 7), which re-exports these names.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from ... import metrics
from ...llm import LLM
from ...records import Sample
from ..base import EventSink, Progress
from .auxiliaries import Auxiliaries
from .evaluation import StrategyScores, evaluate_strategies
from .strategy import Strategy, as_dict, strategy_name

Fitness = Callable[[Strategy, str], float]
"""``evaluate(strategy, stage) -> Spearman × 100`` (NaN when undefined)."""


def fitness(samples: Sequence[Sample], aspect: str, scores: Sequence[float], *,
            level: str) -> metrics.SelectionFitness:
    """A strategy's validation fitness r(𝒯) (§3.1, App. A.1), coverage-aware.

    The Spearman correlation with the humans at ``level`` (App. A.1) is
    computed on the items the strategy scored; the rule of
    :func:`judge_engine.metrics.coverage_adjusted` then counts the items it
    failed to score (a missing auxiliary, a reply without a rating): below
    :data:`judge_engine.metrics.MIN_SELECTION_COVERAGE` of the validation
    items scored the strategy is not eligible (value NaN), above it the value
    is correlation × coverage, as if every unscored item had shown no
    agreement. So a prompt that parses on 2 of 10 items cannot beat one that
    scores all 10 slightly less well. ``coverage`` counts the items that have
    a human score. The search works in Spearman × 100 (:func:`search_value`).
    """
    human = [s.human.get(aspect, math.nan) for s in samples]
    values, _ = metrics.level_correlations(human, list(scores), level=level,
                                           groups=[s.group_id for s in samples],
                                           systems=[s.system_id for s in samples])
    rated = [(h, p) for h, p in zip(human, scores) if h is not None and not math.isnan(h)]
    n_scored = sum(1 for _, p in rated if p is not None and not math.isnan(p))
    return metrics.coverage_adjusted(values["spearman"], n_scored, len(rated))


def search_value(selection: metrics.SelectionFitness) -> float:
    """What the search ranks by and learns advantages from: the coverage-aware fitness × 100 (NaN: ineligible)."""
    return selection.value * 100 if math.isfinite(selection.value) else math.nan


def select_best(selection: dict[Strategy, metrics.SelectionFitness]) -> Strategy | None:
    """The selectable strategy with the highest coverage-aware fitness (first evaluated on ties); None if none.

    Selectable (:attr:`judge_engine.metrics.SelectionFitness.selectable`):
    enough validation items scored and a correlation above zero. A strategy
    that is not selectable is never adopted automatically.
    """
    best, best_value = None, -math.inf
    for strategy, sel in selection.items():
        if sel.selectable and sel.value > best_value:
            best, best_value = strategy, sel.value
    return best


def rounded(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)



class ValidationFitness:
    """r(𝒯) on the validation set, recording every evaluation (the search's ``evaluate`` callback).

    Each call judges the validation samples with the strategy (the judged
    sample left out of its in-context examples), computes the coverage-aware
    fitness (:func:`fitness`) at ``level``, keeps it in ``selection``, appends
    an entry to ``history`` and reports it as an ``hpss_evaluated`` event and
    as progress. It returns :func:`search_value` (Spearman × 100 × coverage).
    """

    def __init__(self, validation: Sequence[Sample], aux: Auxiliaries, *, llm: LLM, level: str, max_tokens: int,
                 total: int, retry: bool = False, explanation_chars: int = 600, progress: Progress | None = None,
                 log: EventSink | None = None):
        self.validation, self.aux, self.llm, self.level = tuple(validation), aux, llm, level
        self.max_tokens, self.total, self.progress, self.log = max_tokens, total, progress, log
        self.retry, self.explanation_chars = retry, explanation_chars
        self.history: list[dict[str, Any]] = []
        self.selection: dict[Strategy, metrics.SelectionFitness] = {}

    def __call__(self, strategy: Strategy, stage: str) -> float:
        return self.many([strategy], stage)[0]

    def many(self, strategies: Sequence[Strategy], stage: str) -> list[float]:
        """Evaluate strategies that do not depend on each other as one batch (:func:`evaluate_strategies`).

        Each is recorded as a call one after another would record it (history, event, progress), in order;
        only ``calls`` in an entry is the ledger's count when the batch ended, not after that strategy.
        """
        done = len(self.history)
        n = len(strategies)
        label = (f"strategy {done + 1} of {self.total} ({stage})" if n == 1 else
                 f"strategies {done + 1}-{done + n} of {self.total} ({stage})")
        if self.progress:
            self.progress(done, self.total, label)
        results = evaluate_strategies(
            strategies, self.validation, self.aux, llm=self.llm, max_tokens=self.max_tokens, leave_out=True,
            retry=self.retry, explanation_chars=self.explanation_chars,
            progress=(lambda d, t: self.progress(done + d * n // t, self.total, label))
            if self.progress and n > 1 else None)
        return [self._record(strategy, stage, result, label) for strategy, result in zip(strategies, results)]

    def _record(self, strategy: Strategy, stage: str, result: StrategyScores, label: str) -> float:
        done = len(self.history)
        sel = fitness(self.validation, self.aux.aspect.name, result.scores, level=self.level)
        self.selection[strategy] = sel
        value = search_value(sel)
        chosen = select_best(self.selection)
        entry = {"index": done + 1, "stage": stage, "strategy": strategy_name(strategy),
                 "factors": as_dict(strategy), "fitness": rounded(value),
                 "correlation": rounded(sel.correlation * 100), "coverage": round(sel.coverage, 4),
                 "n_scored": sel.n_scored, "selectable": sel.selectable, "reason": sel.reason,
                 "best_so_far": None if chosen is None else rounded(search_value(self.selection[chosen])),
                 "n": len(self.validation), "unparsed": result.unparsed, "retried": result.retried,
                 "missing_aux": result.missing_aux, "read_json": result.count("json"),
                 "read_text": result.count("text"),
                 "read_logprobs": result.count("logprobs") + result.from_alternatives,
                 "from_alternatives": result.from_alternatives,
                 "calls": self.llm.ledger.snapshot().calls,
                 "scores": [None if math.isnan(x) else x for x in result.scores]}
        self.history.append(entry)
        if self.log:
            self.log("hpss_evaluated", entry)
        if self.progress:
            self.progress(done + 1, self.total, label)
        return value
