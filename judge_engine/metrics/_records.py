"""The records the metrics return: a correlation with its interval, and a level's meta-evaluation report."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

LEVELS = ("sample", "group", "system")
"""Meta-evaluation levels, see the module docstring."""

COEFFICIENTS = ("pearson", "spearman", "kendall")
"""Correlation coefficients reported, in this order."""


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its bootstrap confidence interval.

    Attributes
    ----------
    value : float
        Point estimate on the full data (NaN when undefined).
    ci_low, ci_high : float
        Bounds of the bootstrap percentile interval (NaN when bootstrapping
        was disabled or no resample gave a defined value).
    """

    value: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class LevelInfo:
    """Counts describing what a level computation used.

    Attributes
    ----------
    n : int
        Items with both a human and a predicted score.
    n_groups : int
        Group level: groups whose correlation entered the mean. System level:
        distinct groups (used as bootstrap units) when groups were given.
        Sample level: 0.
    groups_skipped : int
        Group level only: groups skipped because either side is constant (this
        includes groups with fewer than two items).
    n_systems : int
        Distinct systems among the items (0 when systems were not given).
    """

    n: int
    n_groups: int = 0
    groups_skipped: int = 0
    n_systems: int = 0


def _nan_to_none(x: float) -> float | None:
    x = float(x)
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class MetaEvalReport:
    """Result of :func:`meta_evaluate` for one aspect at one level.

    Attributes
    ----------
    level : str
        One of :data:`LEVELS`.
    pearson, spearman, kendall : Correlation
        Point estimates with bootstrap confidence intervals.
    n : int
        Items with both a human and a predicted score.
    n_missing : int
        Items whose prediction was missing (``None``/NaN, e.g. parse failures);
        they were excluded, never imputed.
    n_groups : int
        Groups used (see :class:`LevelInfo`); at sample level the groups resampled whole, else 0.
    groups_skipped : int
        Groups skipped at group level because either side is constant or has
        fewer than two items.
    n_systems : int
        Distinct systems among the items (0 when systems were not given).
    ci_note : str
        Why the intervals are withheld ("" when they are not): too few
        bootstrap units (see :data:`MIN_BOOTSTRAP_UNITS`).
    resampled : str
        What the interval resampled: ``"items"``, ``"groups"`` (whole groups: at group and system level, and at
        sample level where items share a source), or ``""`` (no interval).
    """

    level: str
    pearson: Correlation
    spearman: Correlation
    kendall: Correlation
    n: int
    n_missing: int
    n_groups: int
    groups_skipped: int
    n_systems: int
    ci_note: str = ""
    resampled: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict.

        Returns
        -------
        dict
            ``{"level", "pearson", "spearman", "kendall", "pearson_ci",
            "spearman_ci", "kendall_ci", "n", "n_missing", "n_groups",
            "groups_skipped", "n_systems", "ci_note", "resampled"}``; coefficients are floats, CIs are
            ``[low, high]`` lists. Undefined values (NaN) become ``None`` so
            that :func:`json.dumps` writes valid JSON (``null``).
        """
        out: dict[str, Any] = {"level": self.level}
        for m in COEFFICIENTS:
            out[m] = _nan_to_none(getattr(self, m).value)
        for m in COEFFICIENTS:
            c = getattr(self, m)
            out[f"{m}_ci"] = [_nan_to_none(c.ci_low), _nan_to_none(c.ci_high)]
        out.update(
            n=int(self.n),
            n_missing=int(self.n_missing),
            n_groups=int(self.n_groups),
            groups_skipped=int(self.groups_skipped),
            n_systems=int(self.n_systems),
            ci_note=self.ci_note,
            resampled=self.resampled,
        )
        return out
