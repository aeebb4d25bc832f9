"""HPSS's heuristic: the advantage of every factor value, estimated from the strategies evaluated so far.

:class:`SearchState` holds T, A, N and M (§3.3); :func:`initialize` is Algorithm 1 with the initial
advantages (Eq. 2), :func:`exploration_scores` Eq. 3 and 4, :func:`update_advantage` Eq. 5 and 6,
:func:`exploit` Eq. 7. The search loops that use them are in :mod:`.search`. Moved out of
:mod:`judge_engine.methods.hpss.method` (issue 46 item 7), which re-exports these names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .fitness import Fitness
from .strategy import FACTORS, Strategy, all_strategies, neighbours, replace_value


def rank_key(value: float) -> float:
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
        return sorted(self.perf, key=lambda s: rank_key(self.perf[s]), reverse=True)[:k]

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
