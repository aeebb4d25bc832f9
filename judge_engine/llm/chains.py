"""Chains of dependent calls through the one LLM path, each chain's next call sent as soon as its reply is in.

A chain is a generator: it yields a request, is sent the reply, yields the next request (which may depend on
that reply) and returns its result. Chains do not depend on each other, so while one waits for its first
reply another's second call can be in flight: the window stays full instead of emptying between stages
(issue 46: Active-Critic's overall-score call of an item goes out once that item's criterion scores are in,
while other items' criterion calls are still in flight). :meth:`judge_engine.llm.LLM.complete_chains` is the
entry point; this module holds the two ways it runs them (and :class:`Sent`, the record the client keeps of a
request in flight, which :func:`sliding` shares with ``complete_many``).
"""

from __future__ import annotations

import queue
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator, Sequence

from .base import Completion, GenerationParams, Message, Request, SendingStopped

if TYPE_CHECKING:
    from .client import LLM

Chain = Generator[Request, Completion, Any]
"""Yields a request, is sent its reply, yields the next one or returns the chain's result."""

STOPPED = "the requests not yet sent were dropped: the run was stopped"


@dataclass(slots=True)
class Sent:
    """A request sent through the client's threads, until :meth:`LLM._gather` takes its answer."""

    tag: Any
    """Whose request it is: ``complete_many``'s request index, or the cache key the chains wait on."""
    messages: list[Message]
    params: GenerationParams
    key: str | None
    """The key it was looked up under when that was its only possible key (else None: computed when cached)."""


def _step(chain: Chain, reply: Completion | None) -> tuple[Request | None, Any]:
    """Advance a chain: (its next request, None), or (None, its result) when it has returned."""
    try:
        return (chain.send(reply) if reply is not None else next(chain)), None
    except StopIteration as stop:
        return None, stop.value


def _twin(reply: Completion) -> Completion:
    """The answer of an identical request handed to a second chain: same text, counted as a free cache hit."""
    return Completion(**{**reply.__dict__, "cached": True, "latency_s": 0.0})


def in_rounds(llm: "LLM", chains: Sequence[Chain], *, expected: int,
              progress: Callable[[int, int], None] | None) -> list[Any]:
    """Every live chain's next request in one ``complete_many`` batch, round after round.

    For a backend that answers one call at a time or batches on its own: the requests reach it in the order
    they had when each stage was a batch of its own (one item's prompts after another's, reusing its KV cache).
    """
    results: list[Any] = [None] * len(chains)
    live: dict[int, Request] = {}
    for i, chain in enumerate(chains):
        request, results[i] = _step(chain, None)
        if request is not None:
            live[i] = request
    answered = 0
    while live:
        order = list(live)
        base = answered
        tick = (lambda d, t: progress(base + d, max(expected, base + t))) if progress else None
        replies = llm.complete_many([live[i] for i in order], progress=tick)
        answered += len(order)  # twins included, which complete_many's own count leaves out
        if progress:
            progress(answered, max(expected, answered))
        live = {}
        for i, reply in zip(order, replies):
            request, results[i] = _step(chains[i], reply)
            if request is not None:
                live[i] = request
    return results


def sliding(llm: "LLM", chains: Sequence[Chain], *, expected: int,
            progress: Callable[[int, int], None] | None) -> list[Any]:
    """The chains through the client's threads, a chain's next request submitted as soon as its reply is in.

    Each request is answered as :meth:`~judge_engine.llm.LLM.complete_many` answers it: from the cache when
    asked before (new requests looked up together), an identical request of two chains sent once, the answers
    cached in this thread as they arrive (all that came in together in one transaction), and the first failure
    raised once the calls in flight are answered and cached, no request sent after it. Chains are advanced in
    this thread only, so a chain's own code never runs in two threads.
    """
    results: list[Any] = [None] * len(chains)
    memo: dict[str, Completion] = {}  # key -> answer: an identical request of a later chain costs nothing
    waiting: dict[str, list[int]] = {}  # key of a request in flight -> the chains waiting for its answer
    ready: deque[tuple[int, Completion | None]] = deque((i, None) for i in range(len(chains)))
    finished: queue.SimpleQueue = queue.SimpleQueue()
    futures: dict[Future, Sent] = {}
    pool = llm._workers()
    error: BaseException | None = None
    delivered = 0

    def hand(i: int, reply: Completion) -> None:
        nonlocal delivered
        ready.append((i, reply))
        delivered += 1

    def ask(asks: list[tuple[int, Request]]) -> None:
        nonlocal error
        prepared = [(i, llm._prepared(r)) for i, r in asks]
        candidates = [llm._keys(r.messages, r.params) for _, r in prepared]
        new = [k for c in candidates if c[0] not in memo and c[0] not in waiting for k in c]
        stored = llm.cache.get_many(new) if llm.cache is not None and new else {}
        for (i, request), keys in zip(prepared, candidates):
            key = keys[0]
            if key in waiting:
                waiting[key].append(i)
                continue
            if key in memo:
                reply = _twin(memo[key])
            else:
                hit = next((stored[k] for k in keys if k in stored), None)
                if hit is None:
                    # the key looked up is the key to store under when it is the only one possible
                    sent = Sent(key, [dict(m) for m in request.messages], request.params,
                                key if len(keys) == 1 else None)
                    if not llm._submit(pool, finished, futures, sent):  # cancel_queued shut the pool
                        error = error or SendingStopped(STOPPED)
                        return
                    waiting[key] = [i]
                    continue
                reply = memo[key] = Completion.from_dict(hit, cached=True)
            llm.ledger.record(reply)
            hand(i, reply)

    try:
        while futures or (ready and error is None):
            reported = delivered
            while ready and error is None:
                asks = []
                while ready:
                    i, reply = ready.popleft()
                    request, results[i] = _step(chains[i], reply)
                    if request is not None:
                        asks.append((i, request))
                ask(asks)  # cache hits and twins come back into ready at once
            if not futures:
                break  # every chain has returned (or an error stopped them): reported below
            # no pause to let answers gather (complete_many's): each answer frees a chain whose next request
            # should go out at once
            answered, error = llm._gather(finished, futures, error, pause=False)
            for sent, completion in answered:
                key = sent.tag
                memo[key] = completion
                first, *twins = waiting.pop(key)
                hand(first, completion)
                for j in twins:
                    twin = _twin(completion)
                    llm.ledger.record(twin)
                    hand(j, twin)
            if progress and delivered != reported:
                progress(delivered, max(expected, delivered))
    except BaseException:  # Ctrl-C or a chain's own error: nothing queued may still go out
        for fut in futures:
            fut.cancel()
        raise
    if progress and delivered:
        progress(delivered, max(expected, delivered))
    if error is not None:
        raise error
    return results
