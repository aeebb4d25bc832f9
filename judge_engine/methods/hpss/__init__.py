"""HPSS, Heuristic Prompting Strategy Search (Wen et al., 2025): the method in modules of one job each.

* :mod:`.strategy` — the strategy space (8 prompt factors, 12,960 strategies)
  and the one builder of a judge prompt from a strategy;
* :mod:`.auxiliaries` — what some strategies need besides the sample
  (criteria, AutoCoT steps, metrics questions, references, in-context
  examples), generated lazily through the one LLM call path;
* :mod:`.evaluation` — one strategy's (or several independent strategies')
  judge calls on a set of samples, and reading their ratings;
* :mod:`.validation` — which training items the strategies are validated on;
* :mod:`.fitness` — r(𝒯): the coverage-aware Spearman, the search's
  ``evaluate`` callback, and which strategy a fit may adopt;
* :mod:`.advantages` — the heuristic: the search state, Algorithm 1 and
  Eq. 2-7 (advantages, exploration scores, exploitation);
* :mod:`.search` — Algorithm 2 and the Greedy and Stepwise-Greedy baselines;
* :mod:`.reports` — the fit's warnings and the trace a live view reads;
* :mod:`.method` — the registered :class:`HPSS` method (parameters, ``fit``,
  scoring with a fitted judge);
* :mod:`.state` — what a fitted judge learned, as a typed record the page reads.

The names below are the ones used outside the package (the page, the
benchmarks); the rest stay in their module.
"""

from .auxiliaries import Auxiliaries
from .fitness import ValidationFitness, search_value, select_best
from .method import HPSS
from .reports import search_trace
from .state import HPSSState
from .strategy import (FACTOR_NAMES, FACTOR_TITLES, FACTOR_VALUES, FACTORS, VALUE_TITLES, Strategy, all_strategies,
                       base_strategy, describe, parse_strategy, strategy_name)
from .validation import select_validation

__all__ = ["FACTORS", "FACTOR_NAMES", "FACTOR_TITLES", "FACTOR_VALUES", "HPSS", "HPSSState", "VALUE_TITLES", "Auxiliaries",
           "Strategy", "ValidationFitness", "all_strategies", "base_strategy", "describe", "parse_strategy",
           "search_trace", "search_value", "select_best", "select_validation", "strategy_name"]
