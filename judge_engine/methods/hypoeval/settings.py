"""HypoEval's parameters as its stages read them: one frozen record, built once per fit or scoring.

The stages used to read a dict of parameters by string key (``ctx.params["w_max"]``,
``params.get("weighted", False)``); a misspelt key failed only when that stage ran, and which
parameters a stage depends on was nowhere written down. :class:`HypoEvalSettings` has one typed
field per parameter of :class:`~judge_engine.methods.hypoeval.method.HypoEval` (same names, same
meanings; the method's docstring cites the paper for each default). The parameters stored with a
run stay the plain dict they were: this record is built from them, never stored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ...criteria_scoring import ScoringSettings


@dataclass(frozen=True)
class HypoEvalSettings:
    """One field per :class:`~judge_engine.methods.hypoeval.method.HypoEval` parameter, same name and meaning."""

    criteria_form: str
    layout: str
    joint: bool
    n_train: int
    n_init: int
    n_init_hypotheses: int
    alpha: float
    reward_a: float
    reward_b: float | None
    top_k: int
    theta: float
    w_hyp: int | None
    w_hyp_scale: float
    w_max: int
    n_refine: int
    refine_start: str
    refine_early_stop: bool
    replace_pool: str
    n_new_hypotheses: int
    max_bank: int
    n_literature_hypotheses: int
    union_mode: str
    n_selected: int
    reasoning: bool
    weighted: bool
    max_tokens: int
    generation_max_tokens: int
    check_max_tokens: int
    observation_chars: int
    literature: tuple[dict[str, str], ...]
    """The literature notes as given (each ``{"title", "text"}``); empty when the parameter is None."""
    hypotheses: tuple[Any, ...] | None
    """A person's curated hypotheses (texts or ``{"text", "origin"}``), or None: generate them."""
    seed: int

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "HypoEvalSettings":
        """The settings of a complete parameter dict (``HypoEval.get_params()``, or a judge's merged with the
        defaults); a missing parameter is a KeyError naming it, not a silent default."""
        values = {f.name: params[f.name] for f in fields(cls)}
        # copies: the settings are frozen, and a note dict shared with the caller could still change under them
        values["literature"] = tuple(dict(n) for n in (params["literature"] or ()))
        values["hypotheses"] = None if params["hypotheses"] is None else tuple(params["hypotheses"])
        return cls(**values)

    @property
    def scoring(self) -> ScoringSettings:
        """How the judge scores under its hypotheses (the same at fit and score time)."""
        return ScoringSettings(layout=self.layout, joint=self.joint, reasoning=self.reasoning,
                               max_tokens=self.max_tokens, weighted=self.weighted)
