"""Fewer requests in flight while a server says 429, and back up to the configured number once it answers.

The openai client already retries a 429 a few times with backoff. A server that keeps answering 429 (a rate
limit per minute, a vLLM queue that is full) makes those retries run out for every request in flight at once;
failing the run then would throw away a long scoring job for a condition that a slower pace fixes. So the
call path (:meth:`judge_engine.llm.client.LLM.complete`) takes a slot of a :class:`RateGovernor` for each
uncached call: a rate-limited call halves the slots (down to one) and is tried again after a growing pause,
and every ``limit`` calls answered in a row add a slot back, up to the configured concurrency (additive
increase, multiplicative decrease, as TCP does). A request that has waited longer than the configured
patience raises, and the run pauses as for any backend that is unavailable.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

FIRST_PAUSE_S = 1.0
"""Pause before a rate-limited request is sent again; it doubles for that request up to :data:`MAX_PAUSE_S`."""
MAX_PAUSE_S = 60.0


class RateGovernor:
    """At most ``limit`` calls in flight; ``limit`` halves on a 429 and grows back by one per ``limit`` answers."""

    def __init__(self, ceiling: int):
        self.ceiling = max(1, int(ceiling))
        self.limit = self.ceiling
        self.in_flight = 0
        self.lowered = 0
        """How many times a 429 lowered the limit (the run's summary says so)."""
        self.lowest = self.ceiling
        """The fewest slots the server allowed during this client's life."""
        self._answered = 0
        self._cond = threading.Condition()

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._cond:
            while self.in_flight >= self.limit:
                self._cond.wait()
            self.in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                self.in_flight -= 1
                self._cond.notify()  # one slot freed, one waiter can take it (waking all at 256 in flight costs)

    def answered(self) -> None:
        with self._cond:
            self._answered += 1
            if self.limit < self.ceiling and self._answered >= self.limit:
                self.limit += 1
                self._answered = 0
                self._cond.notify_all()

    def rate_limited(self) -> None:
        with self._cond:
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self.lowered += 1
            self._answered = 0
