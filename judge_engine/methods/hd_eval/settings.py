"""The settings of an HD-Eval fit or scoring, read once from the validated parameters.

The parameters stay what :class:`~judge_engine.methods.hd_eval.method.HDEval`
stores with every run (a JSON dict, names and defaults documented there);
the stages get this one frozen record instead of that dict, so a misspelt
name fails where the record is built, not as a silent default deep in a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ...criteria_scoring import ScoringSettings


@dataclass(frozen=True)
class HDEvalSettings:
    """One HD-Eval judge's parameters as typed fields (the meaning of each is in ``HDEval``'s docstring)."""

    aggregator: str
    """Aggregator kind trained on the human scores (§2.2, App. C.3)."""
    max_layers: int
    """Maximum depth L of the criteria tree."""
    k_child: int
    """Maximum children per decomposed criterion."""
    k_expand: int
    """Criteria of a layer chosen by attribution for decomposition from layer 3 on."""
    aspects: tuple[str, ...] | None
    """Layer-1 aspects, or None for every aspect the training samples carry."""
    criteria_tree: dict[str, Any] | None
    """A (person-edited) tree to start from, or None."""
    guidelines: dict[str, str] | None
    """Expert guideline text per aspect, or None."""
    layout: str
    """Scoring prompt order (``paper`` or ``sample_first``)."""
    criteria_form: str
    """How a decomposition asks for sub-criteria, before :func:`~judge_engine.methods.base.resolve_criteria_form`."""
    weighted: bool
    """Probability-weighted criterion scores from logprobs."""
    score_max_tokens: int
    """Reply budget of a criterion score."""
    decompose_max_tokens: int
    """Reply budget of a decomposition."""
    pi_repeats: int
    """Permutation-importance repeats per fold."""
    random_state: int
    """Seed of the aggregator, the folds and the permutations."""
    max_imputed_fraction: float
    """Largest share of an item's criteria that may be imputed before it gets no score."""

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> "HDEvalSettings":
        """The record of a complete parameter dict (a fit's ``get_params()``, or a stored judge's params merged
        with the defaults); a missing name raises KeyError."""
        values = {f.name: params[f.name] for f in fields(cls)}
        # a stored run's aspects come back from JSON as a list; the record holds a tuple, as the parameter is documented
        aspects = values["aspects"]
        values["aspects"] = None if aspects is None else tuple(aspects)
        values["max_imputed_fraction"] = float(values["max_imputed_fraction"])
        return cls(**values)

    @property
    def scoring(self) -> ScoringSettings:
        """How the judge scores its nodes: score first (App. G.2), one call per node."""
        return ScoringSettings(layout=self.layout, reasoning=False, max_tokens=self.score_max_tokens,
                               weighted=self.weighted)

    def guideline(self, aspect: str) -> str:
        """The expert guideline of a layer-1 aspect ('' when none)."""
        return str((self.guidelines or {}).get(aspect, "")).strip()
