"""The client every method calls: persistent cache, cost ledger, bounded concurrency."""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol, Sequence

from . import rate
from .base import (Backend, Completion, GenerationParams, LLMConfig, LLMError, Message, RateLimited, Request,
                   RequestFailed, RequestRejected, SendingStopped, cache_key)
from .chains import STOPPED, Chain, Sent, in_rounds, sliding


COLLECT_S = 0.02
"""How long the thread collecting a batch's answers lets them gather while more than :data:`COLLECT_FROM` are
outstanding, before it caches all that arrived in one transaction (issue 48 item 4)."""
COLLECT_FROM = 32


class CallCache(Protocol):
    """Where completions persist (``judge_engine.store.CallCache`` is the real one)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...

    def put(self, key: str, *, backend: str, model: str, request: dict[str, Any],
            response: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class LedgerTotals:
    """What a run's LLM calls cost so far: the one record of the ledger's totals.

    :meth:`Ledger.snapshot` returns it, a run holds it (``RunRecord.ledger``,
    stored as :meth:`to_dict`) and a finished run's summary keeps the one of
    its end (``RunSummary.ledger``).
    """

    calls: int = 0
    """Requests actually sent to the backend."""
    cache_hits: int = 0
    """Requests answered from the persistent cache."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    """Summed backend latency of the calls made."""
    dollars: float = 0.0
    failures: int = 0
    """Requests that raised after the backend's retries."""
    truncated: int = 0
    """Requests whose judged text was cut to fit the model's context."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "LedgerTotals":
        """Totals as stored; a run that has made no call yet stores ``{}``, and an absent counter is 0."""
        return cls(**{k: v for k, v in (d or {}).items() if k in cls.__dataclass_fields__ and v is not None})


class Ledger:
    """Thread-safe running totals of what a run cost."""

    def __init__(self, *, price_prompt_per_1k: float = 0.0, price_completion_per_1k: float = 0.0,
                 start: LedgerTotals | None = None):
        self._lock = threading.Lock()
        # the running counters are a private mutable copy; callers only ever see frozen snapshots
        self._t = dict((start or LedgerTotals()).to_dict())
        self._pp, self._pc = price_prompt_per_1k, price_completion_per_1k

    def record(self, completion: Completion) -> None:
        with self._lock:
            if completion.cached:
                self._t["cache_hits"] += 1
                return
            self._t["calls"] += 1
            self._t["truncated"] += 1 if completion.truncated_chars else 0
            self._t["prompt_tokens"] += completion.prompt_tokens
            self._t["completion_tokens"] += completion.completion_tokens
            self._t["seconds"] += completion.latency_s
            self._t["dollars"] += (completion.prompt_tokens * self._pp
                                   + completion.completion_tokens * self._pc) / 1000.0

    def record_failure(self) -> None:
        with self._lock:
            self._t["failures"] += 1

    def snapshot(self) -> LedgerTotals:
        with self._lock:
            d = dict(self._t)
        d["seconds"] = round(d["seconds"], 3)
        d["dollars"] = round(d["dollars"], 6)
        return LedgerTotals(**d)


class LLM:
    """One call path for every method: ``complete`` and ``complete_many``.

    Parameters
    ----------
    config : LLMConfig
        Which backend and model; also sets the concurrency bound and prices.
    backend : Backend
        The uncached generator (see :func:`judge_engine.llm.make_backend`).
    cache : CallCache or None
        Persistent cache; with it, no identical request is ever paid for twice.
    ledger : Ledger or None
        Running cost totals; a fresh one is made when omitted.
    """

    def __init__(self, config: LLMConfig, backend: Backend, *, cache: CallCache | None = None,
                 ledger: Ledger | None = None):
        self.config = config
        self.backend = backend
        self.cache = cache
        self.ledger = ledger or Ledger(price_prompt_per_1k=config.price_prompt_per_1k,
                                       price_completion_per_1k=config.price_completion_per_1k)
        self.governor = rate.RateGovernor(config.concurrency)
        """Calls in flight, fewer while the server answers 429 (:mod:`judge_engine.llm.rate`)."""
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._fatal: tuple[int, Exception] = (0, SendingStopped(STOPPED))
        """How many failures of every request (a 401, a 404, no connection) this client has seen, and the last:
        the batches sending when one came send nothing more (:meth:`_send_unless`); later batches send as usual."""
        self._stopped = threading.Event()
        """Set by :meth:`cancel_queued`, cleared by :meth:`resume_sending`: while set, nothing is sent."""

    def _workers(self) -> ThreadPoolExecutor:
        """The threads that send calls, made once and kept: a scoring job's chunks (and three chunks at once)
        share them instead of starting hundreds of threads per chunk. One for a backend that serialises its
        calls, so consecutive prompts sharing a prefix reach it in order and reuse its KV cache."""
        with self._pool_lock:
            if self._stopped.is_set():
                raise SendingStopped(STOPPED)
            if self._pool is None:
                limit = 1 if getattr(self.backend, "serialises_calls", False) else self.config.concurrency
                self._pool = ThreadPoolExecutor(max_workers=max(1, limit), thread_name_prefix="llm")
            return self._pool

    def cancel_queued(self) -> None:
        """Drop every request queued and not yet sent, and send none asked for until :meth:`resume_sending`
        (those in flight finish and are cached as usual).

        For an interrupt that the threads sending the calls do not see: a run's scoring waits in other threads
        (several chunks at once), and a Stop must not leave them sending the rest of their chunks, nor a chunk
        that reaches the client only after the stop its first request. Whatever is asked for while stopped
        raises the :class:`LLMError` the dropped requests raise: not answered, not cached, not a failure."""
        with self._pool_lock:
            self._stopped.set()
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def resume_sending(self) -> None:
        """End the stop of :meth:`cancel_queued`, once every thread of the stopped work is done (score_stream
        calls it after joining its chunks): a resumed or later run on this client sends as usual."""
        self._stopped.clear()

    def _refuse_if_stopped(self) -> None:
        if self._stopped.is_set():
            raise SendingStopped(STOPPED)

    @property
    def supports_logprobs(self) -> bool:
        return self.backend.supports_logprobs

    def sampled(self, *, temperature: float, seed: int) -> "LLM":
        """This client with sampling on at ``temperature`` and ``seed`` (see :class:`SampledLLM`)."""
        return SampledLLM(self, temperature=temperature, seed=seed)

    def key(self, messages: Sequence[Message], params: GenerationParams) -> str:
        """The cache key of a request as the backend would answer it now (see :meth:`_keys`)."""
        return self._keys(messages, params)[0]

    def _modes(self, params: GenerationParams) -> tuple[str, ...]:
        """How a request's schema would be honoured: the backend's mode, or while ``auto`` is still
        learning what the server accepts, every mode it may turn out to be (in the order it tries them)."""
        if not params.json_schema:
            return ("",)
        mode = getattr(self.backend, "effective_structured_mode", None)
        if mode:
            return (mode,)
        return tuple(getattr(self.backend, "structured_candidates", ()) or ()) or ("",)

    def _keys(self, messages: Sequence[Message], params: GenerationParams) -> list[str]:
        """The keys a request may be cached under, most likely first (one unless ``auto`` is unresolved)."""
        return [cache_key(self.backend.name, self.backend.model_id, list(messages), params, mode)
                for mode in self._modes(params)]

    def _announced(self, params: GenerationParams) -> str:
        """The mode the backend announces for a request before it is sent ("" when it does not know yet)."""
        return (getattr(self.backend, "effective_structured_mode", None) or "") if params.json_schema else ""

    def _lookup(self, keys: list[str]) -> dict[str, Any] | None:
        if self.cache is None:
            return None
        if len(keys) == 1:
            return self.cache.get(keys[0])
        found = self.cache.get_many(keys)
        return next((found[k] for k in keys if k in found), None)

    def _store(self, messages: list[Message], params: GenerationParams, completion: Completion,
               announced: str) -> None:
        """Cache a fresh completion under the mode announced for it, else the mode it was answered with.

        Keeping the announced mode (even when one request fell back to free text, e.g. a schema the
        converter cannot handle) means the next lookup of the same request finds it.
        """
        self._store_many([(messages, params, completion, announced, None)])

    def _store_many(self, answers: Sequence[tuple[list[Message], GenerationParams, Completion, str, str | None]]
                    ) -> None:
        """:meth:`_store` for several answers, in one write transaction; an answer's key is computed unless given."""
        if self.cache is None or not answers:
            return
        rows = []
        for messages, params, completion, announced, key in answers:
            mode = announced or (completion.structured_mode if params.json_schema else "")
            request: dict[str, Any] = {"messages": messages, "params": params.cache_fields()}
            if params.json_schema and mode:
                request["structured"] = mode
            rows.append((key or cache_key(self.backend.name, self.backend.model_id, messages, params, mode), request,
                         completion.to_dict()))
        self.cache.put_many(rows, backend=self.backend.name, model=self.backend.model_id)

    def is_cached(self, messages: Sequence[Message], params: GenerationParams | None = None) -> bool:
        return self._lookup(self._keys(messages, params or GenerationParams())) is not None

    def complete(self, messages: Sequence[Message], params: GenerationParams | None = None,
                 **overrides: Any) -> Completion:
        """Answer one chat request, from the cache when it was asked before."""
        params = (params or GenerationParams()).with_(**overrides) if overrides else (params or GenerationParams())
        messages = [dict(m) for m in messages]
        hit = self._lookup(self._keys(messages, params))
        if hit is not None:
            completion = Completion.from_dict(hit, cached=True)
            self.ledger.record(completion)
            return completion
        return self._fresh(messages, params)

    def _fresh(self, messages: list[Message], params: GenerationParams) -> Completion:
        """Send a request the cache was just asked for and did not have; cache and count its answer."""
        announced = self._announced(params)
        completion = self._generate(messages, params)
        self._store(messages, params, completion, announced)
        self.ledger.record(completion)
        return completion

    def _generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        """One uncached call in a slot of the rate governor; while the server answers 429, the call is sent
        again after a growing pause with fewer calls in flight, for ``config.rate_limit_patience`` seconds."""
        waited, pause = 0.0, rate.FIRST_PAUSE_S
        while True:
            with self.governor.slot():
                # checked here too, not only in _workers: a request queued before the stop may be taken by a
                # thread after it, and a call waiting for a slot or a 429 pause is not in flight yet
                self._refuse_if_stopped()
                try:
                    completion = self.backend.generate(messages, params)
                except RateLimited as exc:
                    self.governor.rate_limited()
                    if waited + pause > self.config.rate_limit_patience:
                        self.ledger.record_failure()
                        raise RateLimited(f"{exc}, for {waited:.0f} s with as few as {self.governor.limit} "
                                          "request(s) in flight; the run pauses: resume it later") from exc
                except Exception:
                    self.ledger.record_failure()
                    raise
                else:
                    self.governor.answered()
                    return completion
            time.sleep(pause)
            waited += pause
            pause = min(pause * 2, rate.MAX_PAUSE_S)

    def complete_many(self, requests: Sequence[Request], *,
                      progress: Callable[[int, int], None] | None = None) -> list[Completion]:
        """Answer many requests with at most ``config.concurrency`` in flight.

        Cached requests are answered first without touching the backend, and
        with a cache an identical request repeated in the batch is sent once
        (its copies count as cache hits). Each finished call is cached as it
        completes, so if one request fails the error is raised once the calls
        in flight are done and a rerun repeats none of the finished ones. A
        backend with ``generate_many`` (vLLM offline) gets the uncached
        requests as batches of ``max_batch`` in one engine call each instead.
        """
        results: list[Completion | None] = [None] * len(requests)
        candidates = [self._keys(req.messages, req.params) for req in requests]
        keys = [c[0] for c in candidates]
        first_of: dict[str, int] = {}  # identical requests in one batch are sent once
        todo: list[int] = []
        done = 0
        wanted = [k for c in candidates for k in c]
        stored = self.cache.get_many(wanted) if self.cache is not None else {}  # one query per 500 keys
        for i, key in enumerate(keys):
            if key in first_of:
                continue
            first_of[key] = i
            hit = next((stored[k] for k in candidates[i] if k in stored), None)
            if hit is not None:
                results[i] = Completion.from_dict(hit, cached=True)
                self.ledger.record(results[i])
                done += 1
            else:
                todo.append(i)
        if todo:
            if progress and done:
                progress(done, len(first_of))
            if callable(getattr(self.backend, "generate_many", None)):
                self._batched(requests, todo, results, done, len(first_of), progress)
            else:
                # a request whose only possible key is known now is cached under it (no second hash of its text)
                known = {i: candidates[i][0] for i in todo if len(candidates[i]) == 1}
                self._threaded(requests, todo, results, done, len(first_of), progress, known)
        elif progress:
            progress(done, len(first_of))
        for i, key in enumerate(keys):
            if results[i] is None:  # a duplicate of an earlier request: same answer, no cost
                twin = results[first_of[key]]
                results[i] = Completion(**{**twin.__dict__, "cached": True, "latency_s": 0.0})
                self.ledger.record(results[i])
        return [r for r in results if r is not None]

    def complete_chains(self, chains: Sequence[Chain], *, calls_each: int = 1,
                        progress: Callable[[int, int], None] | None = None) -> list[Any]:
        """Run chains of dependent calls (generators, :data:`judge_engine.llm.chains.Chain`); each chain's result.

        A chain's next request goes out as soon as its reply is in, while other chains' calls are in flight, at
        most ``config.concurrency`` at a time (:func:`judge_engine.llm.chains.sliding`). A backend that answers
        one call at a time or batches on its own gets every live chain's next request as one
        :meth:`complete_many` batch, round after round (:func:`judge_engine.llm.chains.in_rounds`): the order
        the stages had as batches of their own. Either way each chain gets the same requests and replies.
        ``progress`` gets (replies handed to chains, at least ``len(chains) * calls_each``).
        """
        chains = list(chains)
        expected = len(chains) * max(1, calls_each)
        one_at_a_time = (self.config.concurrency <= 1 or getattr(self.backend, "serialises_calls", False)
                         or callable(getattr(self.backend, "generate_many", None)))
        run = in_rounds if one_at_a_time else sliding
        return run(self, chains, expected=expected, progress=progress)

    def _prepared(self, request: Request) -> Request:
        """A request as this client sends it (:class:`SampledLLM` adds its sampling)."""
        return request

    def _threaded(self, requests: Sequence[Request], todo: list[int], results: list[Completion | None],
                  done: int, total: int, progress: Callable[[int, int], None] | None,
                  known: dict[int, str] | None = None) -> None:
        """Send ``todo`` through :meth:`complete`, at most ``config.concurrency`` at a time."""
        # complete_many has just looked every request up, so the workers go straight to the backend, and this
        # thread caches the answers as they come in (:meth:`_gather`)
        error: BaseException | None = None
        finished: queue.SimpleQueue = queue.SimpleQueue()
        pool = self._workers()
        futures: dict[Future, Sent] = {}
        known = known or {}
        failed, since = threading.Event(), self._fatal[0]
        try:
            for i in todo:
                sent = Sent(i, [dict(m) for m in requests[i].messages], requests[i].params, known.get(i))
                if not self._submit(pool, finished, futures, sent, (failed, since)):  # cancel_queued shut the pool
                    error = SendingStopped(STOPPED)
                    break
            while futures:
                answered, error = self._gather(finished, futures, error, pause=True)
                for sent, completion in answered:
                    results[sent.tag] = completion
                done += len(answered)
                if progress and answered:
                    progress(done, total)
        except BaseException:  # Ctrl-C here: the kept threads must not go on sending what has not started
            for fut in futures:
                fut.cancel()
            raise
        if error is not None:
            raise error

    def _send(self, messages: list[Message], params: GenerationParams) -> tuple[Completion, str]:
        """What a worker thread runs: one uncached call, and the mode announced for it before it was sent."""
        announced = self._announced(params)
        return self._generate(messages, params), announced

    def _send_unless(self, failed: threading.Event, since: int, messages: list[Message], params: GenerationParams
                     ) -> tuple[Completion, str]:
        """:meth:`_send`, unless a request of the same batch has failed, or any request failed in a way that fails
        every request (a bad key, a model not served, a server not reached) since this batch began: the batch
        raises that failure, so what was queued behind it is not sent. The gathering thread cancels those too, but
        only once it wakes, and only its own batch's: a server answering every request with a 401 had 150 more sent
        by three chunks in flight before the job stopped (issue 64)."""
        if failed.is_set():
            raise SendingStopped(STOPPED)
        with self._pool_lock:
            if self._fatal[0] != since:
                raise self._fatal[1]
        try:
            return self._send(messages, params)
        except Exception as exc:
            failed.set()
            if isinstance(exc, LLMError) and not isinstance(exc, (RequestRejected, RequestFailed, RateLimited,
                                                                  SendingStopped)):
                with self._pool_lock:
                    self._fatal = (self._fatal[0] + 1, exc)
            raise

    def _submit(self, pool: ThreadPoolExecutor, finished: queue.SimpleQueue, futures: dict[Future, Sent],
                sent: Sent, batch: tuple[threading.Event, int] | None = None) -> bool:
        """Send a request through ``pool``, noted in ``futures`` and put on ``finished`` once answered (or failed);
        False when :meth:`cancel_queued` has shut the pool (what was sent before is still gathered and cached)."""
        try:
            fut = pool.submit(self._send_unless, *batch, sent.messages, sent.params) if batch is not None else \
                pool.submit(self._send, sent.messages, sent.params)
        except RuntimeError:
            return False
        futures[fut] = sent
        # queued by its done callback, each finished future is handled once, in O(1)
        fut.add_done_callback(finished.put)
        return True

    def _gather(self, finished: queue.SimpleQueue, futures: dict[Future, Sent], error: BaseException | None, *,
                pause: bool) -> tuple[list[tuple[Sent, Completion]], BaseException | None]:
        """Wait for the next answers of requests sent by :meth:`_submit`, take them out of ``futures``, and cache
        and count those answered in one transaction; returns them, in the order they came, and the error to raise.

        The one place the answers of calls sent through the client's threads are gathered (``complete_many``
        and :func:`judge_engine.llm.chains.sliding`), in the thread that waits: all that arrived since its last
        write in one transaction, on one database connection (a pool's threads each opened their own and queued
        for the write lock). The first failure is the error and cancels what has not started (answers in flight
        are still gathered); a request dropped by :meth:`cancel_queued` makes the run's stop the error.
        """
        batch = [finished.get()]
        if pause and len(futures) > COLLECT_FROM:
            # many answers still to come: let some gather, then cache them in one transaction. Woken per answer,
            # this thread wrote 1.7 answers a transaction at 256 in flight (1,753 transactions for 3,000 items),
            # each a wake and three GIL hand-offs among hundreds of sending threads. The pause is not waited at
            # the end: the last COLLECT_FROM answers are collected as they come.
            time.sleep(COLLECT_S)
        while True:
            try:
                batch.append(finished.get_nowait())
            except queue.Empty:
                break
        answered: list[tuple[Sent, Completion]] = []
        rows = []
        for fut in batch:
            sent = futures.pop(fut)
            if fut.cancelled():  # by an error before it, or dropped by cancel_queued
                error = error or SendingStopped(STOPPED)
                continue
            if fut.exception() is not None:
                if error is None:  # the first failure stops what has not started; answers in flight are kept
                    error = fut.exception()
                    for other in futures:
                        other.cancel()
                continue
            completion, announced = fut.result()
            # the key looked up is the key to store under while the mode announced has not changed
            key = sent.key if announced or not sent.params.json_schema else None
            rows.append((sent.messages, sent.params, completion, announced, key))
            answered.append((sent, completion))
        self._store_many(rows)
        for _, completion in answered:
            self.ledger.record(completion)
        return answered, error

    def _batched(self, requests: Sequence[Request], todo: list[int], results: list[Completion | None],
                 done: int, total: int, progress: Callable[[int, int], None] | None) -> None:
        """Send ``todo`` through the backend's ``generate_many``, ``max_batch`` requests per engine call.

        An engine that batches on its own (vLLM offline) decodes a whole
        batch at once. Each chunk's completions are cached and counted as
        soon as it returns, so a failing chunk loses only itself; its
        requests count as failures and the error is raised.
        """
        size = max(1, int(getattr(self.backend, "max_batch", 0) or self.config.concurrency))
        for start in range(0, len(todo), size):
            chunk = todo[start:start + size]
            self._refuse_if_stopped()
            pairs = [([dict(m) for m in requests[i].messages], requests[i].params) for i in chunk]
            announced = [self._announced(params) for _, params in pairs]
            try:
                outs = list(self.backend.generate_many(pairs))
                if len(outs) != len(pairs):
                    raise RuntimeError(f"the {self.backend.name} backend returned {len(outs)} completions "
                                       f"for {len(pairs)} requests")
            except Exception:
                for _ in chunk:
                    self.ledger.record_failure()
                raise
            self._store_many([(messages, params, completion, mode, None)
                              for (messages, params), mode, completion in zip(pairs, announced, outs)])
            for i, completion in zip(chunk, outs):
                self.ledger.record(completion)
                results[i] = completion
            done += len(chunk)
            if progress:
                progress(done, total)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


class SampledLLM(LLM):
    """The same call path (cache, ledger, concurrency) with sampling turned on, for stability probes.

    Every request goes out with ``seed`` and, where the method asked for greedy decoding, at ``temperature``
    (a method that already samples keeps its own temperature). The seed is also the request's
    ``sample_index``, so each draw has its own cache key: a probe repeated with the same seeds costs nothing,
    an interrupted one resumes where it stopped, and the judge's own greedy replies are never overwritten.
    """

    def __init__(self, llm: LLM, *, temperature: float, seed: int):
        super().__init__(llm.config, llm.backend, cache=llm.cache, ledger=llm.ledger)
        self.governor = llm.governor  # one pace per server, whatever the draw
        self._stopped = llm._stopped  # a stop of the client stops its draws
        self.temperature, self.seed = float(temperature), int(seed)

    def _sampled(self, params: GenerationParams | None) -> GenerationParams:
        params = params or GenerationParams()
        return params.with_(temperature=params.temperature or self.temperature, seed=self.seed,
                            sample_index=self.seed)

    def key(self, messages: Sequence[Message], params: GenerationParams) -> str:
        return super().key(messages, self._sampled(params))

    def is_cached(self, messages: Sequence[Message], params: GenerationParams | None = None) -> bool:
        return super().is_cached(messages, self._sampled(params))

    def complete(self, messages: Sequence[Message], params: GenerationParams | None = None,
                 **overrides: Any) -> Completion:
        params = (params or GenerationParams()).with_(**overrides) if overrides else params
        return super().complete(messages, self._sampled(params))

    def _prepared(self, request: Request) -> Request:
        return Request(request.messages, self._sampled(request.params))

    def complete_many(self, requests: Sequence[Request], *,
                      progress: Callable[[int, int], None] | None = None) -> list[Completion]:
        return super().complete_many([Request(r.messages, self._sampled(r.params)) for r in requests],
                                     progress=progress)
