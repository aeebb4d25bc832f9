"""Active-Critic's settings: the method's parameters as one typed, frozen value the stages take.

:class:`ActiveCriticSettings` is built once per fit (after the parameters are
validated) and once per scoring (from the parameters stored with the judge,
merged with the defaults), so no stage reads a parameter from a dict and each
parameter is read one way. The stored parameters themselves (``Judge.params``)
stay the plain JSON dict of the constructor's arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ...llm import GenerationParams

STORED_BEFORE_DEFAULTS: dict[str, Any] = {"score_normalization": "minmax"}
"""What a parameter missing from a stored judge's ``params`` meant when that judge was fitted, where it differs
from today's default: judges saved before the paper's ratio became the default were fitted with min-max."""


@dataclass(frozen=True)
class ActiveCriticSettings:
    """The parameters of :class:`~judge_engine.methods.active_critic.ActiveCritic`, typed (see its docstring
    for what each one changes and why its default is the paper's)."""

    variant: str
    """``fine`` (McS-E then OS-E) or ``coarse`` (OS-E alone, criteria listed)."""
    n_candidates: int
    """K demonstration sets in the random search, zero-shot included."""
    n_demos: int | None
    """Demonstrations per set; None = by the dataset's task (App. D.2)."""
    demo_mode: str
    """``bootstrap`` (the model's own accepted traces, filled up with labeled examples) or ``labeled``."""
    bootstrap_threshold: float
    """Largest distance (0-100) between a trace's overall score and the human score for it to be a demo."""
    eval_subsample: int | None
    """Training items each candidate is scored on; None = all of them."""
    batch_size: int
    """Examples per mini-batch of stage 1."""
    max_batches: int
    """Most mini-batches of stage 1."""
    complete_streak: int
    """Consecutive COMPLETE answers that stop a stage-1 loop."""
    task_temperature: float
    """Sampling temperature of stage 1."""
    max_tokens: int
    """Reply budget of every call."""
    source_chars: int
    """Characters of each source shown in stage-1 batches and demonstrations."""
    explanation_chars: int
    """Longest explanation (and error analysis) an overall-score reply may give."""
    seed: int
    """Seed of the mini-batch order, the candidate draws and stage-1 sampling."""
    task_description: str | None
    """A person's task description; None = inferred."""
    criteria: Mapping[str, str] | None
    """A person's criteria, name -> definition; None = inferred."""
    criteria_form: str
    """``auto``, ``paper`` or ``sentence``: how stage 1 asks for criteria."""
    retry_unparsed: bool
    """One follow-up turn after an OS-E reply without a score."""
    weighted: bool
    """The overall score read probability-weighted from a 1-9 follow-up turn (backends with logprobs)."""
    criteria_fallback: bool
    """The short structured, then free-text, criteria prompts after too few usable criteria."""
    ensemble_task: bool
    """One more call merging every task-description version (§4.1's ensemble)."""
    score_normalization: str
    """``ratio`` or ``minmax``: how human scores go onto 0-100 and judge scores back."""
    no_positive_set: str
    """``fail`` or ``zero_shot``: what the search does when no candidate is selectable."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ActiveCriticSettings:
        """The settings of a complete parameter dict (``ActiveCritic.get_params()``); other keys are ignored."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})

    @classmethod
    def from_stored(cls, params: Mapping[str, Any], defaults: Mapping[str, Any]) -> ActiveCriticSettings:
        """The settings a stored judge was fitted with: its ``params`` over ``defaults`` (the constructor's),
        a missing parameter meaning what it meant then (:data:`STORED_BEFORE_DEFAULTS`)."""
        return cls.from_params({**defaults, **STORED_BEFORE_DEFAULTS, **params})

    @property
    def inference(self) -> GenerationParams:
        """Stage 1's sampling: the task temperature, seeded (the loops add the batch's index to the seed)."""
        return GenerationParams(temperature=self.task_temperature, max_tokens=self.max_tokens, seed=self.seed)

    @property
    def scoring(self) -> GenerationParams:
        """Greedy decoding for every scoring call (the paper reports no temperature; greedy scores repeat)."""
        return GenerationParams(temperature=0.0, max_tokens=self.max_tokens)
