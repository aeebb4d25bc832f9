"""What a judge is measured against in its trust report: the baseline runs on its own split, and the peers.

Two kinds of comparison run count (:func:`baseline_runs`), both finished on the same dataset, aspect, test
items and backend as the judge:

- the baselines (:data:`BASELINE_METHODS`: direct scoring and G-Eval), which learn nothing from the training
  items: every learned judge, the peers included, must not be significantly below them;
- the peers (:data:`PEER_METHODS`: ``memalign``, MLflow's own alignment of a judge), what a team's platform
  already offers: the four methods are measured against them as against a baseline, so a team sees whether a
  method does better than what it has. A peer itself is measured against the baselines, not against itself.

Each comparison is a paired bootstrap on the items both runs scored (:func:`judge_engine.compare.paired_bootstrap`)
at the level :func:`judge_engine.trust.comparison_level` chooses; :class:`BaselineDifference` holds it. A run is
compared with two or three runs (direct, G-Eval, a peer), and any one significantly below gives a warning: the
p-values are Holm-adjusted over the run's comparisons (:func:`judge_engine.metrics.holm_adjusted`), so a judge equal
to all of them is warned no more often than one compared with a single baseline (``bench verdicts``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import evidence, runs
from .llm import LLMConfig
from .metrics import holm_adjusted
from .records import RunRecord
from .store import Store

STATISTIC = "pearson"
"""The coefficient of the test figures and of the paired differences (one for both: trust reads it here)."""

BASELINE_METHODS = runs.BASELINES
"""The baselines a learned judge must beat: the methods a run brings on its own split (they learn nothing
from the training items), one list for both."""

PEER_METHODS = ("memalign",)
"""Other platforms' own alignment, run on the same split and backend: the methods are compared against them as
against a baseline (docs/integrations.md, the ``memalign`` peer)."""

PEER_TITLES = {"memalign": "MLflow's own alignment"}

ALPHA = 0.05
"""Two-sided level of the paired bootstrap below which a difference to a baseline counts as significant."""


@dataclass(frozen=True)
class BaselineDifference:
    """The judge's test correlation minus a baseline run's, on the same items, with its paired p-value."""

    run_id: int
    method: str
    level: str
    """Level of the comparison (the natural one, or sample when it has too few units for a bootstrap)."""
    diff: float | None
    p: float | None
    """Paired two-sided p-value, Holm-adjusted over the run's comparisons (``compared`` of them)."""
    n: int
    """Items both runs scored."""
    significantly_below: bool
    resampled: str = ""
    """What the paired bootstrap drew (:func:`judge_engine.evidence.basis`): ``groups`` (whole sources), ``items``,
    or ``nothing`` (too few sources: no p-value); "" when not recorded."""
    peer: bool = False
    """A peer (:data:`PEER_METHODS`, e.g. MLflow's MemAlign) rather than a baseline that learns nothing."""
    compared: int = 1
    """Comparisons the run's p-values were adjusted over (its baselines and peers with a p-value)."""

    @property
    def label(self) -> str:
        return f"#{self.run_id} {self.method}" + (f" (peer: {PEER_TITLES[self.method]})"
                                                  if self.peer and self.method in PEER_TITLES else "")


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float, or None where it is missing, not a number or not finite (never NaN in a report)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def compared_methods(method: str) -> tuple[str, ...]:
    """The methods a run of ``method`` is measured against: none for a baseline, the baselines for a peer, the
    baselines and the peers for any other method."""
    if method in BASELINE_METHODS:
        return ()
    if method in PEER_METHODS:
        return tuple(BASELINE_METHODS)
    return tuple(BASELINE_METHODS) + PEER_METHODS


def baseline_runs(store: Store, run: RunRecord) -> list[RunRecord]:
    """Finished baseline and peer runs (:func:`compared_methods`) on the same dataset, aspect, test items and
    backend as ``run``.

    A baseline run itself has none: it is what the learned judges are measured against. The runs come
    as :func:`judge_engine.compare.finished_runs` gives them, ready for :func:`compare.align`.
    """
    from . import compare  # pandas and sklearn (explain): loaded for a baseline's comparison, not by `run`

    wanted = compared_methods(run.method)
    if not wanted:
        return []
    key = compare.split_key(run)
    found = []
    for other in compare.finished_runs(store, run.dataset, run.aspect):
        if (other.id != run.id and other.method in wanted and compare.split_key(other) == key
                and runs.same_backend(LLMConfig.from_dict(other.llm), LLMConfig.from_dict(run.llm))
                and _learned_alike(other, run)):
            found.append(other)
    return found


def _learned_alike(other: RunRecord, run: RunRecord) -> bool:
    """A baseline learns nothing, so the same test items are enough; a peer learns, so it is measured against
    only where it learned from the same training items and the same human score as ``run`` (one on 100 items,
    or on another annotator's labels, would make a difference of training data look like one of method)."""
    if other.method not in PEER_METHODS:
        return True
    train = sorted(run.split.train_ids) if run.split else []
    return (sorted(other.split.train_ids) if other.split else []) == train \
        and other.human_aggregate == run.human_aggregate


def baseline_difference(run_id: int, method: str, level: str, diff: float | None, p: float | None, n: int, *,
                        resampled: str = "", compared: int = 1) -> BaselineDifference:
    """A :class:`BaselineDifference` from a paired bootstrap's ``(diff, p)``: significant below when the
    two-sided ``p`` is under :data:`ALPHA` and the judge is the lower one."""
    diff, p = finite_or_none(diff), finite_or_none(p)
    return BaselineDifference(run_id=run_id, method=method, level=level, diff=diff, p=p, n=n,
                              significantly_below=bool(p is not None and diff is not None and p < ALPHA and diff < 0),
                              resampled=resampled, peer=method in PEER_METHODS, compared=compared)


def baseline_differences(store: Store, run: RunRecord, baselines: list[RunRecord],
                         level: str, dataset: Any, n_bootstrap: int) -> tuple[BaselineDifference, ...]:
    """The paired difference of ``run`` to each of ``baselines`` at ``level``, on the items both scored."""
    out = []
    from . import compare  # pandas and sklearn (explain): loaded for a baseline's comparison, not by `run`

    for b in baselines:
        aligned = compare.align(store, [run, b], common_subset=True)
        human, groups, systems = compare._columns(dataset, run.aspect, aligned.ids)
        diff, p = compare.paired_bootstrap(human, aligned.scores[run.id], aligned.scores[b.id], level=level,
                                           groups=groups, systems=systems, statistic=STATISTIC,
                                           n_bootstrap=n_bootstrap)
        claim = evidence.basis(level, n_items=len(aligned.ids), groups=groups)
        out.append(baseline_difference(b.id, b.method, level, diff, p, len(aligned.ids),
                                       resampled=claim.units if claim.claim else "nothing"))
    return holm(out)


def holm(differences: list[BaselineDifference]) -> tuple[BaselineDifference, ...]:
    """``differences`` with their p-values Holm-adjusted over all of them, significance read from the adjusted
    ones: any one of k comparisons below its level is k chances of a false warning, not one."""
    adjusted = holm_adjusted([d.p for d in differences])
    compared = sum(p is not None for p in adjusted)
    return tuple(baseline_difference(d.run_id, d.method, d.level, d.diff, p, d.n, resampled=d.resampled,
                                     compared=compared) for d, p in zip(differences, adjusted))
