"""What a HypoEval fit learned, as typed records over the JSON stored in ``Judge.state``.

The stored format is the one fits have always written (``{"selected": [...], "bank": [...], "train_ids": ...}``);
these records only read and write it, so judges stored before them load unchanged, and readers (the page,
scoring) use fields instead of string keys. Keys a judge made by an older version lacks read as None, empty,
or the default each field names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

from ..base import Judge


@dataclass(frozen=True)
class StoredHypothesis:
    """One hypothesis of the bank as the judge stores it; the fields are the stored keys, in their order."""

    key: str
    """Hash of the text (:func:`~judge_engine.methods.hypoeval.bank.hypothesis_key`): an edited text is a new key."""
    text: str
    origin: str
    """``initial``, ``wrong_examples``, ``literature`` or ``curated``."""
    reward: float | None = None
    """The §3.1 UCB reward at the end of the update stage; None without a parsed score."""
    acc: float | None = None
    """The reward's exploitation term (mean of a - b (s - ŝ)^2)."""
    n_evaluated: int | None = None
    """|S_h|: training samples it was evaluated on during the update stage."""
    train_pearson: float | None = None
    """Pearson correlation with the human scores on S_tr (§3.2), on the items it scored."""
    train_parsed: int | None = None
    """Training items it gave a readable score."""
    coverage: float | None = None
    """Share of the training items it scored."""
    fitness: float | None = None
    """Coverage-aware selection fitness (Pearson x coverage); None when not eligible."""
    selectable: bool | None = None
    """Eligible and correlated positively: selection may keep it on its own."""
    fitness_reason: str | None = None
    """Why it is not selectable ("" when it is)."""
    accepted_by: str | None = None
    """``person`` when kept because a person accepted it although not selectable; None when selection chose it."""
    refresh: int | None = None
    """The bank refresh that generated it (wrong-example hypotheses only)."""
    scores: dict[str, float | None] | None = None
    """Its training scores on the judge scale by sample id (None = missing)."""

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> "StoredHypothesis":
        """A stored entry, or a bank entry of a running fit (its working keys such as ``s_h`` are left out)."""
        return cls(**{f.name: entry.get(f.name) for f in fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        """The stored entry: every field, in order (as fits have always stored it)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class HypoEvalState:
    """A HypoEval judge's learned state (``Judge.state``), read and written in its stored JSON format."""

    selected: tuple[StoredHypothesis, ...]
    """H_ev: the hypotheses the judge scores with, best first."""
    bank: tuple[StoredHypothesis, ...]
    """The final bank H they were selected from (a curated run: the person's hypotheses)."""
    train_ids: tuple[str, ...] = ()
    """S_tr, in the seeded order the fit used."""
    failures: int = 0
    """Unreadable generation replies plus missing training scores."""
    replies: Mapping[str, int] | None = None
    """Generation and repetition-check replies by how they were read (``json``, ``text``, ``unread``)."""
    score_sources: Mapping[str, int] | None = None
    """Training scores by where they were read."""
    warnings: tuple[dict[str, Any], ...] = ()
    """Fit-time warnings (:func:`~judge_engine.methods.base.judge_warning`: ``code``, ``message``, ``count``)."""
    rejected: tuple[dict[str, Any], ...] = ()
    """Generated hypotheses the rubric checks refused: ``text``, ``rule``, ``reason``, ``name``, ``stage``, ..."""
    flagged: tuple[dict[str, Any], ...] = ()
    """Hypotheses of the bank used with rubric-check flags: ``text``, ``flags``, ``name``, ``stage``, ..."""
    literature_used: bool = False
    """Whether literature notes shaped the bank (given, and the bank was generated rather than curated)."""
    criteria_form: str | None = None
    """How hypotheses were asked for: ``paper`` or ``sentence``; None in judges made before the choice existed."""

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> "HypoEvalState":
        """The record of a stored ``Judge.state``; keys an older judge lacks read as empty."""
        return cls(selected=tuple(StoredHypothesis.from_dict(h) for h in state.get("selected") or ()),
                   bank=tuple(StoredHypothesis.from_dict(h) for h in state.get("bank") or ()),
                   train_ids=tuple(state.get("train_ids") or ()), failures=int(state.get("failures") or 0),
                   replies=dict(state.get("replies") or {}), score_sources=dict(state.get("score_sources") or {}),
                   warnings=tuple(state.get("warnings") or ()), rejected=tuple(state.get("rejected") or ()),
                   flagged=tuple(state.get("flagged") or ()), literature_used=bool(state.get("literature_used")),
                   criteria_form=state.get("criteria_form"))

    @classmethod
    def from_judge(cls, judge: Judge) -> "HypoEvalState":
        return cls.from_dict(judge.state)

    def to_state(self) -> dict[str, Any]:
        """The JSON-native dict stored as ``Judge.state`` (lists, not tuples: a judge survives a JSON round trip)."""
        return {"selected": [h.to_dict() for h in self.selected], "bank": [h.to_dict() for h in self.bank],
                "train_ids": list(self.train_ids), "failures": self.failures,
                "replies": dict(self.replies or {}), "score_sources": dict(self.score_sources or {}),
                "warnings": list(self.warnings), "rejected": list(self.rejected), "flagged": list(self.flagged),
                "literature_used": self.literature_used, "criteria_form": self.criteria_form}

    def hypothesis(self, key: str) -> StoredHypothesis | None:
        """The bank's hypothesis with this key (a selected one is in the bank too), or None."""
        return next((h for h in self.bank if h.key == key), None)

    @property
    def mean_training_pearson(self) -> float | None:
        """Mean training Pearson of the selected hypotheses that have one (None when none has)."""
        defined = [h.train_pearson for h in self.selected if h.train_pearson is not None
                   and math.isfinite(h.train_pearson)]
        return sum(defined) / len(defined) if defined else None

    @property
    def selected_keys(self) -> tuple[str, ...]:
        return tuple(h.key for h in self.selected)
