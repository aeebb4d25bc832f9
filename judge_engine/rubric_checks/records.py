"""The verdict on a generated rubric entry and the names of the rules that give it.

A :class:`RubricCheck` says whether an entry may be used and why not; a :class:`RubricFlag` is a doubt
about an entry used anyway. Both are what pages, run summaries and the curation history store.
Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable


KINDS = ("hypothesis", "criterion", "task_description", "explanation", "auxiliary")

REFUSING_RULES = ("empty", "score_list", "repetitive", "too_long", "copy", "near_duplicate", "placeholder", "stutter",
                  "circular", "copied_definition", "restates_parent", "instructs_evaluator", "refusal", "same_score", "model_check")
"""Rules that refuse an entry (see the module docstring)."""
FLAG_RULES = ("no_quality", "restates_aspect", "about_raters", "about_scoring", "first_person", "meta", "reports_score",
              "field_name", "template_name", "quotes_instruction", "hedges", "contradicts", "keyword_list", "model_check")
"""Rules that only flag an entry: it is used, and the flag is shown and counted."""


@dataclass(frozen=True)
class RubricFlag:
    """A doubt about an entry that is used anyway (see :data:`FLAG_RULES`)."""

    rule: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


@dataclass(frozen=True)
class RubricCheck:
    """The verdict on one generated entry."""

    text: str
    """The entry as generated."""
    ok: bool
    """Whether it may be used."""
    rule: str = ""
    """The refusing rule it broke (see the module docstring), "" when ok."""
    reason: str = ""
    """In words, for the page and the run summary."""
    flags: tuple[RubricFlag, ...] = ()
    """Doubts shown beside a used entry; empty for a refused one."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"text": self.text, "ok": self.ok, "rule": self.rule, "reason": self.reason}
        if self.flags:
            out["flags"] = [f.to_dict() for f in self.flags]
        return out

    def without(self, rule: str) -> "RubricCheck":
        """The same verdict without the flag ``rule``."""
        return RubricCheck(self.text, self.ok, self.rule, self.reason, tuple(f for f in self.flags if f.rule != rule))

    def flagged(self, *extra: RubricFlag) -> "RubricCheck":
        """The same verdict with more flags (none are added to a refusal)."""
        if not self.ok or not extra:
            return self
        return RubricCheck(self.text, True, flags=self.flags + extra)


def _refuse(text: str, rule: str, reason: str) -> RubricCheck:
    return RubricCheck(text, False, rule, reason)


def rejected_summary(checks: Iterable[RubricCheck]) -> dict[str, int]:
    """How many entries each refusing rule refused."""
    return dict(Counter(c.rule for c in checks if not c.ok))


def flag_summary(checks: Iterable[RubricCheck]) -> dict[str, int]:
    """How many used entries each flag was raised on."""
    return dict(Counter(f.rule for c in checks if c.ok for f in c.flags))
