"""HPSS: Heuristic Prompting Strategy Search for LLM evaluators (Wen et al., 2025).

The judge prompt is set by 8 factors (12,960 strategies,
:mod:`judge_engine.methods.hpss.strategy`); HPSS searches them with a GA-like beam
search guided by per-value *advantages*, scoring each strategy by its
Spearman correlation with human scores on the validation split (the run's
train split). Map of this module to the paper:

* :func:`evaluate_strategy` / :func:`fitness` / :class:`ValidationFitness` — r(𝒯):
  judge every validation sample with one strategy, Spearman at the
  dataset's level (§3.1, App. A.1) made coverage-aware (items left
  unscored count against it; the search works in × 100 units), each
  evaluation logged as an event; :func:`select_best` adopts only a
  selectable strategy (enough items scored, Spearman above 0).
* :func:`initialize` — Algorithm 1: the MT-Bench base plus every one-factor
  change (21 evaluations) and the initial advantages A_ij (Eq. 2).
* :func:`exploration_scores` — Eq. 3 (advantage disparity + UCB term) and
  Eq. 4 (softmax with temperature τ).
* :func:`update_advantage` — Eq. 5 (moving average) and Eq. 6 (zero-centring).
* :func:`exploit` — Eq. 7: the unexplored strategy with the highest total advantage.
* :func:`iterative_search` — Algorithm 2: population k, g mutations per
  member per round, exploitation with probability ρ, budget m.
* :func:`greedy_search`, :func:`stepwise_greedy_search` — the paper's Greedy
  and Stepwise-Greedy baselines on the same machinery (App. F.2); the
  ``simulate`` benchmark runs them with restarts up to HPSS's number of
  evaluations, and :func:`iterative_search` with ``proposals="uniform"`` as
  the ablation of the heuristic (options of these functions, not of
  :class:`HPSS`).

Auxiliaries (criteria, AutoCoT steps, metrics questions, references,
in-context examples) are generated lazily by
:mod:`judge_engine.methods.hpss.auxiliaries`. Where the paper reads two
ways or is silent: ρ is the *exploitation* probability (App. F.3 and
Algorithm 2; §3.3's wording reads the other way); A, B, τ and λ are in
Spearman × 100 units, t counts search-stage evaluations only and M, N start
at 1 (the paper gives no units or start values; the authors' code does
this); explored neighbours stay in the softmax and a draw of one is skipped
at no cost (Algorithm 2, lines 6-9); exploitation ties go to the first
strategy in product order; λ = 4 as in App. F.3, not the authors' code's
default 2.

Deviations, stated: every judge reply is asked for as JSON (the score, with
the explanation before or after it as the chain-of-thought factor says; the
``[[rating]]`` marker and other free text are read only as a fallback); a
reply that does not parse is *missing* (NaN), never the authors' code's
fallback 2.51, after one follow-up turn asking for the number alone
(``retry_unparsed``); fitness counts unscored items (a strategy scoring
fewer than 80% of the validation items is ineligible, otherwise Spearman ×
coverage); a strategy whose fitness is undefined or ineligible is ranked
last, contributes no advantage evidence and gets advantage 0 at
initialization; a strategy with Spearman at or below 0 is never adopted (the
fit ends with a ValueError when no strategy is selectable); judge replies are
capped at ``judge_max_tokens`` (512) instead of 4096 to bound CPU cost, and
each request at what its rating schema's longest reply needs
(:func:`judge_engine.structured.sized_max_tokens`).

References
----------
Wen, B., Ke, P., Sun, Y., Wang, C., Gu, X., Zhou, J., Tang, J., Wang, H.,
Huang, M. (2025). HPSS: Heuristic Prompting Strategy Search for LLM
Evaluators. arXiv:2502.13031.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from ... import metrics
from ...llm import LLM
from ...records import Aspect, RunEvent, Sample, Verdict
from ..base import (EventSink, FitContext, Interval, Judge, Method, OptionalInterval, Options, Progress, judge_warning,
                    register)
from .auxiliaries import Auxiliaries, count_generations
from .evaluation import (RETRY_MAX_TOKENS, RETRY_TEMPLATE, SYSTEM_MESSAGE, StrategyScores,  # noqa: F401 (re-exported)
                         evaluate_strategies, evaluate_strategy, read_rating)
from .strategy import (FACTOR_NAMES, FACTORS, Strategy, all_strategies, as_dict, base_strategy, build_prompt, describe,
                       neighbours, parse_strategy, replace_value,
                       strategy_name)

STEPWISE_ORDER = ("scale", "example", "criteria", "reference", "cot", "autocot", "metrics", "order")
"""Factor order of the Stepwise-Greedy baseline: the rows of paper Table 1 (App. F.2)."""

Fitness = Callable[[Strategy, str], float]
"""``evaluate(strategy, stage) -> Spearman × 100`` (NaN when undefined)."""


# --------------------------------------------------------------------------- r(T): judging and fitness


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


# --------------------------------------------------------------------------- the search


def _rank_key(value: float) -> float:
    return -math.inf if value is None or math.isnan(value) else value


@dataclass
class SearchState:
    """Explored strategies with their fitness and the advantage statistics (the T, A, N and M of §3.3)."""

    perf: dict[Strategy, float] = field(default_factory=dict)
    """T: every evaluated strategy → Spearman × 100."""
    A: dict[tuple[int, str], float] = field(default_factory=dict)
    """Advantage of each factor value (zero-mean per factor)."""
    N: dict[tuple[int, str], int] = field(default_factory=dict)
    """Exploration (update) count of each value, for the moving average."""
    M: dict[tuple[int, str], int] = field(default_factory=dict)
    """Appearance count of each value among evaluated strategies, for the UCB term."""
    cost: int = 0
    """Evaluations made in the iterative stage (initialization not counted)."""

    def best(self, k: int) -> list[Strategy]:
        return sorted(self.perf, key=lambda s: _rank_key(self.perf[s]), reverse=True)[:k]

    def advantages(self) -> dict[str, dict[str, float]]:
        return {name: {v: round(self.A[(i, v)], 4) for v in values} for i, (name, values) in enumerate(FACTORS)}


def initial_strategies(base: Strategy) -> list[Strategy]:
    """Algorithm 1's strategies in the order they are recorded: the base, then each factor's other values."""
    order = [base]
    for i, (_, values) in enumerate(FACTORS):
        order += [st for st in (replace_value(base, i, v) for v in values) if st not in order]
    return order


def initialize(base: Strategy, evaluate: Fitness, *,
               evaluate_many: Callable[[Sequence[Strategy], str], list[float]] | None = None) -> SearchState:
    """Algorithm 1: the base and its 20 one-factor variants; A_ij = s_ij − mean_j s_ij (Eq. 2).

    A value whose strategy has no defined fitness gets advantage 0 and the
    mean is taken over the others. N and M start at 1 for every value (as in the authors' code).
    The 21 evaluations do not depend on each other: ``evaluate_many`` (:meth:`ValidationFitness.many`)
    makes them as one batch, with the same values as ``evaluate`` one after another.
    """
    state = SearchState()
    order = initial_strategies(base)
    values = evaluate_many(order, "init") if evaluate_many else [evaluate(st, "init") for st in order]
    state.perf.update(zip(order, values))
    for i, (_, values) in enumerate(FACTORS):
        s = {v: state.perf[replace_value(base, i, v)] for v in values}
        defined = [x for x in s.values() if not math.isnan(x)]
        mean = sum(defined) / len(defined) if defined else 0.0
        for v in values:
            state.A[(i, v)] = 0.0 if math.isnan(s[v]) else s[v] - mean
            state.N[(i, v)] = 1
            state.M[(i, v)] = 1
    return state


def exploration_scores(state: SearchState, current: Strategy, *, tau: float,
                       lam: float) -> tuple[list[tuple[int, str]], np.ndarray]:
    """The one-factor neighbours of ``current`` and their sampling probabilities.

    B = (A_ij − A_ic) + λ·sqrt(ln t / M_ij) (Eq. 3) with t = cost + 1;
    P = softmax(B / τ) over all 20 neighbours, explored ones included (Eq. 4).
    """
    t = state.cost + 1
    neigh = neighbours(current)
    b = np.array([state.A[(i, v)] - state.A[(i, current[i])] + lam * math.sqrt(math.log(t) / state.M[(i, v)])
                  for i, v in neigh])
    z = b / tau
    p = np.exp(z - z.max())
    return neigh, p / p.sum()


def update_advantage(state: SearchState, parent: Strategy, factor: int, value: str, new_fitness: float) -> None:
    """Eq. 5 then Eq. 6 after an exploration step from ``parent`` changing ``factor`` to ``value``.

    The fresh sample of A_ij is r(new) − (r(parent) − A_ic): what the parent's
    context would score with a random value of the factor. Skipped (no
    evidence) when either fitness is undefined.
    """
    parent_fitness = state.perf[parent]
    if math.isnan(new_fitness) or math.isnan(parent_fitness):
        return
    key = (factor, value)
    old_ci = state.A[(factor, parent[factor])]
    state.A[key] = (state.A[key] * state.N[key] + (new_fitness - (parent_fitness - old_ci))) / (state.N[key] + 1)
    state.N[key] += 1
    values = FACTORS[factor][1]
    mu = sum(state.A[(factor, u)] for u in values) / len(values)
    for u in values:
        state.A[(factor, u)] -= mu


def exploit(state: SearchState, space: Sequence[Strategy] | None = None) -> Strategy | None:
    """Eq. 7: the unexplored strategy with the highest total advantage (first in product order on ties)."""
    best, best_value = None, -math.inf
    for st in space or all_strategies():
        if st in state.perf:
            continue
        value = sum(state.A[(i, v)] for i, v in enumerate(st))
        if value > best_value:
            best, best_value = st, value
    return best


PROPOSALS = ("advantages", "uniform")
"""How :func:`iterative_search` proposes: ``advantages``, the paper's heuristic (Eq. 3, 4 and 7); ``uniform``, the
same population search with the heuristic taken out (the benchmark's ablation, never a method option)."""


def iterative_search(state: SearchState, evaluate: Fitness, rng: np.random.Generator, *, population: int,
                     mutations: int, rho: float, tau: float, lam: float, budget: int, max_rounds: int = 1000,
                     on_round: Callable[[int, list[Strategy]], None] | None = None,
                     on_update: Callable[[], None] | None = None, proposals: str = "advantages") -> Strategy:
    """Algorithm 2 (App. F.1): returns the best explored strategy.

    Each round every population member (best first) makes ``mutations``
    proposals from :func:`exploration_scores`; an explored proposal is skipped
    at no cost; otherwise with probability ρ it is replaced by :func:`exploit`.
    Exploration steps update the advantages at once; every evaluated
    strategy raises M of its values. The population keeps the top-k of the
    old members and this round's strategies; the search stops after
    ``budget`` evaluations (or ``max_rounds`` rounds).

    ``proposals="uniform"`` ignores the advantages (an ablation of the
    heuristic, :data:`PROPOSALS`): each proposal is a one-factor neighbour
    drawn uniformly, and an exploitation step a uniformly drawn unexplored
    strategy; the population, the budget and the validation are the same.
    """
    if proposals not in PROPOSALS:
        raise ValueError(f"proposals={proposals!r}: choose from {', '.join(PROPOSALS)}")
    space = all_strategies()
    pop = state.best(population)
    rounds = 0
    while state.cost < budget and rounds < max_rounds:
        new_pop = list(pop)
        for parent in pop:
            for _ in range(mutations):
                if proposals == "uniform":
                    neigh = neighbours(parent)
                    factor, value = neigh[int(rng.integers(len(neigh)))]
                else:
                    neigh, p = exploration_scores(state, parent, tau=tau, lam=lam)
                    factor, value = neigh[int(rng.choice(len(neigh), p=p))]
                cand = replace_value(parent, factor, value)
                if cand in state.perf or state.cost >= budget:
                    continue
                exploited = bool(rng.random() <= rho)
                if exploited:
                    cand = exploit(state, space) if proposals == "advantages" else random_unexplored(state, space,
                                                                                                    rng)
                    if cand is None:  # every strategy explored
                        return state.best(1)[0]
                state.perf[cand] = evaluate(cand, "exploit" if exploited else "explore")
                new_pop.append(cand)
                state.cost += 1
                if not exploited:
                    update_advantage(state, parent, factor, value, state.perf[cand])
                for i, v in enumerate(cand):
                    state.M[(i, v)] += 1
                if on_update:
                    on_update()
        pop = sorted(set(new_pop), key=lambda s: _rank_key(state.perf[s]), reverse=True)[:population]
        rounds += 1
        if on_round:
            on_round(rounds, pop)
    return state.best(1)[0]


def random_unexplored(state: SearchState, space: Sequence[Strategy], rng: np.random.Generator) -> Strategy | None:
    """A strategy of ``space`` drawn uniformly among those not yet evaluated (None when all are)."""
    if len(state.perf) >= len(space):
        left = [s for s in space if s not in state.perf]
        return left[int(rng.integers(len(left)))] if left else None
    while True:
        cand = space[int(rng.integers(len(space)))]
        if cand not in state.perf:
            return cand


def _neighbourhood_explored(state: SearchState, strategy: Strategy) -> bool:
    return all(replace_value(strategy, i, v) in state.perf for i, v in neighbours(strategy))


def greedy_search(base: Strategy, evaluate: Fitness, rng: np.random.Generator, *, budget: int,
                  perturbations: int = 5, restart: bool = False) -> SearchState:
    """Greedy baseline: beam 1; each round perturbs the best ``perturbations`` times (one random factor
    to a random other value), evaluates the unexplored ones and keeps the best (App. F.2).
    ``budget`` counts evaluations after the base.

    As in the paper the climb stalls once every neighbour of its best is
    evaluated (it may then stop short of ``budget``). With ``restart`` (the
    benchmark's equal-budget baseline) a stalled climb starts again from a
    uniformly drawn unexplored strategy, keeping the best of the new climb,
    until the budget is used; the result is still the best of all evaluated.
    """
    state = SearchState()
    state.perf[base] = evaluate(base, "init")
    current, rounds = base, 0
    climb = [base]  # the strategies of the current climb (all of them without restarts)
    space = all_strategies() if restart else ()
    while state.cost < budget and (restart or rounds < 1000):
        for _ in range(perturbations):
            factor = int(rng.integers(len(FACTORS)))
            others = [v for v in FACTORS[factor][1] if v != current[factor]]
            cand = replace_value(current, factor, others[int(rng.integers(len(others)))])
            if cand in state.perf or state.cost >= budget:
                continue
            state.perf[cand] = evaluate(cand, "explore")
            state.cost += 1
            climb.append(cand)
        current = max(climb, key=lambda s: _rank_key(state.perf[s])) if restart else state.best(1)[0]
        rounds += 1
        if restart and state.cost < budget and _neighbourhood_explored(state, current):
            start = random_unexplored(state, space, rng)
            if start is None:
                break
            state.perf[start] = evaluate(start, "restart")
            state.cost += 1
            current, climb = start, [start]
    return state


def stepwise_greedy_search(base: Strategy, evaluate: Fitness, *, budget: int | None = None,
                           rng: np.random.Generator | None = None) -> SearchState:
    """Stepwise-Greedy baseline: fix the factors one by one in Table 1 order, each to its best value
    with the others held (1 + 20 = 21 evaluations; App. F.2).

    With ``budget`` (evaluations after the base; the benchmark's equal-budget
    baseline) the passes repeat from the pass's result, and a pass that
    evaluates nothing new restarts from a uniformly drawn unexplored strategy
    (``rng``), until ``budget`` evaluations are made; the result is still the
    best of all evaluated. Without it: the paper's single pass.
    """
    state = SearchState()
    state.perf[base] = evaluate(base, "init")
    current = base
    space = all_strategies() if budget is not None else ()
    rng = rng if rng is not None else np.random.default_rng(0)
    while True:
        before = state.cost
        for name in STEPWISE_ORDER:
            i = FACTOR_NAMES.index(name)
            for v in FACTORS[i][1]:
                cand = replace_value(current, i, v)
                if cand not in state.perf and (budget is None or state.cost < budget):
                    state.perf[cand] = evaluate(cand, "explore")
                    state.cost += 1
            options = [replace_value(current, i, v) for v in FACTORS[i][1]]
            current = max((s for s in options if s in state.perf), key=lambda s: _rank_key(state.perf[s]))
        if budget is None or state.cost >= budget:
            return state
        if state.cost == before:  # the pass changed nothing: start again somewhere new
            start = random_unexplored(state, space, rng)
            if start is None:
                return state
            state.perf[start] = evaluate(start, "restart")
            state.cost += 1
            current = start


MIN_GROUP_ITEMS = 3
"""Fewest items of a group a group-level validation set keeps from a group it cannot take whole: a
per-group Spearman over fewer is either undefined or a single sign."""


def group_level_problem(train: Sequence[Sample]) -> str:
    """Why a per-group validation Spearman is undefined on ``train`` (every group a single item), in words;
    empty when some group has two or more."""
    counts = Counter(s.group_id for s in train)
    if max(counts.values(), default=0) >= 2:
        return ""
    return (f"the {len(train)} training items come from {len(counts)} sources, one from each, and a per-source "
            "correlation needs two or more")


def item_chars(sample: Sample) -> int:
    """Characters of a sample's texts, which its judge prompts repeat whole."""
    return len(sample.input) + len(sample.output) + len(sample.context or "")


def shortest_spread(train: Sequence[Sample], size: int, aspect: Aspect | None) -> list[int]:
    """Indices of ``size`` short samples with as many different human scores as they can have: shortest
    first, skipping a sample whose score of ``aspect`` is already taken while a sample with another score is
    left, then the shortest of the rest (ties in split order). Without ``aspect``, simply the shortest."""
    by_length = sorted(range(len(train)), key=lambda i: (item_chars(train[i]), i))
    picked: list[int] = []
    if aspect is not None:
        seen: set[float] = set()
        for i in by_length:
            score = train[i].human.get(aspect.name)
            if score is None or not math.isfinite(score) or round(score, 6) in seen:
                continue
            picked.append(i)
            seen.add(round(score, 6))
            if len(picked) == size:
                return picked
    return picked + [i for i in by_length if i not in picked][:size - len(picked)]


def select_validation(train: Sequence[Sample], size: int | None, seed: int, *,
                      by_group: bool = False, shortest: bool = False,
                      aspect: Aspect | None = None) -> tuple[Sample, ...]:
    """The validation set: the train split, or a subset of at most ``size`` samples (in split order).

    The subset is seeded, or with ``shortest`` short samples of different
    human scores of ``aspect`` (:func:`shortest_spread`: a few items of one
    score leave every correlation undefined). With ``by_group`` (group-level fitness)
    groups are taken in a seeded order (``shortest``: by their mean length),
    whole while they fit; the next one that does not fit gives a seeded part
    (its shortest) of its items when at least :data:`MIN_GROUP_ITEMS` places
    are left (the first one always does), so per-group correlations stay
    defined and a size smaller than a group (SummEval's 16 summaries of one
    article) is still the size asked for.
    """
    if size is None or size >= len(train):
        return tuple(train)
    rng = np.random.default_rng(seed)
    if by_group:
        members: dict[str, list[int]] = {}
        for i, s in enumerate(train):
            members.setdefault(s.group_id, []).append(i)
        groups = sorted(members)
        if shortest:
            order = sorted(range(len(groups)), key=lambda g: (
                np.mean([item_chars(train[i]) for i in members[groups[g]]]), g))
        else:
            order = rng.permutation(len(groups)).tolist()
        keep_idx: set[int] = set()
        for g in order:
            left = size - len(keep_idx)
            idx = members[groups[g]]
            if len(idx) <= left:
                keep_idx.update(idx)
                continue
            if keep_idx and left < MIN_GROUP_ITEMS:
                break
            if shortest:
                keep_idx.update(sorted(idx, key=lambda i: (item_chars(train[i]), i))[:left])
            else:
                keep_idx.update(rng.choice(idx, size=left, replace=False).tolist())
            break
        return tuple(s for i, s in enumerate(train) if i in keep_idx)
    if shortest:
        keep = set(shortest_spread(train, size, aspect))
    else:
        keep = set(rng.choice(len(train), size=size, replace=False).tolist())
    return tuple(s for i, s in enumerate(train) if i in keep)


def search_trace(events: Sequence[RunEvent]) -> dict[str, Any]:
    """What a run's events say about its search so far (for a live view).

    ``events`` are the run's events (``Store.run_events``). Returns ``started``
    (payload of ``hpss_started`` or None), ``evaluated`` (payloads in order),
    the latest ``advantages`` and ``population``, ``aux_missing`` counts per
    kind, the ``best`` evaluated payload (None until one is selectable) and
    any ``notes`` (stall, no selectable strategy, a fixed strategy that is not selectable).
    """
    out: dict[str, Any] = {"started": None, "evaluated": [], "advantages": None, "population": None,
                           "aux_missing": {}, "best": None, "notes": []}
    for e in events:
        kind, payload = e.kind, e.payload
        if kind == "hpss_started":
            out["started"] = payload
        elif kind == "hpss_evaluated":
            out["evaluated"].append(payload)
            # only a selectable strategy can be the best (runs from before coverage counted: any defined one)
            if payload.get("fitness") is not None and payload.get("selectable", True) and (
                    out["best"] is None or payload["fitness"] > out["best"]["fitness"]):
                out["best"] = payload
        elif kind == "hpss_advantages":
            out["advantages"] = payload["advantages"]
        elif kind == "hpss_population":
            out["population"] = payload["members"]
        elif kind == "hpss_auxiliary_missing":
            out["aux_missing"][payload["kind"]] = out["aux_missing"].get(payload["kind"], 0) + 1
        elif kind in ("hpss_stalled", "hpss_no_fitness", "hpss_no_judge", "hpss_not_selectable"):
            out["notes"].append(payload["message"])
    return out


def _round(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)


def _why_not(sel: metrics.SelectionFitness) -> str:
    """Why a strategy is not selectable, in words."""
    if sel.reason:
        return sel.reason
    return f"Spearman {sel.correlation:+.2f} on the {sel.n_scored} items it scored (above 0 needed)"


def _no_judge_message(selection: dict[Strategy, metrics.SelectionFitness], n: int) -> str:
    """Why the search adopted no strategy: how many failed coverage, how many had no positive correlation."""
    low_cover = sum(1 for s in selection.values() if s.reason.startswith("scored"))
    undefined = sum(1 for s in selection.values() if not math.isfinite(s.correlation))
    not_positive = sum(1 for s in selection.values()
                       if not s.reason and math.isfinite(s.correlation) and s.correlation <= 0)
    finite = [s.correlation for s in selection.values() if not s.reason]
    best = f"; the highest Spearman among eligible ones was {max(finite):+.2f}" if finite else ""
    return (f"HPSS adopted no judge: none of the {len(selection)} evaluated strategies scored at least "
            f"{metrics.MIN_SELECTION_COVERAGE:.0%} of the {n} validation items with a Spearman correlation "
            f"above 0 ({low_cover} scored too few items, {undefined} had no defined correlation, "
            f"{not_positive} correlated at or below 0{best}). Try a larger validation set or a stronger model, "
            "or fix a strategy (fixed_strategy) to accept one yourself.")


def _fit_warnings(history: Sequence[dict[str, Any]], aux: Auxiliaries, state: "SearchState", budget: int, *,
                  fixed: bool) -> list[dict[str, Any]]:
    """Fit-time warnings for the run summary: readings from alternatives, missing auxiliaries, unselectable
    strategies, a stalled search."""
    out = []
    alternatives = sum(h["from_alternatives"] for h in history)
    if alternatives:
        out.append(judge_warning("scores_from_alternatives", (
            f"{alternatives} validation ratings were read from the alternatives of a follow-up reply that "
            "gave no number (probability-weighted over the scale)"), alternatives))
    missing_aux = sum(aux.failures.values())
    if missing_aux:
        out.append(judge_warning("auxiliary_missing", (
            "auxiliary generations with nothing usable: " + ", ".join(f"{k} {v}" for k, v in aux.failures.items())
            + "; the items that needed them were not scored"), missing_aux))
    unselectable = sum(1 for h in history if not h["selectable"])
    if unselectable and not fixed:
        out.append(judge_warning("strategies_not_selectable", (
            f"{unselectable} of {len(history)} evaluated strategies were not selectable (too few validation "
            "items scored, or a Spearman at or below 0)"), unselectable))
    if not fixed and state.cost < budget:
        out.append(judge_warning("search_stalled", (
            f"the search stopped after {len(history)} evaluations, before its budget: every proposal was an "
            "already explored strategy")))
    return out


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
                 "factors": as_dict(strategy), "fitness": _round(value),
                 "correlation": _round(sel.correlation * 100), "coverage": round(sel.coverage, 4),
                 "n_scored": sel.n_scored, "selectable": sel.selectable, "reason": sel.reason,
                 "best_so_far": None if chosen is None else _round(search_value(self.selection[chosen])),
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


# --------------------------------------------------------------------------- the Method


@dataclass(frozen=True)
class ScoringSettings:
    """What scoring with a fitted HPSS judge reads from its parameters, built once from them.

    The stored parameters are merged with the defaults, so a judge saved before a parameter existed scores
    as a judge with its default (the scoring path used to read each one with ``.get`` and its own fallback,
    which for ``retry_unparsed`` differed from the default).
    """

    human_criteria: str | None
    judge_max_tokens: int
    explanation_chars: int
    aux_max_tokens: int
    retry_unparsed: bool
    seed: int

    @classmethod
    def of(cls, params: dict[str, Any]) -> "ScoringSettings":
        p = {**HPSS.default_params(), **params}
        return cls(human_criteria=p["human_criteria"], judge_max_tokens=int(p["judge_max_tokens"]),
                   explanation_chars=int(p["explanation_chars"]), aux_max_tokens=int(p["aux_max_tokens"]),
                   retry_unparsed=bool(p["retry_unparsed"]), seed=int(p["seed"]))


@register
class HPSS(Method):
    """Heuristic Prompting Strategy Search over 8 prompt factors.

    The run's train split is the validation set the search scores strategies
    on; the best strategy (with its auxiliaries) becomes the judge.

    Parameters
    ----------
    search : {"hpss", "greedy", "stepwise_greedy"}, default="hpss"
        ``hpss``: the paper's algorithm; ``greedy`` and ``stepwise_greedy``:
        the paper's search baselines on the same machinery (App. F.2).
    budget : int, default=50
        Strategy evaluations after the 21 of initialization (paper §4.1, App.
        F.3: 71 in total). Greedy gets the same total; Stepwise-Greedy always 21.
    population : int, default=5
        Population (beam) size k (App. F.3).
    mutations : int, default=2
        Mutations per population member per round g (App. F.3).
    exploit_prob : float, default=0.2
        Probability ρ of replacing an exploration proposal by the
        highest-advantage unexplored strategy (App. F.3, Algorithm 2).
    temperature : float, default=5.0
        Softmax temperature τ over the exploration scores, in Spearman × 100
        units (App. F.3; the units are the authors' code's).
    exploration_weight : float, default=4.0
        Weight λ of the UCB exploration term (App. F.3 and the authors' README).
    validation_size : int or None, default=None
        Score strategies on a subset of this many train samples (None:
        the whole train split). The paper's low-resource study used 10%.
    validation_pick : {"seeded", "shortest"}, default="seeded"
        How that subset is picked: at random (seeded, as the paper's), or
        the shortest items of different human scores. Every strategy rates
        every validation item with its whole text, and no two strategies
        share a prompt prefix, so on long items the shortest ones make a
        search much cheaper, at the cost of a validation set biased to short
        items (the quick look's two smallest sizes, chosen only when a
        backend is too slow for the others).
    fitness_level : {"natural", "sample", "group"}, default="natural"
        Level of the validation Spearman: ``sample`` = over all items
        (the paper's dataset level), ``group`` = per source, averaged
        (SummEval's summary level, App. A); ``natural`` = the dataset's
        natural level as passed by the run (``group`` for group-level data,
        else ``sample``). A per-group Spearman needs two or more items of a
        source: when every training item has a source of its own (the split
        spreads training items one per source), ``natural`` ranks at sample
        level with a warning and ``group`` is refused.
    base_scale : {None, "3", "5", "10", "50", "100"}, default=None
        Scale of the MT-Bench base strategy (§3.3); None: 3 for a 3-point
        human scale, else 5 (the authors' code: 3 for Topical-Chat, 5 elsewhere).
    human_criteria : str or None, default=None
        Human-written criteria text; None: the aspect's definition.
    fixed_strategy : str or None, default=None
        A strategy name (e.g. ``5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI``)
        to use without searching: it is scored once on validation and becomes the judge.
    judge_max_tokens : int, default=512
        Reply length of a judge call (the authors' code allows 4096).
    explanation_chars : int, default=600
        Longest explanation a judge reply may give (the reply's schema
        bounds it; the paper's replies are free text). A small model under a
        grammar writes until the bound, so a short one makes its strategies
        with explanations several times faster (the quick look's smaller sizes).
    example_chars : int or None, default=None
        Each in-context example's input (and context) cut to this many
        characters, marked where cut (None: whole, as in the paper). An
        example repeats a whole item, so on long items a strategy with
        examples reads several articles per rating (the quick look's smaller sizes).
    aux_max_tokens : int, default=512
        Reply length of an auxiliary generation (the paper does not give one).
    retry_unparsed : bool, default=True
        A judge reply without a rating gets one follow-up turn asking for the
        number alone (probability-weighted from logprobs on 3- and 5-point
        scales). Not in the paper, whose code falls back to a fixed number;
        without it a small local model leaves most strategies unscored.
    seed : int, default=42
        Seeds the search and the example selection (the authors' README uses 42).
    """

    name = "hpss"
    ordered_state = ("examples",)
    title = "HPSS (prompting-strategy search)"
    _parameter_constraints = {
        "search": Options(("hpss", "greedy", "stepwise_greedy")),
        "budget": Interval(int, 0, 12960), "population": Interval(int, 1, 100),
        "mutations": Interval(int, 1, 20), "exploit_prob": Interval(float, 0, 1),
        "temperature": Interval(float, 1e-6, None), "exploration_weight": Interval(float, 0, None),
        "fitness_level": Options(("natural", "sample", "group")),
        "base_scale": Options((None, "3", "5", "10", "50", "100")),
        "judge_max_tokens": Interval(int, 8, 8192), "explanation_chars": Interval(int, 40, 20000),
        "aux_max_tokens": Interval(int, 8, 8192), "example_chars": OptionalInterval(int, 100, None),
        "retry_unparsed": Options((True, False)), "seed": Interval(int, 0, None),
        "validation_size": OptionalInterval(int, 2, None), "validation_pick": Options(("seeded", "shortest"))}

    _parameter_labels = {
        "search": "Search algorithm", "budget": "Strategies evaluated", "population": "Population size",
        "mutations": "Mutations per step", "exploit_prob": "Chance to exploit", "temperature": "Softmax temperature",
        "exploration_weight": "Exploration weight", "validation_size": "Validation items",
        "validation_pick": "Validation items picked",
        "fitness_level": "Correlation level of fitness", "base_scale": "Start from scale",
        "human_criteria": "Human criteria", "fixed_strategy": "Fixed strategy",
        "judge_max_tokens": "Judge reply limit (tokens)", "explanation_chars": "Explanation limit (characters)",
        "aux_max_tokens": "Auxiliary reply limit (tokens)", "example_chars": "Example text limit (characters)",
        "retry_unparsed": "Ask again after an unreadable reply", "seed": "Random seed of the method"}
    _choice_labels = {"search": {"hpss": "HPSS (paper)", "greedy": "greedy", "stepwise_greedy": "stepwise greedy"},
                      "fitness_level": {"natural": "the dataset's own level", "sample": "per item",
                                        "group": "per input"},
                      "validation_pick": {"seeded": "at random (seeded)", "shortest": "shortest, of different scores"}}
    quick_params: ClassVar[dict[str, Any]] = {"budget": 9, "validation_size": 8}
    smaller_looks: ClassVar[tuple[dict[str, Any], ...]] = (
        {"budget": 5, "validation_size": 6, "explanation_chars": 200},
        {"budget": 3, "validation_size": 4, "judge_max_tokens": 256, "explanation_chars": 100, "example_chars": 400,
         "aux_max_tokens": 256},
        {"budget": 1, "validation_size": 4, "validation_pick": "shortest", "judge_max_tokens": 256,
         "explanation_chars": 100, "example_chars": 400, "aux_max_tokens": 256},
        {"budget": 1, "validation_size": 3, "validation_pick": "shortest", "judge_max_tokens": 256,
         "explanation_chars": 100, "example_chars": 400, "aux_max_tokens": 256})
    def __init__(self, *, search: str = "hpss", budget: int = 50, population: int = 5, mutations: int = 2,
                 exploit_prob: float = 0.2, temperature: float = 5.0, exploration_weight: float = 4.0,
                 validation_size: int | None = None, validation_pick: str = "seeded", fitness_level: str = "natural",
                 base_scale: str | None = None,
                 human_criteria: str | None = None, fixed_strategy: str | None = None,
                 judge_max_tokens: int = 512, explanation_chars: int = 600, example_chars: int | None = None,
                 aux_max_tokens: int = 512, retry_unparsed: bool = True, seed: int = 42):
        self.search = search
        self.budget = budget
        self.population = population
        self.mutations = mutations
        self.exploit_prob = exploit_prob
        self.temperature = temperature
        self.exploration_weight = exploration_weight
        self.validation_size = validation_size
        self.validation_pick = validation_pick
        self.fitness_level = fitness_level
        self.base_scale = base_scale
        self.human_criteria = human_criteria
        self.fixed_strategy = fixed_strategy
        self.judge_max_tokens = judge_max_tokens
        self.explanation_chars = explanation_chars
        self.example_chars = example_chars
        self.aux_max_tokens = aux_max_tokens
        self.retry_unparsed = retry_unparsed
        self.seed = seed

    def _validate_params(self) -> None:
        constraints = dict(self._parameter_constraints)
        if self.validation_size is not None:
            constraints["validation_size"] = Interval(int, 2, None)
        for pname, constraint in constraints.items():
            constraint.check(pname, getattr(self, pname))
        if self.human_criteria is not None and not isinstance(self.human_criteria, str):
            raise ValueError(f"human_criteria={self.human_criteria!r} must be a string or None")
        if self.fixed_strategy is not None:
            try:
                parse_strategy(str(self.fixed_strategy))
            except ValueError as exc:
                raise ValueError(f"fixed_strategy: {exc}") from None

    def shortest_share(self, n_train: int) -> float | None:
        """Every strategy reads the validation items: with ``validation_pick`` ``shortest``, the shortest."""
        if self.validation_pick != "shortest" or not self.validation_size or not n_train:
            return None
        return min(1.0, self.validation_size / n_train)

    def n_evaluations(self) -> int:
        """Strategy evaluations on the validation set."""
        if self.fixed_strategy:
            return 1
        if self.search == "stepwise_greedy":
            return 21
        return 21 + self.budget

    def estimate_waves(self, n_train: int, n_test: int) -> dict[str, int]:
        """The initial strategies go out together, their auxiliaries first (criteria, steps, then the per-item
        questions and references: 5 waves with the judge's); then each search evaluation is a wave of its own
        (the paper's order), with a wave for an auxiliary it needs first (one more, measured by ``bench
        api-speed``: 16 waves at budget 10). Scoring: the judge's auxiliaries per item, then the judge."""
        if self.fixed_strategy:
            return {"fit": 4, "score": 2}
        return {"fit": 6 + self.n_evaluations() - 21, "score": 2}

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        """An upper bound of the backend calls of ``fit`` and of scoring ``n_test`` samples.

        Fit: every strategy evaluation (:meth:`n_evaluations`) judges each
        validation item once, plus one follow-up turn per item when
        ``retry_unparsed``; auxiliaries: self-generated criteria (one per
        scale), AutoCoT steps (one per criteria source and scale), metrics
        questions and references (one per validation item each); with a
        fixed strategy only the auxiliaries it uses. Scoring: one judge call
        and at most one follow-up per item, and the per-item auxiliaries.
        The validation set is at most ``validation_size`` items at either
        level (:func:`select_validation`). Not counted: a
        request the backend rejects (a prompt over the context window) is
        sent once more on its own before it is recorded as missing.
        """
        n_val = n_train if not self.validation_size else min(n_train, self.validation_size)
        turns = 2 if self.retry_unparsed else 1
        if self.fixed_strategy:
            f = as_dict(parse_strategy(self.fixed_strategy))
            global_aux = (1 if f["criteria"] == "LLM" else 0) + (1 if f["autocot"] == "AutoCoT" else 0)
            per_item_aux = (f["metrics"] == "Metrics") + (f["reference"] == "Reference")
        else:
            aux = count_generations(0, 0)
            global_aux = aux["criteria"] + aux["steps"]
            per_item_aux = 2  # questions and references
        return {"fit": self.n_evaluations() * n_val * turns + global_aux + per_item_aux * n_val,
                "score": n_test * turns + per_item_aux * n_test}

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        """Search (or score the fixed strategy) and adopt the best selectable strategy as the judge.

        ``context.natural_level``: the dataset's meta-evaluation level (``fitness_level="natural"``).

        Selection: only a *selectable* strategy (:func:`select_best`:
        at least :data:`judge_engine.metrics.MIN_SELECTION_COVERAGE` of the
        validation items scored and a Spearman above zero) is adopted. When
        the search found none, the fit raises a ValueError saying why (and
        logs ``hpss_no_judge``): the MT-Bench base prompt is always among the
        evaluated strategies, so falling back to it would adopt an
        unselectable prompt silently. A ``fixed_strategy`` is a person's
        choice: it is kept even when not selectable, with a warning, and the
        judge records ``accepted_by_person``.
        """
        self._validate_params()
        llm, task, progress, log = context.llm, context.task, context.progress, context.log
        level = self.fitness_level
        if level == "natural":
            level = "group" if context.natural_level == "group" else "sample"
        level_warning = group_level_problem(train) if level == "group" else ""
        if level_warning and self.fitness_level == "group":
            raise ValueError(f"fitness_level='group' cannot rank strategies here: {level_warning}; choose "
                             "fitness_level='sample', or a split with several training items per source")
        if level_warning:
            level = "sample"
        validation = select_validation(train, self.validation_size, self.seed, by_group=level == "group",
                                       shortest=self.validation_pick == "shortest", aspect=aspect)
        aux = Auxiliaries(llm=llm, aspect=aspect, task=task, pool=validation, human_criteria=self.human_criteria,
                          max_tokens=self.aux_max_tokens, seed=self.seed, example_chars=self.example_chars, log=log)
        base = base_strategy(aspect, self.base_scale)
        evaluate = ValidationFitness(validation, aux, llm=llm, level=level,
                                     max_tokens=self.judge_max_tokens, total=self.n_evaluations(),
                                     retry=self.retry_unparsed, explanation_chars=self.explanation_chars,
                                     progress=progress, log=log)
        if log:
            log("hpss_started", {"search": "fixed" if self.fixed_strategy else self.search,
                                 "evaluations": self.n_evaluations(), "base": strategy_name(base),
                                 "validation_ids": [s.id for s in validation], "level": level})
        state, searched = self._search(base, evaluate, log)
        warnings: list[dict[str, Any]] = []
        if level_warning:
            warnings.append(judge_warning("fitness_per_item", (
                f"{level_warning}, so strategies were ranked by their Spearman over all validation items "
                "(sample level), not per source as on this dataset's natural level")))
        if self.fixed_strategy:
            best = searched
            sel = evaluate.selection[best]
            if not sel.selectable:
                message = (f"the fixed strategy {strategy_name(best)} is not selectable on validation "
                           f"({_why_not(sel)}); it is kept because a person chose it")
                warnings.append(judge_warning("not_selectable", message))
                if log:
                    log("hpss_not_selectable", {"strategy": strategy_name(best), "message": message})
        else:
            best = select_best(evaluate.selection)
            if best is None:
                message = _no_judge_message(evaluate.selection, len(validation))
                if log:
                    log("hpss_no_judge", {"message": message})
                raise ValueError(message)
        sel = evaluate.selection[best]
        base_sel = evaluate.selection.get(base)
        history = evaluate.history
        warnings.extend(_fit_warnings(history, aux, state, self.budget if not self.fixed_strategy else 0,
                                      fixed=bool(self.fixed_strategy)))
        judge_state = {
            "strategy": strategy_name(best), "factors": as_dict(best), "readable": describe(best),
            **aux.globals_for(best), "fitness": _round(search_value(sel)),
            "selection": sel.to_dict(), "accepted_by_person": bool(self.fixed_strategy),
            "base_strategy": strategy_name(base),
            "base_fitness": None if base_sel is None else _round(search_value(base_sel)),
            "base_selection": None if base_sel is None else base_sel.to_dict(),
            "explored": [{k: h[k] for k in ("index", "stage", "strategy", "fitness", "correlation", "coverage",
                                            "selectable", "unparsed", "missing_aux")} for h in history],
            "readings": {k: sum(h[f"read_{k}"] for h in history) for k in ("json", "text", "logprobs")}
            | {"from_alternatives": sum(h["from_alternatives"] for h in history),
               "missing": sum(h["unparsed"] + h["missing_aux"] for h in history)},
            "auxiliary_readings": {k: dict(v) for k, v in aux.readings.items()},
            "advantages": state.advantages() if state.A else {}, "auxiliary_failures": dict(aux.failures),
            "validation_ids": [s.id for s in validation], "warnings": warnings,
            # auxiliaries the rubric checks refused: treated as missing, kept here with their reasons
            "rejected": list(aux.rejected), "flagged": list(aux.flagged)}
        if log:
            log("hpss_best", {"strategy": judge_state["strategy"], "fitness": judge_state["fitness"],
                              "base_fitness": judge_state["base_fitness"], "coverage": sel.coverage,
                              "correlation": _round(sel.correlation * 100),
                              "selectable": sel.selectable, "accepted_by_person": bool(self.fixed_strategy),
                              "selectable_strategies": sum(s.selectable for s in evaluate.selection.values()),
                              "evaluated": len(evaluate.selection)})
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state=judge_state)

    def _search(self, base: Strategy, evaluate: "ValidationFitness",
                log: EventSink | None) -> tuple[SearchState, Strategy]:
        """Run the configured search (or score the fixed strategy); returns the state and the best strategy."""
        rng = np.random.default_rng(self.seed)
        if self.fixed_strategy:
            state, best = SearchState(), parse_strategy(self.fixed_strategy)
            state.perf[best] = evaluate(best, "fixed")
            return state, best
        if self.search == "greedy":
            state = greedy_search(base, evaluate, rng, budget=20 + self.budget)
            return state, state.best(1)[0]
        if self.search == "stepwise_greedy":
            state = stepwise_greedy_search(base, evaluate)
            return state, state.best(1)[0]
        state = initialize(base, evaluate, evaluate_many=evaluate.many)
        shown: list[list[Strategy]] = [[]]

        def log_advantages() -> None:
            if log:
                log("hpss_advantages", {"after": len(evaluate.history), "advantages": state.advantages()})

        def log_population(round_no: int, pop: list[Strategy]) -> None:
            if log and pop != shown[0]:  # a round whose proposals were all explored changes nothing
                shown[0] = list(pop)
                log("hpss_population", {"round": round_no, "after": len(evaluate.history), "members": [
                    {"strategy": strategy_name(s), "fitness": _round(state.perf[s])} for s in pop]})

        log_advantages()
        log_population(0, state.best(self.population))
        best = iterative_search(state, evaluate, rng, population=self.population, mutations=self.mutations,
                                rho=self.exploit_prob, tau=self.temperature, lam=self.exploration_weight,
                                budget=self.budget, on_round=log_population, on_update=log_advantages)
        if state.cost < self.budget and log:
            log("hpss_stalled", {"evaluations": len(evaluate.history), "message": (
                f"the search stopped after {len(evaluate.history)} evaluations: for 1000 rounds every proposal "
                "was an already explored strategy (as in the paper's Algorithm 2)")})
        return state, best

    @classmethod
    def auxiliaries_for(cls, judge: Judge, llm: LLM) -> Auxiliaries:
        """The judge's auxiliaries: its criteria, steps and examples fixed; per-sample ones generated anew."""
        st = judge.state
        settings = ScoringSettings.of(judge.params)
        return Auxiliaries(llm=llm, aspect=judge.aspect_record, task=judge.task_info,
                           human_criteria=settings.human_criteria, max_tokens=settings.aux_max_tokens,
                           seed=settings.seed, fixed={"criteria": st.get("criteria"), "steps": st.get("steps"),
                                  "examples": st.get("examples") or []})

    @classmethod
    def render(cls, judge: Judge, sample: Sample, *, llm: LLM, strategy: str | None = None,
               pool: Sequence[Sample] = (), leave_out: bool = False) -> str | None:
        """The full prompt ``judge`` sends for ``sample``; None when an auxiliary it needs is missing.

        With ``strategy`` (any explored strategy name) its auxiliaries are
        rebuilt as during the search, examples drawn from ``pool`` (the
        validation samples) and, with ``leave_out``, without ``sample`` itself.
        Generations already made are answered by the cache.
        """
        st = parse_strategy(strategy or judge.state["strategy"])
        settings = ScoringSettings.of(judge.params)
        aux = cls.auxiliaries_for(judge, llm) if strategy is None else Auxiliaries(
            llm=llm, aspect=judge.aspect_record, task=judge.task_info, pool=tuple(pool),
            human_criteria=settings.human_criteria, max_tokens=settings.aux_max_tokens, seed=settings.seed)
        [inputs] = aux.inputs_for(st, [sample], leave_out=leave_out)
        return None if inputs is None else build_prompt(st, sample, judge.aspect_record, judge.task_info, inputs)

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        strategy = parse_strategy(judge.state["strategy"])
        aux = cls.auxiliaries_for(judge, llm)
        settings = ScoringSettings.of(judge.params)
        result = evaluate_strategy(strategy, samples, aux, llm=llm, max_tokens=settings.judge_max_tokens,
                                   leave_out=False, retry=settings.retry_unparsed,
                                   explanation_chars=settings.explanation_chars,
                                   progress=(lambda d, t: progress(d, t, "scoring")) if progress else None)
        verdicts = []
        for i, (s, score, judged, raw, prompt) in enumerate(zip(samples, result.scores, result.judge_scores,
                                                                 result.raw, result.prompts)):
            meta: dict[str, Any] = {"strategy": judge.state["strategy"], "source": result.sources[i]}
            if result.followed_up[i]:
                meta["follow_up"] = True
            if prompt is None:
                meta["missing"] = "auxiliary"
            elif math.isnan(judged):
                meta["missing"] = "unparsed"
            else:
                meta["judge_score"] = judged
            if math.isnan(judged):
                meta["missing_reason"] = result.reasons[i]
            refused = [r for r in aux.rejected if r["key"] == s.id] if prompt is None else []
            if refused:  # this item's auxiliary was generated anew and refused: say so, not just "missing"
                meta["auxiliary_rejected"] = "; ".join(f"{r['kind']}: {r['reason']}" for r in refused)
                meta["missing_reason"] = "an auxiliary was refused by the rubric checks (" + ", ".join(
                    sorted({f"{r['kind']}: {r['rule'].replace('_', ' ')}" for r in refused})) + ")"
            verdicts.append(Verdict(sample_id=s.id, aspect=judge.aspect["name"], score=score, explanation=raw,
                                    raw=raw, metadata=meta))
        return verdicts
