"""What an HD-Eval fit learned, as one typed record over ``judge.state``.

``judge.state`` stays the JSON dict stored with every run (its keys and
format are what :meth:`HDEvalState.to_dict` writes); the record is how code
reads it: the fit builds one and stores its dict, scoring and the page read
one with :meth:`HDEvalState.from_judge`. Keys that judges stored before they
existed read as empty, as the page read them before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ...aggregate import Aggregator
from ...records import Aspect
from ..base import Judge


@dataclass(frozen=True)
class HDEvalState:
    """The learned state of an HD-Eval judge (fields in the order of the stored JSON)."""

    tree: dict[str, Any]
    """The criteria tree as fitted: ``{"nodes": [node, ...]}`` (format in :mod:`.tree`), generated nodes with
    the rubric checks' ``flags``."""
    aspects: tuple[Aspect, ...]
    """The layer-1 aspects (the aggregator's targets) with their ranges and definitions."""
    criteria_form: str | None
    """The resolved ``criteria_form`` every decomposition asked in (None: not recorded)."""
    aggregators: tuple[dict[str, Any], ...]
    """One aggregator state per group of aspects sharing a range (:meth:`Aggregator.to_state`)."""
    target_group: int
    """Index in ``aggregators`` of the group holding the judged aspect."""
    features: tuple[str, ...]
    """Node ids the judged aspect's aggregator takes as inputs."""
    train_ids: tuple[str, ...] = ()
    """Training items the aggregator was fitted on (scored on every layer-1 aspect)."""
    importance: dict[str, dict[str, float]] = field(default_factory=dict)
    """Node id -> ``{"importance", "std"}``: permutation importance of the last layer's aggregators (§2.3)."""
    layers: tuple[dict[str, Any], ...] = ()
    """Per layer: ``{"layer", "features", "cv"}``, the out-of-fold correlations of each aspect."""
    missing_scores: dict[str, int] = field(default_factory=dict)
    """Node id -> training items whose reply gave no score (imputed)."""
    coverage: dict[str, float] = field(default_factory=dict)
    """Node id -> share of the training items scored."""
    pruning: tuple[dict[str, Any], ...] = ()
    """Per layer from 2: which nodes were decomposed and which pruned, and why."""
    expanded_nodes: tuple[str, ...] = ()
    """Nodes decomposed because attribution chose them (flat over the layers)."""
    pruned_nodes: tuple[str, ...] = ()
    """Nodes attribution did not choose (flat over the layers)."""
    reads: dict[str, int] = field(default_factory=dict)
    """How the training scores were read (json, text, logprobs, ..., missing)."""
    decomposition_reads: dict[str, int] = field(default_factory=dict)
    """How the decomposition replies were read (json, text, none)."""
    warnings: tuple[dict[str, Any], ...] = ()
    """Fit-time warnings (:func:`~judge_engine.methods.base.judge_warning`)."""
    rejected: tuple[dict[str, Any], ...] = ()
    """Sub-criteria the rubric checks refused, with the ``parent`` id they were proposed under."""
    flagged: tuple[dict[str, Any], ...] = ()
    """Generated nodes kept in the tree with a flag of the rubric checks."""

    @classmethod
    def from_judge(cls, judge: Judge) -> "HDEvalState":
        """The record of a fitted HD-Eval judge."""
        return cls.from_dict(judge.state)

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> "HDEvalState":
        """The record of a stored ``judge.state``; keys an older judge lacks read as empty."""
        return cls(tree=state["tree"], aspects=tuple(Aspect(**a) for a in state.get("aspects") or ()),
                   criteria_form=state.get("criteria_form"), aggregators=tuple(state["aggregators"]),
                   target_group=int(state["target_group"]), features=tuple(state["features"]),
                   train_ids=tuple(state.get("train_ids") or ()), importance=state.get("importance") or {},
                   layers=tuple(state.get("layers") or ()), missing_scores=state.get("missing_scores") or {},
                   coverage=state.get("coverage") or {}, pruning=tuple(state.get("pruning") or ()),
                   expanded_nodes=tuple(state.get("expanded_nodes") or ()),
                   pruned_nodes=tuple(state.get("pruned_nodes") or ()), reads=state.get("reads") or {},
                   decomposition_reads=state.get("decomposition_reads") or {},
                   warnings=tuple(state.get("warnings") or ()), rejected=tuple(state.get("rejected") or ()),
                   flagged=tuple(state.get("flagged") or ()))

    def to_dict(self) -> dict[str, Any]:
        """The JSON dict stored as ``judge.state`` (keys, order and lists as a fit has always written them)."""
        return {"tree": self.tree, "aspects": [a.to_dict() for a in self.aspects], "criteria_form": self.criteria_form,
                "aggregators": list(self.aggregators), "target_group": self.target_group,
                "features": list(self.features), "train_ids": list(self.train_ids),
                "importance": self.importance, "layers": list(self.layers),
                "missing_scores": self.missing_scores, "coverage": self.coverage,
                "pruning": list(self.pruning), "expanded_nodes": list(self.expanded_nodes),
                "pruned_nodes": list(self.pruned_nodes), "reads": self.reads,
                "decomposition_reads": self.decomposition_reads, "warnings": list(self.warnings),
                "rejected": list(self.rejected), "flagged": list(self.flagged)}

    # ---- what the page and scoring read --------------------------------------------------------------

    @property
    def target_aggregator_state(self) -> dict[str, Any]:
        """The stored state of the aggregator that scores the judged aspect."""
        return self.aggregators[self.target_group]

    def target_aggregator(self) -> Aggregator:
        """The aggregator that scores the judged aspect, rebuilt from its stored numbers."""
        return Aggregator.from_state(self.target_aggregator_state)

    @property
    def fitted_nodes(self) -> dict[str, dict[str, Any]]:
        """The fitted tree's nodes by id (with the rubric checks' flags)."""
        return {n["id"]: n for n in self.tree["nodes"]}

    def training_pearson(self, aspect: str) -> float | None:
        """The last layer's out-of-fold (cross-validated) training Pearson of ``aspect``'s aggregator."""
        if not self.layers:
            return None
        value = ((self.layers[-1].get("cv") or {}).get(aspect) or {}).get("pearson")
        return None if value is None or not math.isfinite(float(value)) else float(value)

    @property
    def n_missing_scores(self) -> int:
        """Training criterion scores that did not parse and were imputed with the training mean."""
        return sum((self.missing_scores).values())

    def node_importance(self, node_id: str) -> float | None:
        """A node's permutation importance (None when it was not an input of the last aggregator)."""
        return (self.importance).get(node_id, {}).get("importance")

    @property
    def refused_children(self) -> list[dict[str, Any]]:
        """The refused sub-criteria a person can restore: those proposed under a node of the tree."""
        return [r for r in self.rejected if r.get("parent")]
