"""How much a run will ask of its backend: LLM calls, and the minutes they take."""

from __future__ import annotations

from dataclasses import dataclass

from ..llm import LLMConfig
from ..methods import get_method
from ..store import Store
from .launching import same_backend
from .spec import RunSpec, ensure_dataset


def estimate(store: Store, spec: RunSpec) -> dict[str, int]:
    """LLM calls the run will request before any cache hit."""
    dataset = ensure_dataset(store, spec.dataset)
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    return get_method(spec.method, spec.params).estimate_calls(spec.train_size, n_test)


EMBEDDED_SECONDS_PER_CALL = 3.0
"""Seconds per call of the embedded SmolLM2 when this store has no history yet: the median of the alignment
runs on 2 shared CPU cores (2026-11-24, prompts of 300-1,500 tokens, 0.4-7 s per call)."""

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

    @property
    def minutes(self) -> float | None:
        return None if self.seconds_per_call is None else self.calls * self.seconds_per_call / 60.0

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
        return f"{self.label} ({self.seconds_per_call:.1f} s per request: {self.basis})"


def seconds_per_call(store: Store, llm: LLMConfig) -> tuple[float | None, str]:
    """Wall seconds per paid call on this backend, from the ledgers of earlier runs, with where it comes from.

    Calls in flight at once share the wall time, so a ledger's seconds (summed over calls) are divided by the
    backend's concurrency; the embedded model answers one call at a time.
    """
    calls = seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.calls and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger.calls
            seconds += run.ledger.seconds
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if calls >= MIN_CALLS_FOR_TIMING and seconds > 0:
        return seconds / calls / parallel, f"mean of {int(calls)} earlier requests on this backend"
    if llm.backend == "llamacpp" and not llm.model:
        return EMBEDDED_SECONDS_PER_CALL, "typical for the embedded model on 2 CPU cores"
    return None, "no timing on this backend yet (the first run measures it)"


def estimate_duration(store: Store, spec: RunSpec, *,
                      speed: tuple[float | None, str] | None = None) -> Duration:
    """Requests and minutes ``spec`` will take on its backend before any cache hit.

    ``speed`` is :func:`seconds_per_call` when the caller already has it (a page drawing several estimates).
    """
    calls = estimate(store, spec)
    per_call, basis = speed if speed is not None else seconds_per_call(store, spec.llm)
    return Duration(calls=int(calls["fit"] + calls["score"]), seconds_per_call=per_call, basis=basis,
                    fit_calls=int(calls["fit"]), score_calls=int(calls["score"]))
