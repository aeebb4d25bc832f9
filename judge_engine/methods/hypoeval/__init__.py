"""HypoEval, hypothesis-guided evaluation (the paper's §3): the method in twelve modules.

* :mod:`.bank` — the bank's entries (JSON-native, keyed by a hash of their
  text) and a person's curated ones;
* :mod:`.replies` — reading generation and repetition-check replies (JSON,
  then the free-text fallbacks);
* :mod:`.settings` — the parameters as one frozen record the stages read;
* :mod:`.context` — what every stage of one fit shares (LLM, aspect, task,
  settings, event sink, call and reply counters);
* :mod:`.agents` — M_G and M_R: the generation and refinement calls, their
  evidence blocks, the rubric checks and the sampled draws;
* :mod:`.reward` — §3.1 the UCB reward and its bookkeeping;
* :mod:`.generation` — §3.1 hypothesis generation: initialisation, the
  update stage with the wrong-sample bank and refinement rounds,
  literature-only hypotheses, the repetition check and the union;
* :mod:`.selection` — §3.2 selection of H_ev on the training samples;
* :mod:`.evaluation` — M_E and §3.3 hypothesis-guided evaluation (mean over
  H_ev), plus the layout benchmark;
* :mod:`.state` — the judge's learned state as typed records over its
  stored JSON;
* :mod:`.views` — the page's views of a run (the bank replayed from events,
  per-hypothesis test scores);
* :mod:`.method` — the registered :class:`HypoEval` method.

The names below are the ones used outside the package (the page, the
benchmarks, the tests); the rest stay in their module.
"""

from .agents import check_statements, generate_hypotheses, refine_hypotheses
from .bank import as_criterion, hypothesis_key, new_entry
from .context import SECOND_DRAW_TEMPERATURE, Context
from .evaluation import compare_layouts, evaluate_with_hypotheses, score_instructions
from .generation import (generate_and_refine, initialize_bank, remove_repetitions, union_banks, update_bank,
                         w_hyp_threshold)
from .method import HypoEval
from .replies import (hypotheses_schema, parse_hypotheses, parse_repetition, read_hypotheses, read_repetition,
                      read_statements)
from .reward import by_reward, default_reward_b, exploitation, reward
from .selection import select_hypotheses
from .settings import HypoEvalSettings
from .state import HypoEvalState, StoredHypothesis
from .views import bank_from_events, per_hypothesis_scores, rescored_by

__all__ = ["SECOND_DRAW_TEMPERATURE", "Context", "HypoEval", "HypoEvalSettings", "HypoEvalState", "StoredHypothesis",
           "as_criterion", "bank_from_events", "by_reward", "check_statements", "compare_layouts", "default_reward_b",
           "evaluate_with_hypotheses", "exploitation", "generate_and_refine", "generate_hypotheses",
           "hypotheses_schema", "hypothesis_key", "initialize_bank", "new_entry", "parse_hypotheses",
           "parse_repetition", "per_hypothesis_scores", "read_hypotheses", "read_repetition", "read_statements",
           "refine_hypotheses", "remove_repetitions", "rescored_by", "reward", "score_instructions", "select_hypotheses",
           "union_banks", "update_bank", "w_hyp_threshold"]
