"""First looks: a run and its baselines estimated together, and the largest quick look that fits its time.

Moved out of :mod:`.estimates` (issue 46 item 7: no module over 700 lines). Each run's own estimate is
:func:`.estimates.estimate_duration`, at the method's speed on the backend (:func:`.estimates.method_speed`),
both read through the module so that one patch of either reaches every look.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from ..methods import METHODS
from ..store import Store
from . import estimates
from .estimates import Duration
from .launching import Baseline
from .spec import RunSpec, quick_spec

LOOK_START_SECONDS = 10.0
"""Seconds before a look's first call: each run's worker process starts and loads the model."""


@dataclass(frozen=True)
class LookEstimate:
    """A run and its baselines before they start: their estimates and the wall time of all of them."""

    spec: RunSpec
    durations: tuple[Duration, ...]
    """The run's, then each baseline's."""

    @property
    def calls(self) -> int:
        return sum(d.calls for d in self.durations)

    @property
    def seconds(self) -> float | None:
        """Every run's calls in turn (the embedded model answers one call at a time) plus the start."""
        if any(d.minutes is None for d in self.durations):
            return None
        return LOOK_START_SECONDS + sum(d.minutes * 60.0 for d in self.durations)

    @property
    def duration(self) -> Duration:
        """The whole look as one :class:`Duration` (its label is what the button shows)."""
        seconds = self.seconds
        return Duration(calls=self.calls, seconds_per_call=None if seconds is None else seconds / max(1, self.calls),
                        basis="with its baselines; " + self.durations[0].basis,
                        fit_calls=sum(d.fit_calls for d in self.durations),
                        score_calls=sum(d.score_calls for d in self.durations))


def estimate_look(store: Store, spec: RunSpec, baselines: Sequence[str | Baseline] = (), *,
                  speeds: dict[str, tuple[float | None, str]] | None = None) -> LookEstimate:
    """The time of ``spec`` with ``baselines`` on its split, each at its method's speed on the backend.

    ``speeds``: :func:`.estimates.method_speed` by method, read from the store once and filled here as methods come up
    (a caller estimating several looks on one backend passes the same dict).
    """
    speeds = {} if speeds is None else speeds
    specs = [spec] + [Baseline.of(b).beside(spec) for b in baselines]
    for s in specs:
        if s.method not in speeds:
            speeds[s.method] = estimates.method_speed(store, s.method, s.llm)
    return LookEstimate(spec, tuple(estimates.estimate_duration(store, s, speed=speeds[s.method]) for s in specs))


QUICK_LOOK_SECONDS = 210.0
"""What a quick first look aims at: about three minutes, baselines included (an estimate under 3.5 minutes
reads "about 3 min")."""


@dataclass(frozen=True)
class QuickLook:
    """The quick first look chosen for a backend: its spec, its estimate and what it leaves out."""

    estimate: LookEstimate
    smaller: dict[str, Any]
    """What was made smaller than the method's quick parameters to fit the time (empty: nothing)."""

    @property
    def spec(self) -> RunSpec:
        return self.estimate.spec


def quick_look(store: Store, spec: RunSpec, baselines: Sequence[str | Baseline] = (),
               params: dict[str, Any] | None = None, *, seconds: float = QUICK_LOOK_SECONDS) -> QuickLook:
    """The largest quick first look of ``spec``'s method that fits ``seconds`` on its backend, with baselines.

    The method's :attr:`~judge_engine.methods.Method.quick_params`, then each of its ``smaller_looks`` in
    turn, estimated at the method's speed on the backend (:func:`.estimates.method_speed`); the smallest when none fits,
    and the largest when the speed is unknown. ``params`` (a page's own) apply on top of each.
    """
    base = quick_spec(spec, params)
    speeds: dict[str, tuple[float | None, str]] = {}  # every size is on one backend: its speeds are read once
    chosen = QuickLook(estimate_look(store, base, baselines, speeds=speeds), {})
    for smaller in METHODS[spec.method].smaller_looks:
        if chosen.estimate.seconds is None or chosen.estimate.seconds <= seconds:
            break
        candidate = replace(base, params={**base.params, **smaller, **(params or {})})
        chosen = QuickLook(estimate_look(store, candidate, baselines, speeds=speeds), smaller)
    return chosen
