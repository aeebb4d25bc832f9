"""Telling a bad item from a broken setting while a file is scored (issue 64 item 1).

A request that fails the same way after the client's retries (a 4xx other than 401/403/404/429, a 5xx, a
timeout, a reply that is not a chat completion) is either that item's problem (a prompt over the model's
context, a text that crashes the server's tokenizer) or everyone's (a parameter the server does not take, a
server that is down or stuck). The failures of the *other* items tell which: while other items are answered, a
failed item is written missing with its reason and the job goes on; when nothing is answered between many
failures, or a request times out while no other answer came for as long, the job stops with one line and
writes none of those failures (a re-run tries them again). A count of failed items in a row in the file does
not decide: 20 over-long items one after the other among answered ones are 20 missing items.

:class:`FailureWatch` is shared by every chunk of a job (they are scored in threads), and sees answers and
failures in the order they happen, whatever chunk they belong to.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from .llm import BackendUnavailable, LLMError, RequestFailed, RequestRejected
from .records import Sample, Verdict

ITEM_FAILURES = (RequestRejected, RequestFailed)
"""What one request failing may be the item's fault; anything else (a bad key, a model not served, a server that
cannot be reached, a rate limit that does not lift, a Stop) stops the job at once."""

FAILURES_WITHOUT_AN_ANSWER = 64
"""Failed items with not one answer from the server in between (in the order they happen, across the chunks in
flight) that stop a job, at least twice the requests in flight: a window of failures in flight, then as many
again, all while no other item got through. The existing run of 16 items refused in a row stopped a file with 20
over-long items one after the other; those items' neighbours were being answered all along."""


def failure_kind(exc: Exception) -> str:
    """A short name of what happened to an item, for the summary's ``missing_by_reason``."""
    if isinstance(exc, RequestRejected):
        return f"refused by the server ({exc.status})"
    return str(getattr(exc, "kind", "") or type(exc).__name__)


def failure_reason(exc: Exception) -> str:
    """An item's ``missing_reason`` when its request kept failing: the server's own words where it gave some."""
    if isinstance(exc, RequestRejected):
        return f"the server refused the request ({exc.status}): {exc.reason}"
    return getattr(exc, "reason", "") or str(exc)


def failed_verdict(sample: Sample, aspect: str, exc: Exception) -> Verdict:
    """The missing verdict of an item whose request kept failing: no number, the server's reason."""
    metadata: dict[str, Any] = {"source": "failed", "failed": failure_kind(exc), "missing_reason": failure_reason(exc)}
    if isinstance(exc, RequestRejected):
        metadata["refused"] = exc.status
    return Verdict(sample_id=sample.id, aspect=aspect, score=math.nan, metadata=metadata)


def _stop_class(exc: Exception) -> type[LLMError]:
    """The server failing every request is :class:`BackendUnavailable` (a run pauses, to resume later); the server
    refusing every request is the settings' (:class:`LLMError`)."""
    return BackendUnavailable if isinstance(exc, RequestFailed) else LLMError


class FailureWatch:
    """Answers and failures of one scoring job, in the order they happen; :meth:`failed` raises the job's stop.

    ``timeout`` is the client's request timeout (None when the backend has none): a request that timed out while
    no other answer came for that long means the server stopped answering, not that the item is slow."""

    def __init__(self, *, in_flight: int = 1, timeout: float | None = None, where: str = "the server"):
        self.limit = max(FAILURES_WITHOUT_AN_ANSWER, 2 * max(1, in_flight))
        self.timeout, self.where = timeout, where
        self.answers = 0
        self.failures = 0
        self.failed_since_answer = 0
        self.timeouts_since_answer = 0
        self.last_answer = time.monotonic()
        self.stop: LLMError | None = None
        """The job's stop, once a failure has shown that the settings or the server are at fault."""
        self._lock = threading.Lock()

    def answered(self, n: int = 1) -> None:
        """``n`` answers came in (any item's, cached ones included: the settings work)."""
        if n <= 0:
            return
        with self._lock:
            self.answers += n
            self.failed_since_answer = self.timeouts_since_answer = 0
            self.last_answer = time.monotonic()

    def silent_for(self) -> float:
        """Seconds since the last answer (or since the job started)."""
        return time.monotonic() - self.last_answer

    def failed(self, exc: Exception) -> None:
        """Count one item's failure; raise :class:`LLMError` when it says the settings or the server are at fault."""
        timed_out = bool(getattr(exc, "timed_out", False))
        with self._lock:
            self.failures += 1
            self.failed_since_answer += 1
            self.timeouts_since_answer += timed_out
            since, timeouts = self.failed_since_answer, self.timeouts_since_answer
            silent = time.monotonic() - self.last_answer
        if self.stop is not None:
            raise self.stop
        # one slow item that times out while nothing else is in flight (the end of a file) is that item's; a second
        # request timing out with no answer in between, or the first when no request was ever answered, is the server
        if timed_out and self.timeout is not None and silent >= self.timeout and (timeouts >= 2 or not self.answers):
            self.stop = BackendUnavailable(f"{exc}, and no other request was answered in {silent:.0f} s: the server stopped "
                                 "answering. The items in flight were not written; run the same command again once "
                                 "it answers")
        elif since >= self.limit:
            said = "no item has been scored yet" if self.answers == 0 else "none answered in between"
            self.stop = _stop_class(exc)(f"{since} items failed one after the other and {said} (the last: "
                                 f"{failure_reason(exc)}); this looks like the settings or the server (model name, "
                                 "parameters, a server error on every request), not the items: none of them was "
                                 "written, run the same command again once fixed")
        if self.stop is not None:
            raise self.stop

    def check(self) -> None:
        """Raise the job's stop once one was found: the chunks still scoring send nothing more."""
        if self.stop is not None:
            raise self.stop

    def all_failed(self, last: Verdict, count: int) -> LLMError:
        """The stop of a job whose every item failed (a file shorter than :attr:`limit`)."""
        return (LLMError if "refused" in last.metadata else BackendUnavailable)(f"every item failed and none was answered ({count}; the last: "
                        f"{last.metadata.get('missing_reason', '')}); this looks like the settings or the server, "
                        "not the items: none of them was written, run the same command again once fixed")
