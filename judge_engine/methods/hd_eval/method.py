"""HD-Eval (Liu et al., 2024): hierarchical criteria decomposition with a white-box aggregator.

The evaluation is decomposed into a tree of criteria whose first layer is
the dataset's human aspects; an LLM proposes finer criteria layer by layer,
scores every sample on every criterion with a prompt naming the criterion's
parent, and a scikit-learn regressor trained on the human scores aggregates
all criterion scores into the aspects' scores. Permutation importance of
that aggregator picks which criteria of the current layer are decomposed
further (Algorithm 1, App. C.1).

Paper sections and the modules of this package that implement them:

* §2.1, Eq. 1, App. G.1 (criteria decomposition) -> :func:`.decomposition.decompose_criteria`
  in one of two forms (the ``criteria_form`` parameter). The paper's:
  named children with definitions (prompt
  ``prompts/hd_eval_decompose_named.txt``, schema
  :func:`.decomposition.decomposition_schema`). The sentence form, for small models:
  sentences that start "A good <output>" under a grammar, each a child
  whose name is taken from its sentence (prompt
  ``prompts/hd_eval_decompose.txt``, schema :func:`.decomposition.statement_schema`).
  :func:`.decomposition.parse_decomposition` is the free-text fallback of both, and a
  reply with fewer than 2 usable children gets up to
  ``DECOMPOSE_DRAWS - 1`` more sampled draws; one layer's decompositions
  (Algorithm 1, lines 2-6) are :func:`.decomposition.decompose_layer`;
* §2.1, App. G.2 (hierarchy-aware prompting) -> :func:`.scoring.hierarchy_aware_scoring`
  through the shared :mod:`judge_engine.criteria_scoring` (instructions in
  ``prompts/hd_eval_score.txt``; the parent is the "aspect" of the prompt;
  score first, short output);
* §2.2, Eq. 2, App. C.3 (human preference-guided aggregation) ->
  :func:`.aggregation.fit_aggregator` (:mod:`judge_engine.aggregate`, one
  multi-output model per group of aspects sharing a range: footnote 11);
* §2.3, Eq. 3 (attribution pruning) -> :func:`.pruning.attribution_importance`,
  :func:`.pruning.prune_by_attribution` and the choice of the criteria to
  decompose, :func:`.pruning.choose_expansion` (:mod:`judge_engine.explain`); what it kept
  (decomposed further) and pruned per layer is in ``judge.state["pruning"]``
  and, flat, ``judge.state["expanded_nodes"]`` / ``judge.state["pruned_nodes"]``;
* App. C.1, Algorithm 1 (iterative alignment training) -> :meth:`HDEval.fit`,
  one call per stage above, each layer's results kept in
  :class:`AlignmentTraining`; layer 1 (the human aspects, App. C.2) ->
  :func:`.tree.layer1_aspects`.

Honest scores. A criterion score the reply did not give stays NaN; at
prediction the aggregator needs every feature, so a missing criterion is
filled with its training mean (ours; the paper does not say) and counted in
``Verdict.metadata["imputed_criteria"]``; an item with more than
``max_imputed_fraction`` of its criteria imputed gets no score (missing,
"k of n criteria imputed"). Fit-time problems (a decomposition with no
children, training cells imputed, criteria dropped, an aggregator that does
not agree with the humans out of fold) are ``judge.state["warnings"]``.

Why a sentence form at all: a very small model (the embedded 135M one) asked
for free names tends to name a child after its parent, another aspect or
the schema's own keys, which gives the aggregator nothing new; a grammar that
makes every child complete "A good summary ..." leaves it only the facet to
write, and that it writes usably. A capable model needs no such frame, so
``criteria_form="auto"`` uses the sentence form on the embedded model only
(:func:`judge_engine.methods.base.resolve_criteria_form`).

Generated sub-criteria go through :mod:`judge_engine.rubric_checks`; what they refuse and why is
in :mod:`.decomposition`.

Human in the loop (the paper's future work): the tree is the optional
``criteria_tree`` parameter. A person-edited tree (accepted, edited, added,
moved, deleted nodes; nodes removed from the aggregator; nodes marked to
expand or re-decompose) is the starting point of the next run: nodes already
decomposed are not decomposed again, and the cache answers every scoring
call whose node text, definition, parent and sample are unchanged.

The tree's JSON format is in :mod:`.tree`; the edits of a run's tree in :mod:`.editing`.

References
----------
Liu, Y., Yang, T., Huang, S., Zhang, Z., Huang, H., Wei, F., Deng, W., Sun, F.
and Zhang, Q. (2024). HD-Eval: Aligning Large Language Model Evaluators
Through Hierarchical Criteria Decomposition. ACL. arXiv:2402.15754.
"""

from __future__ import annotations

import copy
import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from ... import data
from ...aggregate import AGGREGATORS, Aggregator, cross_validated_correlation
from ...criteria_scoring import LAYOUT_LABELS, LAYOUTS, CriterionScore, estimate_criteria_calls, source_counts
from ...llm import LLM
from ...metrics import MIN_SELECTION_COVERAGE
from ...records import Aspect, Sample, Verdict
from ...rubric_evidence import refusal_record, same_score
from ...rubric_model_check import estimate_calls as model_check_calls
from ..base import (CRITERIA_FORM_LABELS, CRITERIA_FORMS, EventSink, FitContext, Interval, Judge, Method, Options,
                    OptionalType, Progress, judge_warning, register, resolve_criteria_form)
from .aggregation import _clean_corr, fit_aggregator
from .decomposition import ASK_CHILDREN, DECOMPOSE_DRAWS, LayerDecomposition, decompose_layer, flagged_nodes
from .overlap import HeldProgress, LayerAhead, kept_features, layer_two_ahead, overlaps, score_test_ahead
from .pruning import Expansion, attribution_importance, choose_expansion
from .scoring import hierarchy_aware_scoring
from .settings import HDEvalSettings
from .state import HDEvalState
from .tree import initial_tree, layer1_aspects, tree_index

DEFAULT_N_ASPECTS = max(len(b.aspects) for b in data.BENCHMARKS.values())
"""Aspects assumed by :meth:`HDEval.estimate_calls` when neither ``n_aspects`` nor ``aspects`` says how many:
the most any built-in benchmark has (6: Topical-Chat, HANNA), so the estimate is an upper bound on those;
a custom dataset with more aspects must pass ``n_aspects``."""

MADE_SHARE = 0.4
"""Calls a fit makes over those :meth:`HDEval.estimate_calls` counts (an upper bound: each score call with its
possible follow-up turn, every decomposition's draws, every child and expansion the tree may get). Measured
against the count a run's estimate makes (2026-11-29): 60 of 120 for SmolLM2 on 4 Topical-Chat items with one
layer (only the follow-ups are loose), 1,574 of 3,989 in issue 46's paper-default SummEval run (0.39), 546 of
1,707 on simulated world 0 at `bench estimate-waves`' sizes (0.32)."""


def fit_warnings(final: Aggregator, used: Sequence[str], failures: dict[str, int],
                 scores: dict[str, list[CriterionScore]], n_train: int, layers: Sequence[dict[str, Any]],
                 target: str) -> list[dict[str, Any]]:
    """What the run summary must say about the fitted judge (besides per-node ``no_children``)."""
    out = []
    imputed = sum(failures.get(f, 0) for f in used)
    if imputed:
        out.append(judge_warning(
            "imputed_criteria", f"{imputed} of {n_train * len(used)} training criterion scores were missing "
            "and filled with the criterion's training mean for the aggregator", imputed))
    if final.dropped:
        out.append(judge_warning(
            "criteria_dropped", "no training item has a score for " + ", ".join(final.dropped)
            + "; these criteria are not inputs of the aggregator", len(final.dropped)))
    alternatives = sum(1 for f in scores for c in scores[f] if c.from_alternatives)
    if alternatives:
        out.append(judge_warning(
            "scores_from_alternatives", f"{alternatives} training criterion scores were read from the "
            "alternatives of a reply that gave no number", alternatives))
    cv = (layers[-1]["cv"].get(target) or {}).get("pearson") if layers else None
    if cv is None or not cv > 0:
        out.append(judge_warning(
            "not_aligned", f"the aggregator's out-of-fold training Pearson for {target!r} is "
            + ("undefined (too few items or constant predictions)" if cv is None else f"{cv:.2f}")
            + ": it does not agree with the humans on the training items"))
    return out


@dataclass
class AlignmentTraining:
    """The running record of one fit (Algorithm 1): what each stage added so far; :meth:`finish` makes it the
    judge's :class:`HDEvalState`. Mutable on purpose: the tree grows and the records accumulate layer by layer."""

    tree: dict[str, Any]
    """The criteria tree, grown in place by the decompositions."""
    train: list[Sample]
    """The training items scored on every layer-1 aspect."""
    scores: dict[str, list[CriterionScore]] = field(default_factory=dict)
    """Node id -> one training score per item (scored once, in the layer the node joined)."""
    importance: dict[str, dict[str, float]] = field(default_factory=dict)
    """Attribution of the last aggregators fitted."""
    layers: list[dict[str, Any]] = field(default_factory=list)
    """Per layer: its features and the aggregators' out-of-fold correlations."""
    failures: dict[str, int] = field(default_factory=dict)
    """Node id -> training items its replies gave no score for."""
    coverage: dict[str, float] = field(default_factory=dict)
    """Node id -> share of the training items scored."""
    pruning: list[dict[str, Any]] = field(default_factory=list)
    """Per layer from 2: what was decomposed and pruned (:meth:`.pruning.Expansion.to_record`)."""
    warnings: list[dict[str, Any]] = field(default_factory=list)
    """Fit-time warnings, in the order the stages raised them."""
    decomposition_reads: dict[str, int] = field(default_factory=dict)
    """Decompositions by how their reply was read, over all layers."""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    """Children the rubric checks refused, over all layers."""
    aggs: list[Aggregator] = field(default_factory=list)
    """The last layer's aggregators, one per group of aspects sharing a range."""

    def add_expansion(self, expansion: Expansion, emit: EventSink) -> None:
        if expansion.warning is not None:
            self.warnings.append(expansion.warning)
        self.pruning.append(expansion.to_record())
        emit("expansion_chosen", {"layer": expansion.layer, "chosen": expansion.chosen, "reason": expansion.reason,
                                  "pruned": expansion.pruned, "ineligible": expansion.ineligible,
                                  "candidates": expansion.candidates, "min_coverage": MIN_SELECTION_COVERAGE})

    def add_decomposition(self, done: LayerDecomposition) -> None:
        for read, n in done.reads.items():
            self.decomposition_reads[read] = self.decomposition_reads.get(read, 0) + n
        self.rejected.extend(done.rejected)
        self.warnings.extend(done.warnings)

    def features(self, layer: int) -> list[str] | None:
        """The aggregator's inputs at ``layer``: every node so far that feeds it (None: the layer grew no node)."""
        nodes = tree_index(self.tree)
        features = [nid for nid, n in nodes.items() if n["layer"] <= layer and n.get("in_aggregator", True)]
        if layer > 1 and not any(nodes[f]["layer"] == layer for f in features):
            return None
        return features

    def add_scores(self, layer: int, new: Sequence[str], scores: dict[str, list[CriterionScore]],
                   emit: EventSink) -> None:
        self.scores.update(scores)
        for f in new:
            self.failures[f] = sum(1 for c in self.scores[f] if c.missing)
            self.coverage[f] = 1.0 - self.failures[f] / len(self.train)
        emit("layer_scored", {"layer": layer, "criteria": list(new), "missing": {f: self.failures[f] for f in new},
                              "reads": source_counts([c for f in new for c in self.scores[f]])})
        self.refuse_same_score(layer, new, emit)

    def refuse_same_score(self, layer: int, new: Sequence[str], emit: EventSink) -> None:
        """Evidence in any language (issue 65): a generated node that gives every training item the same score
        leaves the aggregator's input (``in_aggregator`` False) and is kept in ``rejected`` with that reason.
        The aspects of layer 1 are the dataset's, not generated."""
        nodes = tree_index(self.tree)
        for f in new:
            node = nodes.get(f)
            if node is None or node["layer"] < 2:
                continue
            reason = same_score(None if c.missing else c.score for c in self.scores[f])
            if reason:
                for stored in self.tree.get("nodes", []):  # tree_index's nodes are copies
                    if stored.get("id") == f:
                        stored["in_aggregator"] = False
                record = refusal_record(f"{node.get('name', '')}: {node.get('definition', '')}", reason,
                                        stage=f"layer {layer}: scores on the training items", node=f,
                                        parent=node.get("parent"), name=node.get("name", ""),
                                        definition=node.get("definition", ""))
                self.rejected.append(record)
                emit("node_refused", record)

    def values(self, features: Sequence[str]) -> dict[str, list[float]]:
        return {f: [c.score for c in self.scores[f]] for f in features}

    def add_aggregators(self, layer: int, features: list[str], aggs: list[Aggregator],
                        importance: dict[str, dict[str, float]], target: str, emit: EventSink) -> None:
        self.aggs, self.importance = aggs, importance
        cv = {}
        for agg in aggs:
            cv.update(_clean_corr(cross_validated_correlation(agg)))
        self.layers.append({"layer": layer, "features": features, "cv": cv})
        emit("aggregator_fitted", {"layer": layer, "features": len(features), "cv_target": cv.get(target),
                                   "importance": {f: round(v["importance"], 6) for f, v in importance.items()}})

    def finish(self, target: str, aspects: Sequence[Aspect], form: str, emit: EventSink) -> HDEvalState:
        """The judge's state: the aggregator of the group holding ``target``, the warnings of the whole fit."""
        target_group = next(i for i, agg in enumerate(self.aggs) if target in agg.targets)
        final = self.aggs[target_group]
        used = list(final.features)
        n_missing = sum(self.failures.get(f, 0) for f in used)
        reads = source_counts([c for f in self.scores for c in self.scores[f]])
        emit("fit_done", {"nodes": len(self.tree["nodes"]), "features": len(used), "missing_scores": n_missing,
                          "cells": len(self.train) * len(used), "reads": reads,
                          "decomposition_reads": self.decomposition_reads})
        self.warnings.extend(fit_warnings(final, used, self.failures, self.scores, len(self.train), self.layers,
                                          target))
        chosen = [rec for rec in self.pruning if rec["reason"] == "permutation importance"]
        return HDEvalState(tree=self.tree, aspects=tuple(aspects), criteria_form=form,
                           aggregators=tuple(a.to_state() for a in self.aggs), target_group=target_group,
                           features=tuple(used), train_ids=tuple(s.id for s in self.train),
                           importance=self.importance, layers=tuple(self.layers), missing_scores=self.failures,
                           coverage={f: round(c, 4) for f, c in self.coverage.items()}, pruning=tuple(self.pruning),
                           expanded_nodes=tuple(nid for rec in chosen for nid in rec["expanded"]),
                           pruned_nodes=tuple(nid for rec in chosen for nid in rec["pruned"]), reads=reads,
                           decomposition_reads=self.decomposition_reads, warnings=tuple(self.warnings),
                           rejected=tuple(self.rejected), flagged=tuple(flagged_nodes(self.tree)))


def _aggregate(train: Sequence[Sample], values: dict[str, list[float]], features: list[str],
               aspects: Sequence[Aspect], settings: HDEvalSettings) -> tuple[list[Aggregator], dict[str, dict[str, float]]]:
    """§2.2 and §2.3 of one layer: the aggregators over ``features`` and their permutation importance."""
    aggs = fit_aggregator(train, values, features, aspects, kind=settings.aggregator,
                          random_state=settings.random_state)
    return aggs, attribution_importance(aggs, n_repeats=settings.pi_repeats)


def aggregate_later(pool: ThreadPoolExecutor, train: Sequence[Sample], values: dict[str, list[float]],
                    features: list[str], aspects: Sequence[Aspect], settings: HDEvalSettings) -> Future:
    """:func:`_aggregate` on ``pool``'s thread: the aggregators and their importance, when done."""
    return pool.submit(_aggregate, train, values, features, aspects, settings)


@dataclass
class LayerBehind:
    """A layer whose aggregator is still being fitted while the next layer's calls are in flight, and the events
    of those calls, held until it is done so that they come after its own (:meth:`settle`)."""

    layer: int
    features: list[str]
    aggregating: Future
    """:func:`aggregate_later` of this layer."""
    held: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    expansion_tree: dict[str, Any] | None = None
    """The tree as the next layer's expansion saw it, before its decompositions grew it."""

    def hold(self, kind: str, payload: dict[str, Any]) -> None:
        self.held.append((kind, payload))

    def settle(self, run: AlignmentTraining, settings: HDEvalSettings, target: str, emit: EventSink) -> None:
        """This layer's aggregators, then the next layer's expansion (recorded with this layer's importance, as
        one stage after another records it), then the held events."""
        run.add_aggregators(self.layer, self.features, *self.aggregating.result(), target, emit)
        if self.expansion_tree is not None:
            run.add_expansion(choose_expansion(self.expansion_tree, self.layer + 1, run.importance, run.coverage,
                                               settings.k_expand), emit)
        for kind, payload in self.held:
            emit(kind, payload)


@register
class HDEval(Method):
    """HD-Eval: a criteria tree scored 1-5 by the LLM and aggregated by a white-box regressor.

    Parameters
    ----------
    aggregator : {"nn", "lr", "dt", "rf"}, default="nn"
        Aggregator trained on the human scores: shallow ReLU MLP (the paper's
        main HD-Eval-NN), linear regression, decision tree or random forest
        (paper §3.1, App. C.3).
    max_layers : int, default=3
        Maximum depth L of the criteria tree (paper §3.1: L = 3).
    k_child : int, default=4
        Maximum children per decomposed criterion (paper §3.1, App. C.2: 4).
    k_expand : int, default=3
        Criteria of the current layer chosen by permutation importance for
        decomposition from layer 3 on (not stated in App. C.2; 3 matches the 12
        layer-3 criteria of the Topical-Chat tree, App. H Table 10).
    aspects : tuple of str or None, default=None
        Layer-1 aspects (also the aggregator's targets). None = every aspect
        the training samples carry, as in the paper (App. C.2).
    criteria_tree : dict or None, default=None
        A criteria tree to start from (e.g. one a person edited after an
        earlier run); None = decompose from the aspects as the paper does.
    guidelines : dict or None, default=None
        Optional expert guideline text per aspect, added to the decomposition
        and scoring prompts of that aspect's subtree.
    layout : {"paper", "sample_first"}, default="paper"
        Scoring prompt order: the paper's (instructions and criterion, then
        the sample) or sample first for backend prefix caching.
    criteria_form : {"auto", "paper", "sentence"}, default="auto"
        How a decomposition asks for sub-criteria: ``paper``, named
        sub-criteria with definitions (§2.1, App. G.1); ``sentence``, for
        small models, each sub-criterion one sentence that starts "A good
        <output>" under a grammar, named from its sentence (ours); ``auto``,
        the sentence form on the embedded model and the paper's on every
        other backend (:func:`~judge_engine.methods.base.resolve_criteria_form`).
        The form used is ``judge.state["criteria_form"]``.
    weighted : bool, default=False
        Probability-weighted 1-5 score from logprobs instead of the sampled
        number (off in the paper; helps the tiny embedded model).
    score_max_tokens : int, default=32
        Reply budget of a criterion score (paper App. C.3: 32 tokens, score first).
    decompose_max_tokens : int, default=512
        Reply budget of a decomposition.
    pi_repeats : int, default=10
        Permutation-importance repeats per fold, 5 folds out of fold (not stated in the paper).
    max_imputed_fraction : float, default=0.5
        At prediction, a criterion the reply gave no score for is filled with
        its training mean (ours; the paper does not say; counted per item in
        ``Verdict.metadata["imputed_criteria"]``). An item with more than this
        share of its criteria imputed gets no score (missing, "k of n criteria
        imputed"): the prediction would then mostly restate training means.
        0 = any missing criterion makes the item missing; an item with every
        criterion missing is always missing.
    random_state : int, default=0
        Seed of the aggregator, the folds and the permutations.
    """

    name = "hd_eval"
    title = "HD-Eval"
    made_share = MADE_SHARE
    render_params = {"aggregator": "lr"}
    _parameter_constraints = {
        "aggregator": Options(AGGREGATORS),
        "max_layers": Interval(int, 1, 5), "k_child": Interval(int, 1, 10), "k_expand": Interval(int, 1, 50),
        "layout": Options(LAYOUTS), "criteria_form": Options(CRITERIA_FORMS), "weighted": Options((True, False)),
        "score_max_tokens": Interval(int, 1, 1024), "decompose_max_tokens": Interval(int, 32, 4096),
        "pi_repeats": Interval(int, 1, 100), "random_state": Interval(int, 0, None),
        "max_imputed_fraction": Interval(float, 0.0, 1.0),
        "criteria_tree": OptionalType(dict), "guidelines": OptionalType(dict)}

    _parameter_labels = {
        "aggregator": "Aggregator model", "max_layers": "Layers of the tree", "k_child": "Children per node",
        "k_expand": "Nodes expanded per layer", "aspects": "Layer-1 aspects", "criteria_tree": "Edited tree",
        "guidelines": "Expert guidelines", "layout": "Prompt layout", "criteria_form": "How sub-criteria are asked for",
        "weighted": "Probability-weighted scores", "score_max_tokens": "Score reply limit (tokens)",
        "decompose_max_tokens": "Decomposition reply limit", "pi_repeats": "Permutation repeats",
        "random_state": "Random seed of the method",
        "max_imputed_fraction": "Most imputed scores per criterion"}
    _choice_labels = {"aggregator": {"nn": "MLP (paper's main)", "lr": "linear regression", "dt": "decision tree",
                                     "rf": "random forest"},
                      "layout": LAYOUT_LABELS, "criteria_form": CRITERIA_FORM_LABELS}
    quick_params: ClassVar[dict[str, Any]] = {"max_layers": 2, "k_child": 3, "pi_repeats": 3}
    smaller_looks: ClassVar[tuple[dict[str, Any], ...]] = ({"k_child": 2, "pi_repeats": 2},
                                                            {"max_layers": 1, "pi_repeats": 2})

    @classmethod
    def idle_parameters(cls, params: dict[str, Any]) -> frozenset[str]:
        # one layer: no criterion is decomposed, so how many children or which parents never comes up
        return frozenset({"k_child", "k_expand"}) if params.get("max_layers") == 1 else frozenset()

    def __init__(self, *, aggregator: str = "nn", max_layers: int = 3, k_child: int = 4, k_expand: int = 3,
                 aspects: tuple[str, ...] | None = None, criteria_tree: dict | None = None,
                 guidelines: dict | None = None, layout: str = "paper", criteria_form: str = "auto",
                 weighted: bool = False, score_max_tokens: int = 32, decompose_max_tokens: int = 512,
                 pi_repeats: int = 10, random_state: int = 0, max_imputed_fraction: float = 0.5):
        self.aggregator = aggregator
        self.max_layers = max_layers
        self.k_child = k_child
        self.k_expand = k_expand
        self.aspects = aspects
        self.criteria_tree = criteria_tree
        self.guidelines = guidelines
        self.layout = layout
        self.criteria_form = criteria_form
        self.weighted = weighted
        self.score_max_tokens = score_max_tokens
        self.decompose_max_tokens = decompose_max_tokens
        self.pi_repeats = pi_repeats
        self.random_state = random_state
        self.max_imputed_fraction = max_imputed_fraction

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.criteria_tree is not None:
            tree_index(self.criteria_tree)

    # ---- Algorithm 1 ----------------------------------------------------------------------
    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        """Algorithm 1 (App. C.1), layer by layer: attribution pruning chooses what to decompose, hierarchical
        criteria decomposition grows the tree, hierarchy-aware scoring scores the new criteria, and the
        human preference-guided aggregator is refit on every criterion so far.

        ``context.aspects``: the dataset's aspect records (definitions, ranges) for the layer-1 aspects.
        """
        self._validate_params()
        llm, task, progress = context.llm, context.task, context.progress
        # the one read of the parameters: every stage below gets this record
        settings = HDEvalSettings.of(self.get_params())
        emit = context.log or (lambda kind, payload: None)
        train, aspects = layer1_aspects(train, aspect, settings.aspects, context.aspects)
        form = resolve_criteria_form(settings.criteria_form, llm)
        run = AlignmentTraining(tree=initial_tree(aspects, settings.criteria_tree), train=train)
        emit("tree_started", {"aspects": [a.name for a in aspects], "nodes": len(run.tree["nodes"]),
                              "given": settings.criteria_tree is not None, "criteria_form": form})
        # the decomposition prompt shows no judged text; a child copied from one would come from the training texts
        shown = [t for s in train for t in (s.input, s.output, s.context or "") if t]
        # Layer 2 decomposes every layer-1 aspect whatever its importance (App. C.2), so layer 1's aggregator is
        # fitted on another thread while layer 2's calls are in flight; the events and records it precedes are
        # held back and come in the order of one stage after another (issue 46). Later layers' importance chooses
        # what is decomposed next, so their aggregators are waited for.
        pool = ThreadPoolExecutor(1, thread_name_prefix="hd-eval-aggregator")
        # layer 2 and the test scoring sent beside the stages they do not read (:mod:`.overlap`, issue 67)
        ahead_pool = ThreadPoolExecutor(1, thread_name_prefix="hd-eval-ahead") if overlaps(llm) else None
        test_ahead: Future | None = None
        layer_two_progress = HeldProgress(progress)
        try:
            behind: LayerBehind | None = None
            ahead: LayerAhead | None = None
            for layer in range(1, settings.max_layers + 1):
                sink = behind.hold if behind else emit
                if layer == 2 and ahead is not None:
                    # layer 2 was made beside layer 1's scoring: its tree, records and held events, in order
                    decomposed, features, new, scores = ahead.result()
                    run.tree = ahead.tree
                    for kind, payload in ahead.held:
                        sink(kind, payload)
                elif layer >= 2:
                    # §2.3 attribution pruning: which criteria of the last layer are decomposed (Algorithm 1, line 17)
                    expansion = choose_expansion(run.tree, layer, run.importance, run.coverage, settings.k_expand)
                    if behind:
                        behind.expansion_tree = copy.deepcopy(run.tree)
                    else:
                        run.add_expansion(expansion, emit)
                    # §2.1 hierarchical criteria decomposition of each chosen criterion (lines 2-6)
                    decomposed = decompose_layer(run.tree, expansion.chosen, layer, settings, task=task, llm=llm,
                                                 form=form, shown=shown, emit=sink, progress=progress)
                if not (layer == 2 and ahead is not None):
                    features = run.features(layer)
                if layer == 1 and ahead_pool is not None and settings.max_layers > 1 and features is not None:
                    # App. C.2: layer 2 decomposes every aspect whatever its importance, so its calls need none
                    # of layer 1's scores (the expansion is recorded with them, at the same place as before)
                    expansion = choose_expansion(run.tree, 2, run.importance, run.coverage, settings.k_expand)
                    ahead = layer_two_ahead(ahead_pool, run.tree, expansion.chosen, features, train, settings,
                                            task=task, llm=llm, form=form, shown=shown,
                                            progress=layer_two_progress)
                if features is not None and not (layer == 2 and ahead is not None):
                    # §2.1 hierarchy-aware scoring of the criteria new in this layer (lines 7-13)
                    new = [f for f in features if f not in run.scores]
                    scores = hierarchy_aware_scoring(train, new, run.tree, task=task, llm=llm, settings=settings,
                                                     progress=progress,
                                                     stage=f"layer {layer}: scoring {len(new)} criteria")
                    layer_two_progress.release()  # layer 2, in flight beside it, reports from now on
                if behind:
                    behind.settle(run, settings, aspect.name, emit)
                    behind = None
                if layer >= 2:
                    run.add_decomposition(decomposed)
                if features is None:
                    emit("layer_empty", {"layer": layer})
                    break
                run.add_scores(layer, new, scores, emit)
                # a node refused on its training scores (same_score) feeds no aggregator
                features = [f for f in features if tree_index(run.tree)[f].get("in_aggregator", True)]
                # §2.2 human preference-guided aggregation over every criterion so far (line 15), with its
                # attribution
                values = run.values(features)
                aggregating = aggregate_later(pool, train, values, features, aspects, settings)
                if layer == 1 and settings.max_layers > 1:
                    behind = LayerBehind(layer, features, aggregating, expansion_tree=(
                        copy.deepcopy(run.tree) if ahead is not None else None))
                else:
                    if layer == settings.max_layers and ahead_pool is not None and context.upcoming \
                            and llm.cache is not None:
                        # the judge scores the test items on the criteria this aggregator keeps, in this tree:
                        # both final now, so those requests go out while it is fitted
                        test_ahead = score_test_ahead(ahead_pool, context.upcoming, kept_features(values, features),
                                                      run.tree, settings, task=task, llm=llm,
                                                      before=context.fit_done, progress=progress)
                    run.add_aggregators(layer, features, *aggregating.result(), aspect.name, emit)
            if test_ahead is not None:
                # while those answers come in: the judge's whole-data model, which its first prediction fits
                # (kept by the data it is fitted on, so the run's scoring finds it: seconds with the MLP)
                for agg in run.aggs:
                    if aspect.name in agg.targets:
                        _ = agg.model
                test_ahead.result()  # the run's scoring must find every answer in the cache, not send it again
        finally:
            # a failed or stopped fit does not wait for an aggregator nobody will read
            pool.shutdown(wait=False, cancel_futures=True)
            if ahead_pool is not None:
                ahead_pool.shutdown(wait=False, cancel_futures=True)
        state = run.finish(aspect.name, aspects, form, emit)
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state=state.to_dict())

    def estimate_waves(self, n_train: int, n_test: int) -> dict[str, int]:
        """Per layer one scoring wave (every parent group together), and from layer 2 one decomposition wave
        before it (every chosen parent's first draw together); a further draw is one call more, not counted.
        Layer 1's scoring is in flight beside layer 2's decomposition (:mod:`.overlap`), so it adds no wave of
        its own where calls go out together (where they do not, waves add no time to an estimate)."""
        return {"fit": max(1, 2 * self.max_layers - 2), "score": 1}

    def estimate_calls(self, n_train: int, n_test: int, *, n_aspects: int | None = None,
                       backend: str | None = None) -> dict[str, int]:
        """Upper bound on the LLM calls of a fit and of scoring (before cache hits).

        Decomposition calls (each with its :data:`DECOMPOSE_DRAWS` possible
        draws, in either ``criteria_form``) plus one call per (sample, criterion), each counted with its
        possible follow-up turn (a score reply without a score), so the real
        count is at most this and about half of it when replies parse.

        The number of layer-1 aspects: ``n_aspects`` when given (a run knows
        its dataset's aspects), else the ``aspects`` parameter, else
        :data:`DEFAULT_N_ASPECTS` (the most of any built-in benchmark; a custom
        dataset with more aspects must pass ``n_aspects``). With a given tree,
        its nodes count as they stand, aspects not in it are added, and every
        decomposition the fit may do adds ``k_child`` nodes: layer 2 for every
        undecomposed (or re-decomposed) aspect, deeper layers for the nodes a
        person marked, else ``k_expand`` nodes chosen by importance. With
        ``n_aspects`` and a tree, the tree's layer-1 nodes are taken to be
        among those aspects (a tree from an earlier run on the same dataset).

        On a ``backend`` where the judge's own model checks generated text
        (:mod:`judge_engine.rubric_model_check`), one request per child the
        rules accept: each draw of a decomposition reads at most ``k_child``
        children in the paper's form (``max(k_child, ASK_CHILDREN)`` in the
        sentence form).
        """
        k, top = self.k_child, self.max_layers
        nodes = tree_index(self.criteria_tree) if self.criteria_tree else {}
        tree_l1 = {nid for nid, n in nodes.items() if n["layer"] == 1}
        if n_aspects is not None:
            added = max(0, int(n_aspects) - len(tree_l1))
        elif self.aspects:
            added = len(set(self.aspects) - tree_l1)
        else:
            added = max(0, DEFAULT_N_ASPECTS - len(tree_l1))
        active = [0] * (top + 2)   # existing nodes that are aggregator inputs, by layer
        exists = [0] * (top + 2)   # existing nodes, by layer
        for n in nodes.values():
            if n["layer"] <= top + 1:
                exists[n["layer"]] += 1
                active[n["layer"]] += bool(n.get("in_aggregator", True))
        active[1] += added
        exists[1] += added
        new = [0] * (top + 2)
        decompositions = 0
        for layer in range(2, top + 1):
            parents = [n for n in nodes.values() if n["layer"] == layer - 1]
            marked = [n for n in parents if n.get("expand") or n.get("redecompose")]
            if layer == 2:
                d = added + sum(1 for n in parents if not n.get("decomposed") or n.get("redecompose"))
            elif marked:
                d = sum(1 for n in marked if not n.get("decomposed") or n.get("redecompose"))
            elif exists[layer]:
                d = 0
            else:
                d = min(self.k_expand, active[layer - 1] + new[layer - 1])
            new[layer] = d * k
            decompositions += d
        m = sum(active[1:top + 1]) + sum(new)
        paper = self.criteria_form == "paper" or (self.criteria_form == "auto" and backend != "llamacpp")
        read = model_check_calls(DECOMPOSE_DRAWS * decompositions * (k if paper else max(k, ASK_CHILDREN)), backend)
        return {"fit": DECOMPOSE_DRAWS * decompositions + read + estimate_criteria_calls(n_train, m, follow_ups=True),
                "score": estimate_criteria_calls(n_test, m, follow_ups=True)}

    @classmethod
    def settings_of(cls, params: Mapping[str, Any]) -> HDEvalSettings:
        """The settings of stored parameters: a run stores only those a person changed and a judge built in code
        may carry only some, so the others take their defaults (what the run or judge used)."""
        return HDEvalSettings.of({**cls.default_params(), **params})

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        settings = cls.settings_of(judge.params)
        state, aspect = HDEvalState.from_judge(judge), judge.aspect_record
        agg = state.target_aggregator()
        scores = hierarchy_aware_scoring(samples, agg.features, state.tree, task=judge.task_info, llm=llm,
                                         settings=settings, progress=progress)
        return [cls._verdict(sample, {f: scores[f][i] for f in agg.features}, agg, aspect,
                             settings.max_imputed_fraction)
                for i, sample in enumerate(samples)]

    @staticmethod
    def _verdict(sample: Sample, cells: dict[str, CriterionScore], agg: Aggregator, aspect: Aspect,
                 max_imputed_fraction: float) -> Verdict:
        """One item's verdict: the aggregator's prediction, or missing when too many criteria were imputed."""
        row = {f: c.score for f, c in cells.items()}
        missing = [f for f, v in row.items() if math.isnan(v)]
        n = len(agg.features)
        sources = source_counts(list(cells.values()))
        alternatives = sources.get("logprobs_first_position", 0)
        meta: dict[str, Any] = {"missing_criteria": missing, "imputed_criteria": len(missing), "n_criteria": n,
                                "criteria_sources": sources, "alternatives_criteria": alternatives}
        raw = "\n".join(f"{f}: {c.raw}" for f, c in cells.items())
        if not n or len(missing) == n or len(missing) > max_imputed_fraction * n:
            # no prediction: it would mostly (or wholly) restate training means, never a made-up number
            meta["source"] = "missing"
            meta["missing_reason"] = (f"{len(missing)} of {n} criteria imputed (at most "
                                      f"{max_imputed_fraction:.0%} allowed)" if n else "no criterion to score")
            return Verdict(sample_id=sample.id, aspect=aspect.name, score=math.nan, criteria=row, raw=raw[:4000],
                           metadata=meta)
        pred = agg.predict_rows([row])[0]
        meta["predictions"] = {t: round(v, 6) for t, v in pred.items()}
        read = {k: v for k, v in sources.items() if k != "missing"}
        # flagged when any criterion was read from alternatives; else the way most criteria were read
        meta["source"] = "logprobs_first_position" if alternatives else max(read, key=read.get)
        score = float(min(max(pred[aspect.name], aspect.low), aspect.high))
        return Verdict(sample_id=sample.id, aspect=aspect.name, score=score, criteria=row, raw=raw[:4000],
                       metadata=meta)

