"""HPSS, Heuristic Prompting Strategy Search (Wen et al., 2025): the method in three modules.

* :mod:`.strategy` — the strategy space (8 prompt factors, 12,960 strategies)
  and the one builder of a judge prompt from a strategy;
* :mod:`.auxiliaries` — what some strategies need besides the sample
  (criteria, AutoCoT steps, metrics questions, references, in-context
  examples), generated lazily through the one LLM call path;
* :mod:`.method` — the search (initialization, advantages, exploration and
  exploitation, the Greedy baselines) and the registered :class:`HPSS` method;
* :mod:`.state` — what a fitted judge learned, as a typed record the page reads.

The names below are the ones used outside the package (the page, the
benchmarks); the rest stay in their module.
"""

from .auxiliaries import Auxiliaries
from .method import HPSS, ValidationFitness, search_trace, search_value, select_best, select_validation
from .state import HPSSState
from .strategy import (FACTOR_NAMES, FACTOR_TITLES, FACTOR_VALUES, FACTORS, VALUE_TITLES, Strategy, all_strategies,
                       base_strategy, describe, parse_strategy, strategy_name)

__all__ = ["FACTORS", "FACTOR_NAMES", "FACTOR_TITLES", "FACTOR_VALUES", "HPSS", "HPSSState", "VALUE_TITLES", "Auxiliaries",
           "Strategy", "ValidationFitness", "all_strategies", "base_strategy", "describe", "parse_strategy",
           "search_trace", "search_value", "select_best", "select_validation", "strategy_name"]
