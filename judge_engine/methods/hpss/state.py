"""What a fitted HPSS judge learned, as a typed record read from its stored state.

:meth:`HPSS.fit` stores the state as a JSON dict (kept as it is, so every stored judge loads); the page and
the scoring path read it through :class:`HPSSState` instead of string keys. Keys a judge stored before they
existed read as empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ...metrics import SelectionFitness
from ..base import Judge


def _selection(stored: Mapping[str, Any] | None) -> SelectionFitness | None:
    return SelectionFitness.from_dict(dict(stored)) if stored else None


@dataclass(frozen=True)
class HPSSState:
    """The learned state of an HPSS judge (see :meth:`judge_engine.methods.hpss.HPSS.fit`)."""

    strategy: str
    """Name of the chosen strategy (its 8 factor values)."""
    readable: Mapping[str, str] = field(default_factory=dict)
    """The chosen strategy's factor values in words, factor by factor."""
    criteria: str | None = None
    """Generated (or the person's) evaluation criteria, where the strategy uses them."""
    steps: str | None = None
    """AutoCoT evaluation steps, where the strategy uses them."""
    examples: tuple[Any, ...] = ()
    """In-context examples, where the strategy uses them (their order reaches the prompt)."""
    fitness: float | None = None
    """Validation fitness of the chosen strategy (Spearman x 100 x coverage)."""
    selection: SelectionFitness | None = None
    """The chosen strategy's selection figures on the validation items (correlation, coverage, items scored)."""
    base_strategy: str | None = None
    base_fitness: float | None = None
    base_selection: SelectionFitness | None = None
    """The same figures for the MT-Bench base strategy (None when it was not evaluated)."""
    accepted_by_person: bool = False
    """The strategy was fixed by a person, not found by the search."""
    readings: Mapping[str, int] = field(default_factory=dict)
    """How the search's replies were read (json, text, logprobs, from alternatives, missing)."""
    auxiliary_readings: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    validation_ids: tuple[str, ...] = ()
    warnings: tuple[dict[str, Any], ...] = ()
    rejected: tuple[dict[str, Any], ...] = ()
    """Auxiliaries the rubric checks refused (treated as missing), with their reasons."""
    flagged: tuple[dict[str, Any], ...] = ()
    """Auxiliaries used with a flag."""

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> "HPSSState":
        return cls(strategy=str(state["strategy"]), readable=dict(state.get("readable") or {}),
                   criteria=state.get("criteria"), steps=state.get("steps"),
                   examples=tuple(state.get("examples") or ()), fitness=state.get("fitness"),
                   selection=_selection(state.get("selection")), base_strategy=state.get("base_strategy"),
                   base_fitness=state.get("base_fitness"), base_selection=_selection(state.get("base_selection")),
                   accepted_by_person=bool(state.get("accepted_by_person")),
                   readings=dict(state.get("readings") or {}),
                   auxiliary_readings={k: dict(v) for k, v in (state.get("auxiliary_readings") or {}).items()},
                   validation_ids=tuple(state.get("validation_ids") or ()),
                   warnings=tuple(state.get("warnings") or ()), rejected=tuple(state.get("rejected") or ()),
                   flagged=tuple(state.get("flagged") or ()))

    @classmethod
    def from_judge(cls, judge: Judge) -> "HPSSState":
        return cls.from_dict(judge.state)
