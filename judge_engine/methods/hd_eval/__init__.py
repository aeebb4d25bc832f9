"""HD-Eval, hierarchical criteria decomposition (Liu et al., 2024): the method in nine modules.

* :mod:`.settings` — the parameters as one frozen record, built once per fit
  or scoring and handed to every stage;
* :mod:`.state` — what a fit learned (``judge.state``, stored as JSON) as one
  typed record with the accessors scoring and the page read;
* :mod:`.tree` — the criteria tree (JSON-native nodes, layers, the layer-1
  aspects, adding and replacing children);
* :mod:`.decomposition` — hierarchical criteria decomposition (§2.1, Eq. 1,
  App. G.1): the LLM proposes sub-criteria, read in the paper's or the
  sentence form and checked by :mod:`judge_engine.rubric_checks`;
* :mod:`.scoring` — hierarchy-aware scoring (§2.1, App. G.2): every sample
  scored 1-5 on each criterion with its parent named;
* :mod:`.aggregation` — human preference-guided aggregation (§2.2, Eq. 2):
  the white-box aggregator from criterion scores to the human scores;
* :mod:`.pruning` — attribution pruning (§2.3, Eq. 3): permutation
  importance chooses the criteria decomposed next;
* :mod:`.editing` — human in the loop: the tree of a run as versioned,
  attributed curated items, the next round's tree, what an edit did;
* :mod:`.method` — iterative alignment training (App. C.1, Algorithm 1) and
  the registered :class:`HDEval` method.

The names below are the ones used outside the package (the page, the
benchmarks, the tests); the rest stay in their module.
"""

from .aggregation import aspect_groups
from .decomposition import (DECOMPOSE_DRAWS, DECOMPOSE_TEMPLATE, CheckedChildren, ReadChildren, check_children,
                            flagged_nodes, parse_decomposition, statement_schema)
from .editing import (EditableTree, NodeSummary, RefitPreview, add_node, edit_node, load_tree, next_round_tree,
                      node_summary, refit_preview, scored_by, seed_tree, stale_nodes, tree_owner, undo_node)
from .method import DEFAULT_N_ASPECTS, HDEval
from .pruning import prune_by_attribution
from .scoring import SCORE_TEMPLATE
from .settings import HDEvalSettings
from .state import HDEvalState
from .tree import add_children, initial_tree, known_aspects, remove_llm_children, tree_index

__all__ = ["DECOMPOSE_DRAWS", "DECOMPOSE_TEMPLATE", "DEFAULT_N_ASPECTS", "SCORE_TEMPLATE", "CheckedChildren",
           "EditableTree", "HDEval", "HDEvalSettings", "HDEvalState", "NodeSummary", "ReadChildren", "RefitPreview",
           "add_children", "add_node",
           "aspect_groups", "check_children", "edit_node", "flagged_nodes", "initial_tree", "known_aspects",
           "load_tree", "next_round_tree", "node_summary", "parse_decomposition", "prune_by_attribution",
           "refit_preview", "remove_llm_children", "scored_by", "seed_tree", "stale_nodes", "statement_schema", "tree_index", "tree_owner",
           "undo_node"]
