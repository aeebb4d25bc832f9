"""What the verdict calibration (:mod:`.verdicts`) is made of: simulated judges and human scores, the
:class:`Scenario` a claim is simulated in and the :class:`Claim` record, which the claim modules
(:mod:`.verdict_worlds`, :mod:`.verdict_probes`) build on. Apart from :mod:`.verdicts`, which gathers the claims
and measures them, so that a claim module imports no module that imports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

JUDGES = ("noise", "human_plus_noise", "anti_correlated", "constant", "near_constant", "equal_to_baseline",
          "worse_than_baseline", "length_following", "order_sensitive")
"""Simulated judges. ``noise``: unrelated to the humans. ``human_plus_noise``: the human score plus noise of
the same spread everywhere (a Pearson of about 0.7). ``anti_correlated``: minus the human score plus that
noise. ``constant`` / ``near_constant``: one value / one value plus a tiny jitter (sd 0.01 against the
humans' ~1), unrelated to the humans. ``equal_to_baseline`` / ``worse_than_baseline``: a judge and a baseline that are both human plus noise, the judge with the same / twice the noise.
``length_following`` and ``order_sensitive`` are simulated by the probe claims (:mod:`.verdict_probes`)."""

SIZES = (8, 20, 50, 200)
"""Test items per scenario: from a first look to a full benchmark split."""

GROUP_SIZE = 4
"""Items per group when a scenario is grouped (SummEval has several summaries per source document)."""

SCREENING_CEILING = 0.10
"""False-alarm ceiling of a claim that is explicitly a screening hint and says so."""
WARNING_CEILING = 0.05
"""False-alarm ceiling of every other claim, and the ceiling on a noise judge being called "ok"."""


@dataclass(frozen=True)
class Scenario:
    """One simulated setting a claim is evaluated in."""

    judge: str
    """One of :data:`JUDGES`."""
    n_items: int
    """Scored test items."""
    grouped: bool
    """Items come in groups of :data:`GROUP_SIZE` (group-level figures, whole groups resampled)."""
    candidates: int = 1
    """Candidates the judge was chosen among on its training items (1: no selection)."""


@dataclass(frozen=True)
class Claim:
    """One thing the workbench can print about a judge, and how to see whether it fires in a simulation."""

    name: str
    """What is printed, in words (e.g. 'trust: ok', 'warning: worse than chance')."""
    screening: bool
    """An explicit screening hint that says so: its false-alarm ceiling is :data:`SCREENING_CEILING`."""
    fires: Callable[[Scenario, np.random.Generator], bool]
    """Simulates the scenario with the generator and says whether the claim is printed."""
    null: tuple[str, ...] = ("noise",)
    """Judges under which the claim firing is a false alarm (its rate is held to :attr:`ceiling`)."""
    planted: tuple[str, ...] = ()
    """Judges under which the claim should fire (its rate is its power)."""
    sizes: tuple[int, ...] = SIZES
    grouped: tuple[bool, ...] = (False, True)
    candidates: tuple[int, ...] = (1,)
    """Candidate counts simulated (the selection a method's defaults make before the claim is computed)."""
    retired: bool = False
    """A rule the workbench no longer prints, measured to show why it was replaced (no ceiling applies)."""

    @property
    def ceiling(self) -> float:
        return SCREENING_CEILING if self.screening else WARNING_CEILING


def groups_of(n_items: int, grouped: bool) -> np.ndarray:
    """Group label per item: groups of :data:`GROUP_SIZE`, or one group per item when not grouped."""
    return np.arange(n_items) // GROUP_SIZE if grouped else np.arange(n_items)


def human_scores(n_items: int, grouped: bool, rng: np.random.Generator) -> np.ndarray:
    """Likert-like human scores (1-5, averaged over three raters, so steps of 1/3), a group effect when grouped."""
    base = rng.normal(3.0, 0.8, n_items)
    if grouped:
        base += rng.normal(0.0, 0.5, n_items // GROUP_SIZE + 1)[groups_of(n_items, True)]
    raters = base[:, None] + rng.normal(0.0, 0.6, (n_items, 3))
    return np.clip(np.rint(raters), 1, 5).mean(axis=1)


def judge_scores(judge: str, human: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Scores of simulated ``judge`` (see :data:`JUDGES`) for items with human scores ``human``."""
    n, sd = human.size, float(np.std(human)) or 1.0
    if judge == "noise":
        return rng.choice(np.arange(1.0, 6.0), n)
    if judge in ("human_plus_noise", "equal_to_baseline"):
        return human + rng.normal(0.0, sd, n)
    if judge == "anti_correlated":
        return -human + rng.normal(0.0, sd, n)
    if judge == "worse_than_baseline":
        return human + rng.normal(0.0, 2.0 * sd, n)
    if judge == "constant":
        return np.full(n, 4.0)
    if judge == "near_constant":
        return 4.0 + rng.normal(0.0, 0.01, n)
    raise ValueError(f"judge {judge!r} is not simulated here: one of {JUDGES[:7]}")
