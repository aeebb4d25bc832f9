"""HPSS's search loops: Algorithm 2 and the paper's Greedy and Stepwise-Greedy baselines (App. F.1, F.2).

Each calls ``evaluate`` (:data:`.fitness.Fitness`) one strategy after another, in the paper's order: a
proposal depends on the fitness of the ones before it. The advantages they read and update are in
:mod:`.advantages`. Moved out of :mod:`judge_engine.methods.hpss.method` (issue 46 item 7), which
re-exports these names.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .advantages import SearchState, exploit, exploration_scores, rank_key, update_advantage
from .fitness import Fitness
from .strategy import FACTOR_NAMES, FACTORS, Strategy, all_strategies, neighbours, replace_value

STEPWISE_ORDER = ("scale", "example", "criteria", "reference", "cot", "autocot", "metrics", "order")
"""Factor order of the Stepwise-Greedy baseline: the rows of paper Table 1 (App. F.2)."""


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
        # dict.fromkeys, not set: among strategies of equal fitness (every unscored one ranks last) a set's order
        # follows Python's per-process string hashing, so the same seed chose another population in another process
        pop = sorted(dict.fromkeys(new_pop), key=lambda s: rank_key(state.perf[s]), reverse=True)[:population]
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
        current = max(climb, key=lambda s: rank_key(state.perf[s])) if restart else state.best(1)[0]
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
            current = max((s for s in options if s in state.perf), key=lambda s: rank_key(state.perf[s]))
        if budget is None or state.cost >= budget:
            return state
        if state.cost == before:  # the pass changed nothing: start again somewhere new
            start = random_unexplored(state, space, rng)
            if start is None:
                return state
            state.perf[start] = evaluate(start, "restart")
            state.cost += 1
            current = start
