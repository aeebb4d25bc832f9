"""What an Active-Critic fit learned: a typed view of ``Judge.state``, in the JSON shape stored with every run.

:class:`ActiveCriticState` is what the fit writes (:meth:`ActiveCriticState.to_dict`),
what scoring reads, and what the page shows (:meth:`ActiveCriticState.from_judge`),
so none of them spells the state's keys. :func:`edited_judge` is a fitted judge
with a person's task description and criteria, for rescoring without a new fit.
The stored shape is unchanged: judges stored before this record load, a key
they lack reading as empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from ..base import Judge


@dataclass(frozen=True)
class DemonstrationSetFigures:
    """How one candidate demonstration set did on the training items (an entry of ``ActiveCriticState.search``)."""

    q: float | None
    """Eq. 4's objective Q: Pearson + Spearman + Kendall on the items the set scored (None when undefined)."""
    pearson: float | None
    n_items: int
    n_scored: int

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> DemonstrationSetFigures:
        return cls(q=_number(entry.get("q")), pearson=_number(entry.get("pearson")),
                   n_items=int(entry.get("n_items") or 0), n_scored=int(entry.get("n_scored") or 0))


def _number(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


@dataclass(frozen=True)
class ActiveCriticState:
    """An Active-Critic judge's learned state (``Judge.state``), field by field in the stored order."""

    variant: str
    """``fine`` or ``coarse``: the scoring the judge was fitted for."""
    task_description: str = ""
    """The task description every scoring prompt carries ("" when none was inferred)."""
    criteria: dict[str, str] = field(default_factory=dict)
    """The criteria, name -> definition (or statement); empty when none was inferred."""
    criteria_form: str = ""
    """``paper`` or ``sentence``: how stage 1 asked for the criteria ("" in judges stored before the choice)."""
    demos: list[dict[str, Any]] = field(default_factory=list)
    """The demonstrations that won the search: ``sample_id``, ``input``, ``output``, ``context``, ``human_100``,
    ``kind`` (``labeled`` or ``bootstrapped``) and, bootstrapped, the model's own trace."""
    search: list[dict[str, Any]] = field(default_factory=list)
    """One summary per candidate demonstration set (Q, correlations, coverage, reads)."""
    task_description_versions: list[str] = field(default_factory=list)
    """Every inferred version of the task description, in order."""
    criteria_parse_failures: int = 0
    """Criteria replies that gave no usable criteria even after their retry."""
    n_batches: int = 0
    """Mini-batches stage 1 had."""
    warnings: list[dict[str, Any]] = field(default_factory=list)
    """Fit-time warnings (``code``, ``message``, ``count``): no task description, no or few criteria, a
    selection that fell back to zero-shot."""
    reads: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per step, how the replies were read (``json``, ``text``, ``missing``, ...)."""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    """Inferred text the rubric checks refused, with its stage, rule and reason."""
    flagged: list[dict[str, Any]] = field(default_factory=list)
    """Inferred text the rubric checks accepted with flags, with its stage (and a criterion's name)."""

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> ActiveCriticState:
        """The record of a stored state; a key missing (an older judge) or null reads as the field's empty value."""
        present = {f.name: state[f.name] for f in fields(cls) if state.get(f.name) is not None}
        return cls(**present)

    @classmethod
    def from_judge(cls, judge: Judge) -> ActiveCriticState:
        """The learned state of an Active-Critic judge."""
        return cls.from_dict(judge.state)

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON shape: every field under its own name, in field order (what ``Judge.state`` holds)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def chosen_set(self) -> DemonstrationSetFigures | None:
        """The training figures of the demonstration set the judge scores with: the search's entry whose
        demonstrations are the judge's (None when the search did not record it)."""
        chosen_ids = [d.get("sample_id") for d in self.demos]
        entry = next((c for c in self.search if list(c.get("demo_ids") or []) == chosen_ids), None)
        return None if entry is None else DemonstrationSetFigures.from_dict(entry)

    @property
    def prompt_state(self) -> dict[str, Any]:
        """What the scoring prompts are built from (:func:`~judge_engine.methods.active_critic.run_pipeline`):
        the variant, the task description and the criteria."""
        return {"variant": self.variant, "task_description": self.task_description, "criteria": self.criteria}


def edited_judge(judge: Judge, *, params: dict[str, Any], task_description: str,
                 criteria: dict[str, str]) -> Judge:
    """``judge`` with a person's task description and criteria, and ``params`` (which carry the same edits):
    the demonstrations it won are kept, nothing is fitted again. Every other stored key stays as it was, so a
    judge stored by an older version keeps its own shape."""
    return replace(judge, params=params,
                   state={**judge.state, "task_description": task_description, "criteria": criteria})
