"""First looks: a run and its baselines estimated together, and the largest quick look that fits its time.

Moved out of :mod:`.estimates` (issue 46 item 7: no module over 700 lines). Each run's own estimate is
:func:`.estimates.estimate_duration`, at the method's speed on the backend (:func:`.estimates.method_speed`),
both read through the module so that one patch of either reaches every look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..data import SplitError, make_split
from ..methods import METHODS
from ..records import Dataset
from ..store import Store
from . import estimates
from .estimates import Duration
from .launching import Baseline
from .spec import QUICK_TEST, QUICK_TEST_SIZES, QUICK_TRAIN_SIZES, RunSpec, ensure_dataset, quick_spec

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
    """What was changed from the method's quick parameters: made smaller to fit the time, or its
    :attr:`~judge_engine.methods.Method.larger_look` on the most training items (empty: nothing)."""

    @property
    def spec(self) -> RunSpec:
        return self.estimate.spec

    @property
    def train_size(self) -> int:
        """The look's training items (one of :data:`~.spec.QUICK_TRAIN_SIZES`)."""
        return self.spec.train_size

    @property
    def test_size(self) -> int:
        """The look's test items asked for (one of :data:`~.spec.QUICK_TEST_SIZES`; a split by source may hold a
        few more)."""
        return self.spec.test_size


def quick_look(store: Store, spec: RunSpec, baselines: Sequence[str | Baseline] = (),
               params: dict[str, Any] | None = None, *, seconds: float = QUICK_LOOK_SECONDS) -> QuickLook:
    """The largest quick first look of ``spec``'s method that fits ``seconds`` on its backend, with baselines.

    The method's :attr:`~judge_engine.methods.Method.quick_params` on the most training and test items
    (:data:`~.spec.QUICK_TRAIN_SIZES`, :data:`~.spec.QUICK_TEST_SIZES`), then on each of the training sizes with
    the fewest test items, largest first (with its ``larger_look`` on more than the smallest), then each of its
    ``smaller_looks`` in turn on the smallest, estimated at the method's speed on the backend
    (:func:`.estimates.method_speed`); the smallest when none fits, and the largest when the speed is unknown.
    ``params`` (a page's own) apply on top of each. A training size is tried only where it leaves the smallest
    look's test items as they are (:func:`same_test`), the most test items only where they span as many sources
    (:func:`spans_as_many`).
    """
    speeds: dict[str, tuple[float | None, str]] = {}  # every size is on one backend: its speeds are read once
    dataset = ensure_dataset(store, spec.dataset)
    smallest = QUICK_TRAIN_SIZES[-1]
    larger = METHODS[spec.method].larger_look
    sizes = [(train, QUICK_TEST, {} if train == smallest else dict(larger)) for train in QUICK_TRAIN_SIZES
             if train == smallest or same_test(dataset, spec.seed, train)]
    most_train, most_test = QUICK_TRAIN_SIZES[0], QUICK_TEST_SIZES[0]
    if most_train != smallest and sizes[0][0] == most_train and spans_as_many(dataset, spec.seed, most_train,
                                                                              most_test):
        sizes.insert(0, (most_train, most_test, dict(larger)))
    sizes += [(smallest, QUICK_TEST, smaller) for smaller in METHODS[spec.method].smaller_looks]

    def look(train: int, test: int, smaller: dict[str, Any]) -> QuickLook:
        candidate = quick_spec(spec, {**smaller, **(params or {})}, train_size=train, test_size=test)
        return QuickLook(estimate_look(store, candidate, baselines, speeds=speeds), smaller)

    chosen = look(*sizes[0])
    for train, test, smaller in sizes[1:]:
        if chosen.estimate.seconds is None or chosen.estimate.seconds <= seconds:
            break
        chosen = look(train, test, smaller)
    return chosen


def _test_sources(dataset: Dataset, seed: int, train_size: int, test_size: int) -> int | None:
    """Sources (groups) the test part of a quick look's split spans (None: it cannot be drawn)."""
    try:
        split = make_split(dataset, train_size=train_size, test_size=test_size, seed=seed)
    except SplitError:
        return None
    group_of = {s.id: s.group_id for s in dataset.samples}
    return len({group_of[i] for i in split.test_ids})


def spans_as_many(dataset: Dataset, seed: int, train_size: int, test_size: int) -> bool:
    """Whether a quick look's split with ``test_size`` test items can be drawn and spans at least as many sources
    as the smallest look's (:data:`~.spec.QUICK_TEST`): more items from fewer sources would narrow nothing (a
    verdict's interval is over sources where they hold several items)."""
    more = _test_sources(dataset, seed, train_size, test_size)
    fewest = _test_sources(dataset, seed, QUICK_TRAIN_SIZES[-1], QUICK_TEST)
    return more is not None and (fewest is None or more >= fewest)


def same_test(dataset: Dataset, seed: int, train_size: int) -> bool:
    """Whether a quick look's split with ``train_size`` training items can be drawn and tests the same items as
    one with the smallest (:data:`~.spec.QUICK_TRAIN_SIZES`): on a dataset of few groups more training items would
    take groups from the test part, and a look's verdict rests on that part (issue 62 item 1)."""
    def test_ids(train: int) -> tuple[str, ...] | None:
        try:
            return make_split(dataset, train_size=train, test_size=QUICK_TEST, seed=seed).test_ids
        except SplitError:
            return None

    ids = test_ids(train_size)
    return ids is not None and ids == test_ids(QUICK_TRAIN_SIZES[-1])
