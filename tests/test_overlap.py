"""Independent LLM calls of a fit go out together (issue 46), and asking them together changes nothing else.

HPSS's 21 initial strategies and Active-Critic's candidate demonstration sets after zero-shot do not depend on
each other, so their calls are sent as one ``complete_many`` batch. Each test fits twice over the same
deterministic scripted backend, once as it is and once with that batching taken out (the strategies or
candidates one after another, as before), and checks the batch sizes ``complete_many`` received, that the
same requests reached the backend, and that the fitted judge and its events are the same.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, get_method
from judge_engine.methods.active_critic import prompt_optimization
from judge_engine.methods.hpss import method as hpss_method
from judge_engine.methods.hpss.method import HPSS
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample
from tests.scripted import scripted_llm
from tests.test_active_critic import _number, scripted
from tests.test_hpss import ASPECT, TASK, _samples


def _recording(llm) -> list[int]:
    """The size of every batch ``llm.complete_many`` receives, in order."""
    sizes: list[int] = []
    send = llm.complete_many

    def complete_many(requests, **kwargs):
        sizes.append(len(requests))
        return send(requests, **kwargs)

    llm.complete_many = complete_many
    return sizes


def _sent(backend) -> Counter:
    """Every request the backend answered, as its JSON body, with how often."""
    return Counter(json.dumps([messages, params.cache_fields()], sort_keys=True) for messages, params in backend.calls)


def _fit_hpss():
    llm, backend = scripted_llm()  # no cache: every request asked for reaches the backend
    sizes = _recording(llm)
    events = []
    judge = HPSS(budget=6, seed=1).fit(_samples()[:9], ASPECT,
                                       FitContext(llm=llm, task=TASK, log=lambda k, p: events.append((k, p))))
    return judge, events, sizes, backend


def test_hpss_sends_its_initial_strategies_as_one_batch_with_the_same_result(monkeypatch):
    judge, events, sizes, backend = _fit_hpss()
    # the 21 initial strategies judge the 9 validation items each in one batch; the search's steps after it
    # stay one strategy at a time (the paper's order)
    assert max(sizes) == 21 * 9
    assert sizes.count(9) >= 6

    initialize = hpss_method.initialize
    monkeypatch.setattr(hpss_method, "initialize",
                        lambda base, evaluate, evaluate_many=None: initialize(base, evaluate))
    one_by_one, seq_events, seq_sizes, seq_backend = _fit_hpss()
    assert max(seq_sizes) == 9, "the reference judges one strategy at a time"
    assert _sent(backend) == _sent(seq_backend)
    assert judge.to_json() == one_by_one.to_json()

    def by_kind(evts):
        # the auxiliaries of the batch are all made before its judge calls, so their events come before the
        # evaluations' instead of between them; each kind's events are the same, in the same order ("calls" is
        # the ledger's count when an entry was written: timing, not result)
        out: dict[str, list] = {}
        for k, p in evts:
            out.setdefault(k, []).append({f: v for f, v in p.items() if f != "calls"})
        return out
    assert by_kind(events) == by_kind(seq_events)
    assert [k for k, _ in events if k != "hpss_auxiliary"] == [k for k, _ in seq_events if k != "hpss_auxiliary"]


@pytest.fixture
def ac_data():
    """Twenty samples whose human quality rises with the output number (``tests/test_active_critic.py``'s data)."""
    samples = tuple(Sample(id=f"s{i}", input=f"source text {i}", output=f"output number {i}", group_id=f"g{i}",
                           system_id=f"sys{i % 3}", human={"quality": 1 + 4 * (i % 10) / 9}) for i in range(20))
    return samples, Aspect("quality", 1, 5, "How good it is."), TaskInfo("news summarization")


def _fit_active_critic(ac_data):
    samples, aspect, task = ac_data
    backend = FakeBackend(scripted(overall=lambda p: 10 * (_number(p) % 10) if "Example 1:" in p
                                   else 50 + (7 * _number(p)) % 13))
    llm = make_llm(LLMConfig(concurrency=4), store=None, backend=backend)
    sizes = _recording(llm)
    events = []
    judge = get_method("active_critic", {"seed": 0}).fit(
        samples[:15], aspect, FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    return judge, events, sizes, backend


def test_active_critic_scores_its_candidate_sets_as_one_batch_with_the_same_result(ac_data, monkeypatch):
    judge, events, sizes, backend = _fit_active_critic(ac_data)
    search = judge.state["search"]
    assert len(search) == 11
    # zero-shot alone (its traces make the bootstrapped sets), then every other set's items in one batch per
    # stage: the criterion scores of all ten, then their overall scores
    together = sum(c["n_items"] for c in search[1:])
    assert sizes.count(together) == 2 and together > search[0]["n_items"]

    run_pipelines = prompt_optimization.run_pipelines
    monkeypatch.setattr(prompt_optimization, "run_pipelines",
                        lambda jobs, state, **kw: [run_pipelines([job], state, **kw)[0] for job in jobs])
    one_by_one, seq_events, seq_sizes, seq_backend = _fit_active_critic(ac_data)
    assert together not in seq_sizes, "the reference scores one candidate at a time"
    assert _sent(backend) == _sent(seq_backend)
    assert judge.to_json() == one_by_one.to_json()
    assert events == seq_events
