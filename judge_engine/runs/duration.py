"""A run's wall time before cache hits, as its calls, their speed and its sequential waves make it."""

from __future__ import annotations

from dataclasses import dataclass

MIN_CALLS_FOR_TIMING = 20
"""Finished calls on a backend before their mean stands for it."""


SHORT_RUN_MINUTES = 1.5
"""Estimates below this read ``under 2 min``: whole minutes would round them to 1 or 0, which promises too much."""


@dataclass(frozen=True)
class Duration:
    """An estimate of a run's wall time before cache hits."""

    calls: int
    """Requests to fit and to score, together."""
    seconds_per_call: float | None
    """None when nothing is known about this backend's speed yet."""
    basis: str
    """Where the speed comes from, in words."""
    fit_calls: int = 0
    score_calls: int = 0
    waves: int = 0
    """Sequential steps of the run (:meth:`~judge_engine.methods.Method.estimate_waves`): each waits for the
    answers of the one before, so calls in flight do not share its latency."""
    latency: float = 0.0
    """Seconds one call takes on the backend (0: unknown, or calls answered one at a time, where ``calls x
    seconds_per_call`` already counts each whole)."""
    parallel: int = 1
    """Calls in flight at once."""
    wave_overhead: float = 0.0
    """Seconds of the method's own work per wave, beyond its calls (:func:`wave_costs`, from earlier runs)."""
    fixed_seconds: float = 0.0
    """Seconds of the run's own work beyond its calls and waves, whatever their number."""

    @property
    def wave_seconds(self) -> float:
        """What the sequential steps add to ``calls x seconds_per_call`` (the calls' seconds shared by the window).

        A wave of n calls lasts ceil(n / parallel) latencies: at least one, however few its calls, and on average
        about half a latency more than its share of the window. So the run takes the larger of the two: every wave
        one latency, or the calls' shared seconds plus half a latency, less its own share, per wave.
        """
        if self.seconds_per_call is None or not self.latency or self.parallel <= 1:
            return 0.0
        shared = self.calls * self.seconds_per_call
        half_a_latency = self.waves * self.latency * (1.0 - 1.0 / self.parallel) / 2.0
        return max(half_a_latency, self.waves * self.latency - shared) + self.waves * self.wave_overhead

    @property
    def minutes(self) -> float | None:
        if self.seconds_per_call is None:
            return None
        return (self.calls * self.seconds_per_call + self.wave_seconds + self.fixed_seconds) / 60.0

    @property
    def label(self) -> str | None:
        """``about 14 min`` or ``under 2 min`` (see :data:`SHORT_RUN_MINUTES`); None when the speed is unknown.

        The one wording of a run's time: :meth:`describe` and the pages' start forms show it.
        """
        if self.minutes is None:
            return None
        return f"about {self.minutes:.0f} min" if self.minutes >= SHORT_RUN_MINUTES else "under 2 min"

    def describe(self) -> str:
        """E.g. ``about 14 min (3.0 s per call: ...)``."""
        if self.minutes is None:
            return f"{self.calls} requests; {self.basis}"
        waves = f" and {self.waves} steps in turn, +{self.wave_seconds:.0f} s" if self.wave_seconds >= 0.5 else ""
        return f"{self.label} ({self.seconds_per_call:.1f} s per request{waves}: {self.basis})"
