"""One rule for evidence: the level a claim is made at, and the fewest independent units it may rest on.

Every claim the workbench makes from resampling (an interval, a p-value, "significantly worse", the gate's
"worse", the trust verdict's "worse than chance" or "below a baseline") asks :func:`basis` first. Items that
share a source (a group: an article, a dialogue context, a prompt) are not independent, so when a group holds more
than one item, the groups are the units a claim rests on, unless the caller says the items are independent.

The rule, with the fallback said in words (:attr:`Basis.note`):

- fewer than :data:`MIN_UNITS` units (groups, or items when no group holds two): **no claim** at all, "no evidence
  either way" (k units have only C(2k-1, k) distinct resamples: 35 for four; one SummEval article is 16 summaries of
  one source, and a paired bootstrap over it returned p = 0.0 for any difference);
- a correlation at the group level over fewer than :data:`MIN_GROUPS_FOR_GROUP_CORRELATION` groups: the claim is
  made at the items' level instead (a percentile interval over a dozen groups put a random judge "below zero" in
  7-8% of draws at 5 and 13 groups, and a paired bootstrap over 5 groups called two equal judges different in 9%,
  bench verdicts);
- a mean difference (the gate) rests on whole groups from :data:`MIN_UNITS` of them (its expanded percentile
  interval is a t interval on the groups' means: judge_engine.metrics._paired).

Pure functions; the trust report, Compare, the probes, stress and the gate all call them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Hashable, Sequence

MIN_UNITS = 5
"""Fewest independent units (groups, or items when none share a source) behind any claim."""

MIN_GROUPS_FOR_GROUP_CORRELATION = 20
"""Fewest groups whose percentile interval may carry a claim about a group-level correlation; with fewer, the
claim is made at the items' level."""

NO_EVIDENCE = "no evidence either way"


@dataclass(frozen=True)
class Basis:
    """What a claim may rest on, for one set of items."""

    asked: str
    """The level asked for ("sample", "group", "system")."""
    level: str | None
    """The level the claim is made at; None: no claim at all (no interval, no p-value, no "significantly")."""
    units: str
    """"groups" or "items": what is resampled for the claim."""
    n_units: int
    """How many of them."""
    n_items: int
    n_groups: int
    note: str = ""
    """The fallback (or why there is no claim) in words; "" when the claim is made as asked."""

    @property
    def claim(self) -> bool:
        """Whether any claim (interval, p-value, "significantly") may be made."""
        return self.level is not None


def is_grouped(groups: Sequence[Hashable] | None) -> bool:
    """Whether some group holds more than one item (then items are not independent)."""
    if groups is None:
        return False
    return any(count > 1 for count in Counter(groups).values())


def group_problem(groups: Sequence[Hashable] | None, *, column: str = "group") -> str:
    """What is wrong with a group column the user gave, in one message ("" when nothing is).

    A column with one value groups every item together (one unit: no claim); a value per item groups nothing
    (the items are treated as independent, as if no column were given)."""
    if groups is None or len(groups) < 2:
        return ""
    distinct = len(set(groups))
    if distinct == 1:
        return (f"the {column} column has one value for all {len(groups)} items: they all share one source, "
                f"so there is one independent unit and {NO_EVIDENCE}")
    if distinct == len(groups):
        return (f"the {column} column has a different value for each of the {len(groups)} items (groups of one "
                "item): it groups nothing, so the items are treated as independent")
    return ""


def basis(level: str, *, n_items: int, groups: Sequence[Hashable] | None = None, statistic: str = "correlation",
          independent: bool = False) -> Basis:
    """The :class:`Basis` of a claim at ``level`` about ``n_items`` items with these ``groups``.

    ``statistic`` is ``"correlation"`` (Compare, the trust report, probes: a group-level figure needs
    :data:`MIN_GROUPS_FOR_GROUP_CORRELATION` groups) or ``"mean"`` (the gate's paired mean difference).
    ``independent`` says the items are independent whatever their groups (then items are the units).
    """
    n_groups = len(set(groups)) if groups is not None else n_items
    return basis_from_counts(level, n_items=n_items, n_groups=n_groups,
                             grouped=not independent and is_grouped(groups), statistic=statistic)


def basis_from_counts(level: str, *, n_items: int, n_groups: int, grouped: bool,
                      statistic: str = "correlation") -> Basis:
    """:func:`basis` from counts alone (a stored figure keeps its counts, not its groups)."""
    units, n_units = ("groups", n_groups) if grouped else ("items", n_items)
    if n_units < MIN_UNITS:
        what = (f"the {n_items} items come from {n_groups} source group(s) and items of one group are not "
                "independent" if grouped else f"{n_items} item(s)")
        return Basis(level, None, units, n_units, n_items, n_groups,
                     f"{what}: fewer than {MIN_UNITS} independent units, so {NO_EVIDENCE} (no interval, "
                     "no p-value)")
    if statistic == "correlation" and level == "group" and n_groups < MIN_GROUPS_FOR_GROUP_CORRELATION:
        return Basis(level, "sample", units, n_units, n_items, n_groups,
                     f"{n_groups} groups are too few for a claim at the group level (at least "
                     f"{MIN_GROUPS_FOR_GROUP_CORRELATION}); the test is made at the items' level"
                     + (", resampling whole groups" if grouped else ""))
    return Basis(level, level, units, n_units, n_items, n_groups, "")


def p_value_claim(p: float | None, diff: float | None, alpha: float, basis_: Basis) -> bool:
    """Whether ``(diff, p)`` says "significantly worse" under ``basis_``: never without a claim."""
    return bool(basis_.claim and p is not None and diff is not None and p == p and p < alpha and diff < 0)
