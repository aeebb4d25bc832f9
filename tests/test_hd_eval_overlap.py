"""HD-Eval's stages sent together (issue 67 item 3) change when requests go out, nothing else: the same requests,
the same judge, the same verdicts, the same events and costs as one stage after another.

One call at a time (``concurrency=1``) takes the stages one after another, as before the change; several calls
in flight send layer 2 beside layer 1's scoring and the test items' requests beside the last aggregator's fit.
"""

import json
from collections import Counter

import pytest

from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext
from judge_engine.methods.hd_eval import HDEval
from judge_engine.methods.hd_eval.overlap import kept_features, overlaps
from judge_engine.prompting import TaskInfo
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store
from tests.test_hd_eval import _dataset, scripted


def _llm(store, concurrency):
    backend = FakeBackend(scripted)
    return make_llm(LLMConfig(backend="openai", model="fake", concurrency=concurrency), store=store,
                    backend=backend), backend


def _requests(backend):
    """Every request sent, as text: the same multiset whatever the order they went out in."""
    return Counter(json.dumps([m, p.max_tokens, p.json_schema, p.sample_index], sort_keys=True, default=str)
                   for m, p in backend.calls)


def _fit(tmp_path, concurrency, upcoming=(), **params):
    store = Store(tmp_path / f"fit-{concurrency}.db")
    dataset = _dataset()
    llm, backend = _llm(store, concurrency)
    events, done = [], []
    judge = HDEval(**params).fit(dataset.samples[:16], dataset.aspect("clarity"),
                                 FitContext(llm=llm, task=TaskInfo.of(dataset), aspects=dataset.aspects,
                                            log=lambda k, p: events.append((k, p)), upcoming=tuple(upcoming),
                                            fit_done=lambda: done.append(llm.ledger.snapshot().calls)))
    return judge, backend, events, done, llm


@pytest.mark.parametrize("params", [{"aggregator": "lr", "k_expand": 2, "pi_repeats": 3},
                                    {"aggregator": "dt", "max_layers": 2, "pi_repeats": 2},
                                    {"aggregator": "lr", "max_layers": 1, "pi_repeats": 2}])
def test_the_fitted_judge_its_requests_and_events_are_those_of_one_stage_after_another(tmp_path, params):
    one, one_backend, one_events, _, one_llm = _fit(tmp_path, 1, **params)
    many, many_backend, many_events, _, many_llm = _fit(tmp_path, 8, **params)
    assert not overlaps(one_llm) and overlaps(many_llm)
    assert many.to_json() == one.to_json()
    assert _requests(many_backend) == _requests(one_backend)
    assert many_events == one_events
    # and the judges score alike
    test = _dataset().samples[16:]
    assert [v.score for v in many.score(list(test), llm=many_llm)] == \
        pytest.approx([v.score for v in one.score(list(test), llm=one_llm)], nan_ok=True)


def test_the_test_items_requests_go_out_during_the_last_fit_and_the_scoring_finds_them_answered(tmp_path):
    test = _dataset().samples[16:]
    many, backend, _, done, llm = _fit(tmp_path, 8, upcoming=test, aggregator="lr", k_expand=2, pi_repeats=3)
    one, one_backend, _, none_early, _ = _fit(tmp_path, 1, upcoming=test, aggregator="lr", k_expand=2,
                                              pi_repeats=3)
    assert many.to_json() == one.to_json() and none_early == []
    fit_requests = len(one_backend.calls)
    assert done == [fit_requests], "the fit's cost is taken before any test request"
    sent_early = len(backend.calls) - fit_requests
    assert sent_early == len(test) * len(many.state["features"])
    before = len(backend.calls)
    verdicts = many.score(list(test), llm=llm)
    assert len(backend.calls) == before, "every scoring request was answered from the cache"
    assert [v.score for v in verdicts] == pytest.approx([v.score for v in one.score(list(test), llm=_llm(
        Store(tmp_path / "fresh.db"), 1)[0])], nan_ok=True)


def test_a_run_costs_and_scores_the_same_and_its_fit_cost_leaves_out_the_test_requests(tmp_path):
    spec = dict(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                params={"aggregator": "lr", "max_layers": 2, "pi_repeats": 2})
    out = {}
    for concurrency in (1, 8):
        store = Store(tmp_path / f"run-{concurrency}.db")
        store.save_dataset(_dataset())
        llm, backend = _llm(store, concurrency)
        run_id = create_run(store, RunSpec(**spec, llm=llm.config))
        summary = execute_run(store, run_id, llm=llm)
        fitted = next(e for e in store.events(run_id) if e["kind"] == "fitted")["payload"]["ledger"]
        out[concurrency] = (summary, fitted, sorted((v.sample_id, v.score) for v in store.load_verdicts(run_id)),
                            _requests(backend))
    (one, one_fit, one_scores, one_requests), (many, many_fit, many_scores, many_requests) = out[1], out[8]
    assert many_requests == one_requests
    assert many.ledger.calls == one.ledger.calls
    assert many_fit["calls"] == one_fit["calls"] < many.ledger.calls
    assert [s for _, s in many_scores] == pytest.approx([s for _, s in one_scores], nan_ok=True)
    # the scoring found its requests answered by the ones sent during the fit
    assert many.ledger.cache_hits == one.ledger.cache_hits + (many.ledger.calls - many_fit["calls"])


def test_kept_features_drops_those_no_training_item_has_a_score_for():
    nan = float("nan")
    assert kept_features({"a": [1.0, nan], "b": [nan, nan], "c": [2.0, 3.0]}, ["a", "b", "c"]) == ["a", "c"]


def test_of_two_stages_in_flight_one_reports_so_a_progress_bar_per_stage_is_not_reopened(tmp_path):
    store = Store(tmp_path / "progress.db")
    dataset = _dataset()
    llm, _ = _llm(store, 8)
    stages = []
    HDEval(aggregator="lr", k_expand=2, pi_repeats=2).fit(
        dataset.samples[:16], dataset.aspect("clarity"),
        FitContext(llm=llm, task=TaskInfo.of(dataset), aspects=dataset.aspects, upcoming=dataset.samples[16:],
                   progress=lambda d, t, s: stages.append(s)))
    runs = [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]
    assert len(runs) == len(set(runs)), f"a stage reported again after another: {runs}"
    assert runs[0].startswith("layer 1") and any(s.startswith("layer 2") for s in runs)
    assert runs[-1].startswith("scoring the 8 test items")
