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
  ``DECOMPOSE_DRAWS - 1`` more sampled draws;
* §2.1, App. G.2 (hierarchy-aware prompting) -> :func:`.scoring.hierarchy_aware_scoring`
  through the shared :mod:`judge_engine.criteria_scoring` (instructions in
  ``prompts/hd_eval_score.txt``; the parent is the "aspect" of the prompt;
  score first, short output);
* §2.2, Eq. 2, App. C.3 (human preference-guided aggregation) ->
  :func:`.aggregation.fit_aggregator` (:mod:`judge_engine.aggregate`, one
  multi-output model per group of aspects sharing a range: footnote 11);
* §2.3, Eq. 3 (attribution pruning) -> :func:`.pruning.attribution_importance` and
  :func:`.pruning.prune_by_attribution` (:mod:`judge_engine.explain`); what it kept
  (decomposed further) and pruned per layer is in ``judge.state["pruning"]``
  and, flat, ``judge.state["expanded_nodes"]`` / ``judge.state["pruned_nodes"]``;
* App. C.1, Algorithm 1 (iterative alignment training) -> :meth:`HDEval.fit`.

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

import math
from typing import Any, ClassVar, Mapping, Sequence

from ... import data
from ...aggregate import AGGREGATORS, Aggregator, cross_validated_correlation
from ...criteria_scoring import LAYOUT_LABELS, LAYOUTS, CriterionScore, estimate_criteria_calls, source_counts
from ...llm import LLM
from ...metrics import MIN_SELECTION_COVERAGE
from ...prompting import TaskInfo
from ...records import Aspect, Sample, Verdict
from ..base import (CRITERIA_FORM_LABELS, CRITERIA_FORMS, EventSink, FitContext, Interval, Judge, Method, Options,
                    Progress, judge_warning, register, resolve_criteria_form, small_model_hint)
from .aggregation import _clean_corr, _finite, fit_aggregator
from .decomposition import DECOMPOSE_DRAWS, child_text, decompose_criteria, flagged_nodes
from .pruning import attribution_importance, prune_by_attribution
from .scoring import hierarchy_aware_scoring
from .settings import HDEvalSettings
from .state import HDEvalState
from .tree import add_children, initial_tree, known_aspects, remove_llm_children, root_aspect, tree_index

DEFAULT_N_ASPECTS = max(len(b.aspects) for b in data.BENCHMARKS.values())
"""Aspects assumed by :meth:`HDEval.estimate_calls` when neither ``n_aspects`` nor ``aspects`` says how many:
the most any built-in benchmark has (6: Topical-Chat, HANNA), so the estimate is an upper bound on those;
a custom dataset with more aspects must pass ``n_aspects``."""


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
    _parameter_constraints = {
        "aggregator": Options(AGGREGATORS),
        "max_layers": Interval(int, 1, 5), "k_child": Interval(int, 1, 10), "k_expand": Interval(int, 1, 50),
        "layout": Options(LAYOUTS), "criteria_form": Options(CRITERIA_FORMS), "weighted": Options((True, False)),
        "score_max_tokens": Interval(int, 1, 1024), "decompose_max_tokens": Interval(int, 32, 4096),
        "pi_repeats": Interval(int, 1, 100), "random_state": Interval(int, 0, None),
        "max_imputed_fraction": Interval(float, 0.0, 1.0)}

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
        for name in ("criteria_tree", "guidelines"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"{name}={value!r} must be a dict or None")
        if self.criteria_tree is not None:
            tree_index(self.criteria_tree)

    # ---- Algorithm 1 ----------------------------------------------------------------------
    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        """``context.aspects``: the dataset's aspect records (definitions, ranges) for the layer-1 aspects."""
        self._validate_params()
        llm, task, progress = context.llm, context.task, context.progress
        # the one read of the parameters: every stage below gets this record
        settings = HDEvalSettings.of(self.get_params())
        emit = context.log or (lambda kind, payload: None)
        names = list(settings.aspects) if settings.aspects else sorted(
            set.intersection(*(set(s.human) for s in train)) if train else {aspect.name})
        if aspect.name not in names:
            names.insert(0, aspect.name)
        train = [s for s in train if all(_finite(s.human.get(n)) is not None for n in names)]
        if len(train) < 2:
            raise ValueError(f"HD-Eval trains its aggregator on human scores: it needs at least 2 training samples "
                             f"scored on every layer-1 aspect ({', '.join(names)}); got {len(train)}")
        aspects = known_aspects(aspect, names, train, context.aspects)
        tree = initial_tree(aspects, settings.criteria_tree)
        form = resolve_criteria_form(settings.criteria_form, llm)
        emit("tree_started", {"aspects": names, "nodes": len(tree["nodes"]), "given": settings.criteria_tree is not None,
                              "criteria_form": form})

        scores: dict[str, list[CriterionScore]] = {}
        importance: dict[str, dict[str, float]] = {}
        layers: list[dict[str, Any]] = []
        failures: dict[str, int] = {}
        coverage: dict[str, float] = {}
        pruning: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        decomposition_reads: dict[str, int] = {}
        rejected: list[dict[str, Any]] = []
        # the decomposition prompt shows no judged text; a child copied from one would come from the training texts
        shown = [t for s in train for t in (s.input, s.output, s.context or "") if t]
        aggs: list[Aggregator] = []
        for layer in range(1, settings.max_layers + 1):
            if layer >= 2:
                self._grow_layer(tree, layer, importance, settings, task=task, llm=llm,
                                 emit=emit, progress=progress, coverage=coverage, pruning=pruning,
                                 warnings=warnings, reads=decomposition_reads, shown=shown, rejected=rejected,
                                 form=form)
            nodes = tree_index(tree)
            features = [nid for nid, n in nodes.items() if n["layer"] <= layer and n.get("in_aggregator", True)]
            if layer > 1 and not any(nodes[f]["layer"] == layer for f in features):
                emit("layer_empty", {"layer": layer})
                break
            new = [f for f in features if f not in scores]
            scores.update(hierarchy_aware_scoring(
                train, new, tree, task=task, llm=llm, settings=settings,
                progress=progress, stage=f"layer {layer}: scoring {len(new)} criteria"))
            for f in new:
                failures[f] = sum(1 for c in scores[f] if c.missing)
                coverage[f] = 1.0 - failures[f] / len(train)
            emit("layer_scored", {"layer": layer, "criteria": new, "missing": {f: failures[f] for f in new},
                                  "reads": source_counts([c for f in new for c in scores[f]])})
            values = {f: [c.score for c in scores[f]] for f in features}
            aggs = fit_aggregator(train, values, features, aspects, kind=settings.aggregator,
                                  random_state=settings.random_state)
            importance = attribution_importance(aggs, n_repeats=settings.pi_repeats)
            cv = {}
            for agg in aggs:
                cv.update(_clean_corr(cross_validated_correlation(agg)))
            layers.append({"layer": layer, "features": features, "cv": cv})
            emit("aggregator_fitted", {"layer": layer, "features": len(features), "cv_target": cv.get(aspect.name),
                                       "importance": {f: round(v["importance"], 6) for f, v in importance.items()}})
        target_group = next(i for i, agg in enumerate(aggs) if aspect.name in agg.targets)
        final = aggs[target_group]
        used = list(final.features)
        n_missing = sum(failures.get(f, 0) for f in used)
        reads = source_counts([c for f in scores for c in scores[f]])
        emit("fit_done", {"nodes": len(tree["nodes"]), "features": len(used), "missing_scores": n_missing,
                          "cells": len(train) * len(used), "reads": reads, "decomposition_reads": decomposition_reads})
        warnings.extend(self._fit_warnings(final, used, failures, scores, len(train), layers, aspect.name))
        expanded = [nid for rec in pruning if rec["reason"] == "permutation importance" for nid in rec["expanded"]]
        pruned = [nid for rec in pruning if rec["reason"] == "permutation importance" for nid in rec["pruned"]]
        state = HDEvalState(tree=tree, aspects=tuple(aspects), criteria_form=form,
                            aggregators=tuple(a.to_state() for a in aggs), target_group=target_group,
                            features=tuple(used), train_ids=tuple(s.id for s in train), importance=importance,
                            layers=tuple(layers), missing_scores=failures,
                            coverage={f: round(c, 4) for f, c in coverage.items()}, pruning=tuple(pruning),
                            expanded_nodes=tuple(expanded), pruned_nodes=tuple(pruned), reads=reads,
                            decomposition_reads=decomposition_reads, warnings=tuple(warnings),
                            rejected=tuple(rejected), flagged=tuple(flagged_nodes(tree)))
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state=state.to_dict())

    @staticmethod
    def _fit_warnings(final: Aggregator, used: Sequence[str], failures: dict[str, int],
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

    @staticmethod
    def _grow_layer(tree: dict[str, Any], layer: int, importance: dict[str, dict[str, float]],
                    settings: HDEvalSettings, *,
                    task: TaskInfo, llm: LLM, emit: EventSink, progress: Progress | None,
                    coverage: dict[str, float], pruning: list[dict[str, Any]], warnings: list[dict[str, Any]],
                    reads: dict[str, int], shown: Sequence[str] = (),
                    rejected: list[dict[str, Any]] | None = None, form: str = "paper") -> None:
        """Lines 2-6 of Algorithm 1: choose C_D^layer and decompose each chosen node.

        Coverage-aware choice: a criterion scored on fewer than
        :data:`~judge_engine.metrics.MIN_SELECTION_COVERAGE` of the training
        items is not eligible for decomposition by importance (its importance
        is measured mostly on imputed means); if fewer than ``k_expand`` are
        eligible, fewer are decomposed. The sign of a criterion's correlation
        does not matter here: the aggregator learns its weight, so an
        anti-correlated criterion can be informative. What was kept and pruned
        is appended to ``pruning``. Children the rubric checks refuse (a copy
        of a training text in ``shown``, a near-duplicate of a sibling or an
        existing node, empty, repetitive, over-long, no quality named) are not
        added; they are appended to ``rejected``. ``form`` is the resolved
        ``criteria_form`` every decomposition asks in.
        """
        nodes = tree_index(tree)
        candidates = [nid for nid, n in nodes.items() if n["layer"] == layer - 1]
        marked = [c for c in candidates if nodes[c].get("expand") or nodes[c].get("redecompose")]
        ineligible: list[str] = []
        if layer == 2:
            chosen = candidates  # App. C.2: every human aspect is decomposed
            reason = "all layer-1 aspects"
        elif marked:
            chosen = marked
            reason = "marked by a person"
        elif any(n["layer"] == layer for n in nodes.values()):
            chosen = [c for c in candidates if nodes[c].get("decomposed")]
            reason = "kept from the given tree"
        else:
            active = [c for c in candidates if nodes[c].get("in_aggregator", True)]
            ineligible = [c for c in active if coverage.get(c, 0.0) < MIN_SELECTION_COVERAGE]
            chosen = prune_by_attribution([c for c in active if c not in ineligible], importance, settings.k_expand)
            reason = "permutation importance"
            if active and not chosen:
                warnings.append(judge_warning(
                    "no_expansion", f"layer {layer}: no layer-{layer - 1} criterion was scored on at least "
                    f"{MIN_SELECTION_COVERAGE:.0%} of the training items, so none was decomposed further",
                    len(ineligible)))
        record = {"layer": layer, "reason": reason, "expanded": list(chosen),
                  "pruned": [c for c in candidates if c not in chosen], "ineligible": ineligible,
                  "candidates": {c: {"importance": _finite(importance.get(c, {}).get("importance")),
                                     "coverage": _finite(coverage.get(c)),
                                     "in_aggregator": bool(nodes[c].get("in_aggregator", True))}
                                 for c in candidates}}
        pruning.append(record)
        emit("expansion_chosen", {"layer": layer, "chosen": chosen, "reason": reason, "pruned": record["pruned"],
                                  "ineligible": ineligible, "candidates": record["candidates"],
                                  "min_coverage": MIN_SELECTION_COVERAGE})
        for i, nid in enumerate(chosen):
            node = nodes[nid]
            if node.get("decomposed") and not node.get("redecompose"):
                continue
            if progress:
                progress(i, len(chosen), f"layer {layer}: decomposing")
            if node.get("redecompose"):
                removed = remove_llm_children(tree, nid)
                emit("children_replaced", {"parent": nid, "removed": removed})
            guideline = settings.guideline(root_aspect(nodes, nid))
            dec = decompose_criteria(node, task=task, k=settings.k_child, llm=llm,
                                     guideline=guideline, max_tokens=settings.decompose_max_tokens, shown=shown,
                                     existing=[child_text(n) for n in tree["nodes"]],
                                     taken=[n["name"] for n in tree["nodes"]], form=form)
            reads[dec.read] = reads.get(dec.read, 0) + 1
            for refused in dec.rejected:
                emit("rubric_rejected", refused)
            if rejected is not None:
                rejected.extend(dec.rejected)
            ids = add_children(tree, nid, dec.children)
            for n in tree["nodes"]:
                if n["id"] == nid:
                    n["expand"], n["redecompose"] = False, 0
            if not ids:
                warnings.append(judge_warning(
                    "no_children", f"the decomposition of {node['name']!r} ({nid}) gave no usable children "
                    f"(after {DECOMPOSE_DRAWS} draws" + (f"; {len(dec.rejected)} refused by the rubric checks"
                                                  if dec.rejected else "") + "); it stays a leaf"
                    + small_model_hint(form)))
            emit("decomposed", {"layer": layer, "parent": nid, "children": ids, "parsed": bool(dec.children),
                                "read": dec.read, "follow_up": dec.follow_up, "raw": dec.raw[:2000],
                                "rejected": len(dec.rejected)})

    def estimate_calls(self, n_train: int, n_test: int, *, n_aspects: int | None = None) -> dict[str, int]:
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
        return {"fit": DECOMPOSE_DRAWS * decompositions + estimate_criteria_calls(n_train, m, follow_ups=True),
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

