"""The one LLM call path (judge_engine.llm.LLM) with the scripted fake backend: cache, ledger, concurrency."""

from __future__ import annotations

import threading
import time

import pytest

from judge_engine.llm import GenerationParams, LLM, LLMConfig, LLMError, Request, cache_key, make_backend, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.store import CallCache, Store
from judge_engine.structured import as_param
from tests.scripted import fake_llm

MSGS = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Rate this summary."}]


def echo(messages, params):
    return f"{messages[-1]['content']}|t={params.temperature}|s={params.sample_index}"


def llm_with(tmp_path, responder=echo, *, db="cache.db", **config):
    """:func:`tests.scripted.fake_llm` with its cache in a fresh Store on ``tmp_path / db`` (reopened by name)."""
    return fake_llm(responder, store=Store(tmp_path / db), backend="fake", **config)


def user(text):
    return ({"role": "user", "content": text},)


# --------------------------------------------------------------------------- cache


def test_identical_request_is_answered_from_the_cache(tmp_path):
    llm, backend = llm_with(tmp_path)
    first = llm.complete(MSGS, GenerationParams(max_tokens=8))
    second = llm.complete(MSGS, GenerationParams(max_tokens=8))
    assert len(backend.calls) == 1
    assert not first.cached and second.cached
    assert second.texts == first.texts and second.latency_s == first.latency_s
    assert second.prompt_tokens == first.prompt_tokens and second.completion_tokens == first.completion_tokens
    snap = llm.ledger.snapshot()
    assert snap.calls == 1 and snap.cache_hits == 1
    assert llm.is_cached(MSGS, GenerationParams(max_tokens=8))
    # keyword overrides build the same params, so they hit too
    assert llm.complete(MSGS, max_tokens=8).cached
    assert len(backend.calls) == 1


@pytest.mark.parametrize("change", [
    dict(max_tokens=9), dict(temperature=0.5), dict(n=2), dict(stop=("\n",)), dict(seed=1), dict(top_logprobs=5),
])
def test_a_different_parameter_misses(tmp_path, change):
    llm, backend = llm_with(tmp_path)
    base = GenerationParams(max_tokens=8)
    llm.complete(MSGS, base)
    out = llm.complete(MSGS, base.with_(**change))
    assert not out.cached
    assert len(backend.calls) == 2
    assert llm.ledger.snapshot().cache_hits == 0


@pytest.mark.parametrize("messages", [
    [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Rate this summary!"}],
    [{"role": "user", "content": "Rate this summary."}],
    [{"role": "user", "content": "You are a judge."}, {"role": "user", "content": "Rate this summary."}],
])
def test_different_messages_miss(tmp_path, messages):
    llm, backend = llm_with(tmp_path)
    llm.complete(MSGS)
    assert not llm.complete(messages).cached
    assert len(backend.calls) == 2


def test_sample_index_separates_stochastic_draws_only(tmp_path):
    llm, backend = llm_with(tmp_path)
    hot = GenerationParams(temperature=0.8, max_tokens=8)
    a = llm.complete(MSGS, hot.with_(sample_index=0))
    b = llm.complete(MSGS, hot.with_(sample_index=1))
    assert not a.cached and not b.cached and a.text != b.text
    assert llm.complete(MSGS, hot.with_(sample_index=1)).cached  # the same draw again is cached
    assert len(backend.calls) == 2

    greedy = GenerationParams(temperature=0.0, max_tokens=8)
    g0 = llm.complete(MSGS, greedy.with_(sample_index=0))
    g7 = llm.complete(MSGS, greedy.with_(sample_index=7))
    assert g7.cached and g7.texts == g0.texts
    assert len(backend.calls) == 3
    # greedy with n>1 still keeps the index (the key rule is "greedy AND single")
    assert llm.key(MSGS, greedy.with_(n=2, sample_index=0)) != llm.key(MSGS, greedy.with_(n=2, sample_index=1))


def test_the_cache_persists_in_the_store_file(tmp_path):
    llm, backend = llm_with(tmp_path)
    first = llm.complete(MSGS, GenerationParams(max_tokens=8))
    llm.cache.store.close()

    again, backend2 = llm_with(tmp_path)  # a new Store, backend and LLM on the same file
    out = again.complete(MSGS, GenerationParams(max_tokens=8))
    assert out.cached and out.texts == first.texts
    assert backend2.calls == []
    assert again.ledger.snapshot().calls == 0 and again.ledger.snapshot().cache_hits == 1
    assert len(CallCache(Store(tmp_path / "cache.db"))) == 1

    elsewhere, backend3 = llm_with(tmp_path, db="other.db")  # a different file knows nothing
    assert not elsewhere.complete(MSGS, GenerationParams(max_tokens=8)).cached
    assert len(backend3.calls) == 1


def test_without_a_store_nothing_is_cached(tmp_path):
    backend = FakeBackend(echo)
    llm = make_llm(LLMConfig(backend="fake"), backend=backend)
    llm.complete(MSGS)
    llm.complete(MSGS)
    assert len(backend.calls) == 2
    assert not llm.is_cached(MSGS)


# --------------------------------------------------------------------------- complete_many


class ConcurrencyProbe:
    """A responder that records the most calls it ever saw running at once."""

    def __init__(self, sleep=0.03, fail_on=None, fail_when_active=1):
        self.lock = threading.Lock()
        self.active = self.max_active = self.finished = 0
        self.sleep, self.fail_on, self.fail_when_active = sleep, fail_on, fail_when_active

    def __call__(self, messages, params):
        text = messages[-1]["content"]
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if text == self.fail_on:
                deadline = time.monotonic() + 5  # fail once the others are in flight (no race with their start)
                while self.active < self.fail_when_active and time.monotonic() < deadline:
                    time.sleep(0.002)
                raise RuntimeError(f"scripted failure on {text}")
            time.sleep(self.sleep)
            return f"answer to {text}"
        finally:
            with self.lock:
                self.active -= 1
                if text != self.fail_on:
                    self.finished += 1


@pytest.mark.parametrize("concurrency", [1, 2, 4])
def test_complete_many_keeps_order_and_bounds_concurrency(tmp_path, concurrency):
    probe = ConcurrencyProbe()
    llm, backend = llm_with(tmp_path, probe, concurrency=concurrency)
    requests = [Request(user(f"q{i}"), GenerationParams(max_tokens=4)) for i in range(12)]
    seen = []
    out = llm.complete_many(requests, progress=lambda done, total: seen.append((done, total)))
    assert [c.text for c in out] == [f"answer to q{i}" for i in range(12)]
    assert len(backend.calls) == 12
    assert 1 <= probe.max_active <= concurrency
    if concurrency > 1:
        assert probe.max_active > 1
    assert seen and seen[-1] == (12, 12)
    assert all(total == 12 for _, total in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert llm.ledger.snapshot().calls == 12


def test_complete_many_answers_cached_requests_first_and_in_place(tmp_path):
    probe = ConcurrencyProbe(sleep=0.0)
    llm, backend = llm_with(tmp_path, probe)
    requests = [Request(user(f"q{i}")) for i in range(6)]
    llm.complete_many(requests[::2])  # q0, q2, q4 cached
    seen = []
    out = llm.complete_many(requests, progress=lambda d, t: seen.append((d, t)))
    assert [c.text for c in out] == [f"answer to q{i}" for i in range(6)]
    assert [c.cached for c in out] == [True, False, True, False, True, False]
    assert len(backend.calls) == 6
    assert seen[0] == (3, 6) and seen[-1] == (6, 6)
    snap = llm.ledger.snapshot()
    assert snap.calls == 6 and snap.cache_hits == 3


def test_complete_many_pays_once_for_duplicates_in_one_batch(tmp_path):
    llm, backend = llm_with(tmp_path, ConcurrencyProbe(sleep=0.01), concurrency=4)
    requests = [Request(user("same")), Request(user("other")), Request(user("same")), Request(user("same"))]
    out = llm.complete_many(requests)
    assert [c.text for c in out] == ["answer to same", "answer to other", "answer to same", "answer to same"]
    assert len(backend.calls) == 2
    assert [c.cached for c in out] == [False, False, True, True]
    snap = llm.ledger.snapshot()
    assert snap.calls == 2 and snap.cache_hits == 2


def test_duplicates_are_sent_once_even_without_a_store(tmp_path):
    backend = FakeBackend(echo)
    llm = make_llm(LLMConfig(backend="fake"), backend=backend)
    out = llm.complete_many([Request(user("same")), Request(user("same"))])
    assert [c.text for c in out] == ["same|t=0.0|s=0"] * 2 and len(backend.calls) == 1
    assert [c.cached for c in out] == [False, True]


def test_complete_many_empty(tmp_path):
    llm, backend = llm_with(tmp_path)
    assert llm.complete_many([]) == []
    assert backend.calls == []


def test_a_failure_is_raised_after_the_others_finish_and_they_stay_cached(tmp_path):
    probe = ConcurrencyProbe(sleep=0.1, fail_on="q2", fail_when_active=4)
    llm, backend = llm_with(tmp_path, probe, concurrency=4)
    requests = [Request(user(f"q{i}"), GenerationParams(max_tokens=4)) for i in range(4)]
    with pytest.raises(RuntimeError, match="scripted failure on q2"):
        llm.complete_many(requests)
    assert probe.finished == 3 and probe.active == 0  # the calls in flight ran to the end first
    snap = llm.ledger.snapshot()
    assert snap.calls == 3 and snap.failures == 1

    fixed = FakeBackend(lambda m, p: f"answer to {m[-1]['content']}")
    rerun = LLM(llm.config, fixed, cache=llm.cache)
    out = rerun.complete_many(requests)
    assert [c.text for c in out] == [f"answer to q{i}" for i in range(4)]
    assert [m[-1]["content"] for m, _ in fixed.calls] == ["q2"]
    assert [c.cached for c in out] == [True, True, False, True]


def test_after_a_failure_a_rerun_sends_only_what_did_not_finish(tmp_path):
    # more requests than workers: calls not yet started when one fails are not sent
    probe = ConcurrencyProbe(sleep=0.02, fail_on="q3", fail_when_active=2)
    llm, backend = llm_with(tmp_path, probe, concurrency=2)
    requests = [Request(user(f"q{i}")) for i in range(10)]
    with pytest.raises(RuntimeError, match="q3"):
        llm.complete_many(requests)
    assert probe.active == 0
    finished = probe.finished
    assert finished == llm.ledger.snapshot().calls >= 1

    fixed = FakeBackend(lambda m, p: f"answer to {m[-1]['content']}")
    out = LLM(llm.config, fixed, cache=llm.cache).complete_many(requests)
    assert [c.text for c in out] == [f"answer to q{i}" for i in range(10)]
    assert len(fixed.calls) == 10 - finished
    assert "q3" in [m[-1]["content"] for m, _ in fixed.calls]


def _two_step_chain(base):
    reply = yield Request(user(f"{base} 1"))
    reply = yield Request(user(f"{base} 2 after {reply.text}"))
    return reply.text


@pytest.mark.parametrize("concurrency", [2, 1])
def test_a_request_asked_for_after_a_stop_is_not_sent_until_sending_resumes(tmp_path, concurrency):
    # a scoring chunk's thread that reached the client only after cancel_queued got a fresh pool from
    # LLM._workers and sent its first request (the Stop test of test_runs_execute sent 6 calls, 5 allowed)
    llm, backend = llm_with(tmp_path, concurrency=concurrency)
    llm.complete_many([Request(user("before"))])  # the client's threads exist, as in a run
    llm.cancel_queued()
    refused: list[str] = []

    def late_chunk():
        for ask in (lambda: llm.complete_many([Request(user("late")), Request(user("late too"))]),
                    lambda: llm.complete(user("late single")),
                    lambda: llm.complete_chains([_two_step_chain("late chain")])):
            try:
                ask()
            except LLMError as exc:
                refused.append(str(exc))

    thread = threading.Thread(target=late_chunk)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert [m[-1]["content"] for m, _ in backend.calls] == ["before"], "nothing asked for after the stop is sent"
    assert len(refused) == 3 and all("the run was stopped" in r for r in refused)
    # not done: nothing cached, no failure counted, so a resume sends them
    assert not llm.is_cached(user("late")) and not llm.is_cached(user("late single"))
    assert llm.ledger.snapshot().failures == 0 and llm.ledger.snapshot().calls == 1

    llm.resume_sending()  # the stopped work's threads are done: a resumed run on this client sends as usual
    assert [c.text for c in llm.complete_many([Request(user("late")), Request(user("before"))])] == \
        [echo(user("late"), GenerationParams()), echo(user("before"), GenerationParams())]
    assert llm.complete_chains([_two_step_chain("late chain")])[0].startswith("late chain 2 after late chain 1")
    assert [m[-1]["content"] for m, _ in backend.calls][:2] == ["before", "late"]
    assert len(backend.calls) == 4


# --------------------------------------------------------------------------- ledger and key


def test_dollars_come_from_the_configured_prices(tmp_path):
    llm, backend = llm_with(tmp_path, lambda m, p: "x" * 40, price_prompt_per_1k=2.0,
                            price_completion_per_1k=6.0)
    out = llm.complete(MSGS)
    # the fake counts len(content) // 4 tokens per message and per reply
    prompt_tokens = sum(len(m["content"]) // 4 for m in MSGS)
    assert out.prompt_tokens == prompt_tokens and out.completion_tokens == 10
    expected = (prompt_tokens * 2.0 + 10 * 6.0) / 1000
    snap = llm.ledger.snapshot()
    assert snap.dollars == pytest.approx(expected, abs=1e-6)
    assert snap.prompt_tokens == prompt_tokens and snap.completion_tokens == 10
    assert snap.seconds == pytest.approx(0.001, abs=1e-3)

    llm.complete(MSGS)  # a cache hit is free
    assert llm.ledger.snapshot().dollars == pytest.approx(expected, abs=1e-6)
    llm.complete(MSGS, max_tokens=3)  # a new call adds its own price
    assert llm.ledger.snapshot().dollars == pytest.approx(2 * expected, abs=1e-6)

    free, _ = llm_with(tmp_path, db="free.db")
    free.complete(MSGS)
    assert free.ledger.snapshot().dollars == 0.0


def test_cache_key_ignores_timeout_retries_and_concurrency(tmp_path):
    backend = FakeBackend(echo)
    params = GenerationParams(temperature=0.3, max_tokens=16)
    quick = LLM(LLMConfig(backend="fake", timeout=1.0, max_retries=0, concurrency=1), backend)
    patient = LLM(LLMConfig(backend="fake", timeout=600.0, max_retries=9, concurrency=32), backend)
    assert quick.key(MSGS, params) == patient.key(MSGS, params) == cache_key("fake", "fake", MSGS, params)

    # a rerun with other timeouts is still served from the same cache
    cache = CallCache(Store(tmp_path / "cache.db"))
    LLM(quick.config, backend, cache=cache).complete(MSGS, params)
    assert LLM(patient.config, backend, cache=cache).complete(MSGS, params).cached
    assert len(backend.calls) == 1

    # the real openai backend's identity does not carry them either (no request is sent here)
    a = make_backend(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", timeout=1,
                               max_retries=0, concurrency=1), api_key="k1")
    b = make_backend(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", timeout=300,
                               max_retries=7, concurrency=16), api_key="k2")
    assert a.model_id == b.model_id
    assert cache_key(a.name, a.model_id, MSGS, params) == cache_key(b.name, b.model_id, MSGS, params)

    # but the model and the backend are part of it
    assert cache_key("fake", "other", MSGS, params) != cache_key("fake", "fake", MSGS, params)
    assert cache_key("openai", "fake", MSGS, params) != cache_key("fake", "fake", MSGS, params)


def test_the_ledger_hands_out_frozen_totals_and_resumes_from_stored_ones():
    import dataclasses

    from judge_engine.llm import Completion, Ledger, LedgerTotals

    stored = LedgerTotals.from_dict({"calls": 4, "cache_hits": 1, "dollars": 0.5, "unknown_later_field": 1})
    ledger = Ledger(price_prompt_per_1k=1.0, start=stored)
    ledger.record(Completion(texts=("[[3]]",), prompt_tokens=1000, completion_tokens=0, latency_s=0.25))
    ledger.record_failure()
    snap = ledger.snapshot()
    assert (snap.calls, snap.cache_hits, snap.failures, snap.prompt_tokens) == (5, 1, 1, 1000)
    assert snap.dollars == pytest.approx(1.5) and snap.seconds == pytest.approx(0.25)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.calls = 0  # a snapshot never moves with the ledger
    assert LedgerTotals.from_dict(snap.to_dict()) == snap
    assert LedgerTotals.from_dict({}) == LedgerTotals.from_dict(None) == LedgerTotals()  # a run before any call


class _RateLimitedAboveTwo(FakeBackend):
    """A server that answers 429 whenever more than two requests are in flight at once."""

    def __init__(self):
        super().__init__(lambda messages, params: "[[3]]")
        self.in_flight = 0
        self.most = 0
        self.refused = 0
        self._lock = threading.Lock()

    def generate(self, messages, params):
        from judge_engine.llm import RateLimited

        with self._lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            busy = self.in_flight > 2
        try:
            time.sleep(0.02)
            if busy:
                with self._lock:
                    self.refused += 1
                raise RateLimited("rate limited by the stub (429) after 0 retries")
            return super().generate(messages, params)
        finally:
            with self._lock:
                self.in_flight -= 1


def test_a_429_lowers_the_calls_in_flight_and_every_request_is_answered(monkeypatch):
    from judge_engine.llm import rate

    monkeypatch.setattr(rate, "FIRST_PAUSE_S", 0.01)
    backend = _RateLimitedAboveTwo()
    llm = LLM(LLMConfig(backend="openai", model="stub", concurrency=8), backend)
    out = llm.complete_many([Request([{"role": "user", "content": f"item {i}"}], GenerationParams())
                             for i in range(40)])
    assert [c.text for c in out] == ["[[3]]"] * 40 and llm.ledger.snapshot().failures == 0
    assert backend.refused > 0 and llm.governor.lowered > 0 and llm.governor.lowest <= 2
    assert len(backend.calls) == 40, "a refused request is sent again, not counted as answered"


def test_a_server_that_keeps_answering_429_pauses_the_run_after_the_patience(monkeypatch):
    from judge_engine.llm import RateLimited, rate

    monkeypatch.setattr(rate, "FIRST_PAUSE_S", 0.01)

    def always_busy(messages, params):
        raise RateLimited("rate limited by the stub (429) after 0 retries")

    llm = LLM(LLMConfig(backend="openai", model="stub", concurrency=4, rate_limit_patience=0.05),
              FakeBackend(always_busy))
    with pytest.raises(RateLimited, match="as few as 1 request"):
        llm.complete([{"role": "user", "content": "x"}])
    assert llm.ledger.snapshot().failures == 1 and llm.governor.limit == 1


def test_the_governor_grows_back_by_one_per_limit_answers():
    from judge_engine.llm.rate import RateGovernor

    g = RateGovernor(8)
    g.rate_limited()
    g.rate_limited()
    assert g.limit == 2 and g.lowered == 2
    for _ in range(2):
        g.answered()
    assert g.limit == 3
    for _ in range(3 + 4 + 5 + 6 + 7 + 20):
        g.answered()
    assert g.limit == 8, "never above the configured concurrency"


class _ModeKnownBackend(FakeBackend):
    """A backend that announces its structured mode before sending, as the openai backend does once it learned it."""

    effective_structured_mode = "json_schema"


@pytest.mark.parametrize("schema", [None, {"type": "object"}])
def test_answers_cached_in_bulk_are_found_under_the_key_they_were_looked_up_with(tmp_path, schema):
    store = Store(tmp_path / "w.db")
    params = GenerationParams(max_tokens=8, json_schema=as_param(schema) if schema else None)
    requests = [Request(({"role": "user", "content": f"item {i}"},), params) for i in range(40)]
    first = _ModeKnownBackend(lambda m, p: '{"score": 3}')
    llm = LLM(LLMConfig(concurrency=8), first, cache=CallCache(store))
    llm.complete_many(requests)
    keys = set(CallCache(store).iter_keys())
    assert len(first.calls) == 40 and keys == {llm.key(r.messages, r.params) for r in requests}
    again = _ModeKnownBackend(lambda m, p: '{"score": 3}')
    replies = LLM(LLMConfig(concurrency=8), again, cache=CallCache(store)).complete_many(requests)
    assert again.calls == [] and all(r.cached for r in replies)
