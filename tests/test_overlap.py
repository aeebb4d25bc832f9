"""Independent LLM calls of a fit go out together (issue 46), and asking them together changes nothing else.

HPSS's 21 initial strategies and Active-Critic's candidate demonstration sets after zero-shot do not depend on
each other, so their calls are sent as one ``complete_many`` batch. Each test fits twice over the same
deterministic scripted backend, once as it is and once with that batching taken out (the strategies or
candidates one after another, as before), and checks the batch sizes ``complete_many`` received, that the
same requests reached the backend, and that the fitted judge and its events are the same.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from judge_engine import structured
from judge_engine.llm import GenerationParams, LLMConfig, LLMError, Request, make_llm
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


class _HoldsOneCriterionCall:
    """A responder that holds the search's first McS-E call until an OS-E call reaches it (at most 20 s).

    That first criterion call is item 0's, whose own OS-E call cannot go before it is answered: an OS-E call
    arriving meanwhile is another item's, sent while a criterion call was in flight. With every criterion call
    sent before any overall call (stage after stage) none can arrive, and ``overlapped`` ends False.
    """

    def __init__(self, responder):
        self.responder = responder
        self.overall_sent = threading.Event()
        self.overlapped: bool | None = None
        self._lock = threading.Lock()

    def __call__(self, messages, params):
        schema = params.json_schema or ""
        if len(messages) == 1 and structured.kind_of(schema) == structured.EXPLAINED_SCORES:
            if '"overall"' in schema:
                self.overall_sent.set()
            else:
                with self._lock:
                    first = self.overlapped is None
                    if first:
                        self.overlapped = False
                if first:
                    self.overlapped = self.overall_sent.wait(timeout=20)
        return self.responder(messages, params)


def _fit_active_critic(ac_data, *, hold: bool = False):
    samples, aspect, task = ac_data
    responder = scripted(overall=lambda p: 10 * (_number(p) % 10) if "Example 1:" in p
                         else 50 + (7 * _number(p)) % 13)
    holder = _HoldsOneCriterionCall(responder) if hold else None
    backend = FakeBackend(holder or responder)
    llm = make_llm(LLMConfig(concurrency=4), store=None, backend=backend)
    batches: list = []
    send = llm.complete_many
    llm.complete_many = lambda requests, **kw: (batches.append(list(requests)), send(requests, **kw))[1]
    events = []
    judge = get_method("active_critic", {"seed": 0}).fit(
        samples[:15], aspect, FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    return judge, events, batches, backend, holder


def _kinds(batch) -> set:
    """What a batch asks for: each request's schema kind ("" for free text), OS-E and McS-E told apart."""
    def kind(r):
        schema = r.params.json_schema or ""
        k = structured.kind_of(schema) if schema else ""
        return ("ose" if '"overall"' in schema else "mcse") if k == structured.EXPLAINED_SCORES else k
    return {kind(r) for r in batch}


def test_active_critic_overlaps_what_the_paper_does_not_order_with_the_same_result(ac_data, monkeypatch):
    judge, events, batches, backend, holder = _fit_active_critic(ac_data, hold=True)
    search = judge.state["search"]
    assert len(search) == 11 and [c["kind"] for c in search[:3]] == ["zero-shot", "labeled", "bootstrap"]
    # an item's overall call went out while another item's criterion call was in flight (its pair slides)
    assert holder.overlapped is True
    # the search's calls are chains, not complete_many batches: none of its stages waits for another's end
    assert not [b for b in batches if _kinds(b) & {"mcse", "ose"}]
    # stage 1: a task description goes out with the next batch's observation (it reads the observations only)
    assert sum(1 for b in batches if _kinds(b) == {structured.TASK_DESCRIPTION, ""}) == 2

    # the reference, the order before issue 46: stage 1 one call at a time, every candidate set on its own,
    # and in each, every criterion call before any overall call (the chains in rounds of complete_many)
    from judge_engine.llm import chains, client
    from judge_engine.methods.active_critic import task_description

    run_pipelines = prompt_optimization.run_pipelines
    monkeypatch.setattr(prompt_optimization, "run_pipelines",
                        lambda jobs, state, **kw: [run_pipelines([job], state, **kw)[0] for job in jobs])
    monkeypatch.setattr(client, "sliding", chains.in_rounds)
    monkeypatch.setattr(task_description, "_asked_together",
                        lambda llm, requests: [llm.complete(r.messages, r.params) for r in requests])
    one_by_one, seq_events, seq_batches, seq_backend, _ = _fit_active_critic(ac_data)
    stages = [_kinds(b) for b in seq_batches if _kinds(b) & {"mcse", "ose"}]
    assert stages and all(len(k) == 1 for k in stages), "the reference sends a stage at a time"
    assert len(stages) == 2 * 11, "two stages (criterion, then overall calls) per candidate set"
    assert _sent(backend) == _sent(seq_backend)
    assert judge.to_json() == one_by_one.to_json()
    assert events == seq_events


def _chain(base: str, steps: int):
    """A chain whose every request carries the previous reply, so each step depends on the one before."""
    reply = None
    for k in range(steps):
        text = f"{base} step {k} after {reply.text if reply else '-'}"
        reply = yield Request(({"role": "user", "content": text},), GenerationParams())
    return reply.text


@pytest.mark.parametrize("concurrency", [4, 1])
def test_complete_chains_answers_each_chain_in_order_and_sends_a_shared_request_once(concurrency):
    backend = FakeBackend(lambda messages, params: f"<{messages[0]['content']}>")
    llm = make_llm(LLMConfig(concurrency=concurrency), store=None, backend=backend)
    ticks = []
    # chains "a" and "a" are the same requests: sent once, the second answered as a free twin
    results = llm.complete_chains([_chain("a", 3), _chain("b", 2), _chain("a", 3), _chain("c", 1)],
                                  calls_each=3, progress=lambda d, t: ticks.append((d, t)))
    assert results[0] == results[2] == "<a step 2 after <a step 1 after <a step 0 after ->>>"
    assert results[1] == "<b step 1 after <b step 0 after ->>" and results[3] == "<c step 0 after ->"
    assert len(backend.calls) == 3 + 2 + 1
    assert ticks[-1] == (3 + 2 + 3 + 1, 12)
    assert llm.ledger.snapshot().cache_hits == 3


def test_complete_chains_raises_the_first_failure_and_sends_nothing_after_it():
    def respond(messages, params):
        if "bad" in messages[0]["content"]:
            raise LLMError("the server failed")
        return "ok"

    backend = FakeBackend(respond)
    llm = make_llm(LLMConfig(concurrency=2), store=None, backend=backend)
    with pytest.raises(LLMError, match="the server failed"):
        llm.complete_chains([_chain("bad", 2)] + [_chain(f"x{i}", 3) for i in range(4)])
    assert not [m for m, _ in backend.calls if "bad step 1" in m[0]["content"]]
    assert len(backend.calls) < 1 + 4 * 3


def _hd_responder(messages, params):
    """tests/test_hd_eval.py's scripted judge, with a decomposition that needs further draws ("style": prose, then
    one child a draw) and a first score reply without a score on some cells (so follow-up turns are sent)."""
    import zlib

    from tests.test_hd_eval import _json_scripted

    text = messages[0]["content"]
    if 'split up is "style"' in text:
        return "Style is many things." if params.sample_index == 0 else \
            json.dumps({"children": [{"name": "Rhythm", "definition": "Reads well."}]})
    if len(messages) == 1 and "split up" not in text and zlib.crc32(text.encode()) % 5 == 0:
        return "I cannot say."
    return _json_scripted(messages, params)


def _decomposition_batches(batches) -> list[int]:
    """The sizes of the ``complete_many`` batches that asked for decompositions (``batches``: each batch's requests)."""
    from judge_engine import structured

    return [len(b) for b in batches if {structured.kind_of(r.params.json_schema) for r in b} == {structured.DECOMPOSITION}]


def _fit_hd_eval(responder=None):
    from judge_engine.methods.hd_eval import HDEval
    from tests.test_hd_eval import _dataset

    dataset = _dataset()
    backend = FakeBackend(responder or _hd_responder)
    llm = make_llm(LLMConfig(concurrency=4), store=None, backend=backend)  # no cache: every request is sent
    batches: list = []
    send = llm.complete_many
    llm.complete_many = lambda requests, **kw: (batches.append(list(requests)), send(requests, **kw))[1]
    events = []
    judge = HDEval(aggregator="lr", k_expand=2, pi_repeats=2).fit(
        dataset.samples[:12], dataset.aspect("clarity"),
        FitContext(llm=llm, task=TaskInfo.of(dataset), log=lambda k, p: events.append((k, p))))
    return judge, events, batches, backend


def test_hd_eval_sends_sibling_decompositions_and_a_layers_parent_groups_together_with_the_same_result(monkeypatch):
    from judge_engine.methods.hd_eval import decomposition, scoring, tree_index
    from judge_engine.methods.hd_eval import method as hd_method
    from judge_engine.methods.hd_eval import overlap as hd_overlap
    from judge_engine.methods.hd_eval.decomposition import LayerDecomposition

    judge, events, batches, backend = _fit_hd_eval()
    sizes = [len(b) for b in batches]
    by_layer = Counter(n["layer"] for n in tree_index(judge.state["tree"]).values())
    assert by_layer[1] == 3 and by_layer[2] >= 9 and by_layer[3] > 0, by_layer
    # layer 2: the three aspects' first draws in one batch; layer 3: the two chosen nodes' in one batch
    # layer 2: the three aspects' first draws in one batch; layer 3: the two chosen nodes' in one batch (a further
    # draw of one parent depends on what its earlier siblings left, and stays one call)
    assert _decomposition_batches(batches) == [3, 2]
    # every new criterion of a layer (all its parent groups) scored on the 12 items in one batch
    assert 12 * by_layer[2] in sizes and 12 * by_layer[3] in sizes
    assert any(kind == "decomposed" and p["follow_up"] for kind, p in events), "a further draw was needed"
    assert sum(1 for m, _ in backend.calls if len(m) == 3), "some cells needed a follow-up turn"

    # the reference: one parent's decomposition and one parent group's scoring after another, as before
    def one_by_one_decomposition(tree, chosen, layer, settings, **kw):
        parts = [decomposition.decompose_layer(tree, [nid], layer, settings, **kw) for nid in chosen]
        reads: dict[str, int] = {}
        for p in parts:
            for k, v in p.reads.items():
                reads[k] = reads.get(k, 0) + v
        return LayerDecomposition(reads, tuple(r for p in parts for r in p.rejected),
                                  tuple(w for p in parts for w in p.warnings))

    jobs_at_once = scoring.score_criteria_jobs
    monkeypatch.setattr(hd_method, "decompose_layer", one_by_one_decomposition)
    monkeypatch.setattr(hd_overlap, "decompose_layer", one_by_one_decomposition)  # layer 2 beside layer 1's scoring
    monkeypatch.setattr(scoring, "score_criteria_jobs",
                        lambda jobs, **kw: [jobs_at_once([job], **kw)[0] for job in jobs])
    one_by_one, seq_events, seq_batches, seq_backend = _fit_hd_eval()
    assert _decomposition_batches(seq_batches) == [1] * 5, "the reference sends one parent at a time"
    assert 12 * by_layer[2] not in [len(b) for b in seq_batches]
    assert _sent(backend) == _sent(seq_backend)
    assert judge.to_json() == one_by_one.to_json()
    assert events == seq_events


def test_hd_eval_fits_layer_one_while_layer_two_is_asked_with_the_same_result_and_events(monkeypatch):
    from concurrent.futures import Future

    from judge_engine.methods.hd_eval import method as hd_method

    # layer 1's importance waits until a layer-2 decomposition has reached the server: one stage after another,
    # that request would come only after the importance, and the wait would run out
    asked = threading.Event()
    overlapped: list[bool] = []
    importance = hd_method.attribution_importance

    def attribution_waiting_for_layer_two(aggs, **kw):
        if not overlapped:
            overlapped.append(asked.wait(timeout=20))
        return importance(aggs, **kw)

    def responder(messages, params):
        if 'split up is "' in messages[0]["content"]:
            asked.set()
        return _hd_responder(messages, params)

    monkeypatch.setattr(hd_method, "attribution_importance", attribution_waiting_for_layer_two)
    judge, events, batches, backend = _fit_hd_eval(responder)
    assert overlapped == [True], "layer 1's aggregator was fitted while layer 2's decompositions were in flight"
    monkeypatch.setattr(hd_method, "attribution_importance", importance)

    # the reference: each aggregator fitted before anything after it is sent
    def at_once(pool, *args):
        done: Future = Future()
        done.set_result(hd_method._aggregate(*args))
        return done

    monkeypatch.setattr(hd_method, "aggregate_later", at_once)
    reference, ref_events, _, ref_backend = _fit_hd_eval(responder)
    assert _sent(backend) == _sent(ref_backend)
    assert judge.to_json() == reference.to_json()
    assert events == ref_events
    # the order of one stage after another: layer 1's aggregator, then layer 2's expansion (with layer 1's
    # importance) and decompositions, then layer 2's scores
    stages = {"tree_started", "layer_scored", "aggregator_fitted", "expansion_chosen"}
    kinds = [(kind, p.get("layer")) for kind, p in events if kind in stages]
    assert kinds[:5] == [("tree_started", None), ("layer_scored", 1), ("aggregator_fitted", 1),
                         ("expansion_chosen", 2), ("layer_scored", 2)]
    first_fit = next(p for kind, p in events if kind == "aggregator_fitted")
    expansion = next(p for kind, p in events if kind == "expansion_chosen")
    layer_two = [i for i, (kind, p) in enumerate(events) if kind == "decomposed" and p["layer"] == 2]
    assert layer_two and events.index(("expansion_chosen", expansion)) < min(layer_two)
    assert max(layer_two) < [k for k, _ in events].index("layer_scored", 2)
    # the aggregator_fitted event rounds importances to 6 decimals: equal within that rounding
    assert {c: v["importance"] for c, v in expansion["candidates"].items()} == pytest.approx(
        first_fit["importance"], rel=0, abs=5e-7)
