"""One contract for every registered method, plus each baseline's own behaviour (fake LLM)."""

import copy
import json
import dataclasses
import inspect
import math

import pytest

from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import METHODS, FitContext, GEval, Judge, get_method
from judge_engine.prompting import TaskInfo, judge_scale, to_aspect_range
from judge_engine.structured import kind_of
from tests.scripted import fake_llm, scripted_llm


def _fit(name, store, dataset, params=None):
    llm, backend = fake_llm(lambda m, p: "1. Read.\n2. Rate." if "procedure" in m[0]["content"] else "[[4]]",
                            store=store)
    method = get_method(name, params)
    judge = method.fit(dataset.samples[:6], dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(dataset)))
    return method, judge, llm, backend


@pytest.mark.parametrize("name", sorted(METHODS))
def test_params_are_stored_verbatim_and_keyword_only(name):
    cls = METHODS[name]
    defaults = cls.default_params()
    method = cls(**defaults)
    assert method.get_params() == defaults
    with pytest.raises(TypeError):
        cls(*defaults.values())


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_fit_takes_the_same_context(name):
    # the runner passes one FitContext to every method; a method asking for more would silently get nothing
    params = list(inspect.signature(METHODS[name].fit).parameters)
    assert params == ["self", "train", "aspect", "context"]


def test_fit_context_of_a_dataset_carries_its_aspects_and_level(store, tiny_dataset):
    llm, _ = fake_llm("[[3]]", store=store)
    context = FitContext.of(tiny_dataset, llm=llm)
    assert context.aspects == tiny_dataset.aspects and context.natural_level == "group"
    assert context.task == TaskInfo.of(tiny_dataset) and context.progress is None and context.log is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.natural_level = "sample"


@pytest.mark.parametrize("name", sorted(METHODS))
def test_fit_leaves_the_method_unchanged_and_judge_round_trips(name, store, tiny_dataset):
    method = get_method(name)
    before = copy.deepcopy(method.__dict__)
    llm, _ = scripted_llm(store)
    judge = method.fit(tiny_dataset.samples[:6], tiny_dataset.aspects[0],
                       FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    assert method.__dict__ == before  # the very instance that was fitted: parameters stored verbatim, untouched
    again = Judge.from_json(judge.to_json())
    assert again == judge
    verdicts = again.score(tiny_dataset.samples[6:], llm=llm)
    assert [v.sample_id for v in verdicts] == [s.id for s in tiny_dataset.samples[6:]]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_same_inputs_give_the_same_scores(name, tiny_dataset):
    # no cache: both scorings reach the backend, so equal scores come from the method, not from a stored reply
    llm, backend = scripted_llm()
    judge = get_method(name).fit(tiny_dataset.samples[:6], tiny_dataset.aspects[0],
                                 FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    calls = len(backend.calls)
    a = judge.score(tiny_dataset.samples[6:], llm=llm)
    between = len(backend.calls)
    b = judge.score(tiny_dataset.samples[6:], llm=llm)
    assert between > calls and len(backend.calls) - between == between - calls
    assert [v.score for v in b] == pytest.approx([v.score for v in a], nan_ok=True)
    assert any(not v.missing for v in a)


def _completions(calls) -> int:
    return sum(params.n for _, params in calls)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_the_estimate_is_an_upper_bound_of_the_calls_made(name, tiny_dataset):
    llm, backend = scripted_llm()  # no cache: every request the method makes reaches the backend
    method = get_method(name)
    train, test = tiny_dataset.samples[:6], tiny_dataset.samples[6:]
    estimate = method.estimate_calls(len(train), len(test))
    judge = method.fit(train, tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    fitted = _completions(backend.calls)
    judge.score(test, llm=llm)
    scored = _completions(backend.calls) - fitted
    assert fitted <= estimate["fit"], f"fit made {fitted} completions, estimated {estimate['fit']}"
    assert scored <= estimate["score"], f"scoring made {scored} completions, estimated {estimate['score']}"


class _Server(FakeBackend):
    """A scripted backend under a server's name: the judge's own check of generated text runs on it."""

    name = "openai"


@pytest.mark.parametrize("name", ["hypoeval", "hd_eval", "active_critic"])
def test_the_estimate_bounds_the_calls_made_with_the_judges_own_check(name, tiny_dataset):
    """Issue 65: on a server each generated entry the rules accept is one request more; the count on that
    backend holds them (the scripted yes/no answers refuse some entries, so more draws are read)."""
    import zlib

    from judge_engine import rubric_model_check
    from tests.scripted import schema_responder, tiny_oracle

    schemas = schema_responder(oracle=tiny_oracle)
    refusal = json.dumps({**{q: q in ("about_quality", "instructs_evaluator") for q in rubric_model_check.QUESTIONS},
                          "language": "en", "reason": "it orders the evaluator"})

    def respond(messages, params):  # the check refuses one entry in three: draws read more entries
        if "<<<ENTRY>>>" not in messages[-1]["content"]:
            return schemas(messages, params)
        return refusal if zlib.crc32(messages[-1]["content"].encode()) % 3 == 0 else rubric_model_check.passing_reply()

    backend = _Server(respond)
    llm = make_llm(LLMConfig(backend="openai", model="m"), backend=backend)
    method = get_method(name)
    train, test = tiny_dataset.samples[:6], tiny_dataset.samples[6:]
    estimate = method.estimate_calls(len(train), len(test), backend="openai")
    method.fit(train, tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    checks = sum(1 for messages, _ in backend.calls if "<<<ENTRY>>>" in messages[-1]["content"])
    assert checks > 0, "the judge's own model read no generated entry"
    assert _completions(backend.calls) <= estimate["fit"]
    assert estimate["fit"] - method.estimate_calls(len(train), len(test))["fit"] >= checks


@pytest.mark.parametrize("name", sorted(METHODS))
def test_bad_parameter_is_named_at_fit_time(name, store, tiny_dataset):
    cls = METHODS[name]
    pname, constraint = next(iter(cls._parameter_constraints.items()))
    method = cls(**{**cls.default_params(), pname: "not-a-valid-value"})  # construction never validates
    with pytest.raises(ValueError, match=pname):
        method.fit(tiny_dataset.samples, tiny_dataset.aspects[0],
                   FitContext(llm=fake_llm("[[3]]", store=store)[0], task=TaskInfo.of(tiny_dataset)))


def test_judge_from_json_refuses_unknown_schema_or_method():
    with pytest.raises(ValueError, match="schema version"):
        Judge.from_dict({"method": "direct", "params": {}, "aspect": {}, "task": {}, "schema_version": 99})
    with pytest.raises(ValueError, match="unknown"):
        Judge.from_dict({"method": "nope", "params": {}, "aspect": {}, "task": {}, "schema_version": 1})


def test_direct_unparsed_reply_is_missing_with_raw_text(store, tiny_dataset):
    # Requests run concurrently, so the reply depends on the sample in the prompt, not on call order.
    replies = {"output number 0": "[[5]]", "output number 1": "I refuse", "output number 2": "[[2]]"}
    llm, _ = fake_llm(lambda m, p: next(r for text, r in replies.items() if text in m[-1]["content"]), store=store)
    judge = get_method("direct").fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    v = judge.score(tiny_dataset.samples[:3], llm=llm)
    assert v[0].score == 5.0 and v[1].missing and v[1].raw == "I refuse" and v[2].score == 2.0


def test_direct_maps_a_zero_to_one_aspect_from_the_judge_scale(store, tiny_dataset):
    from judge_engine.records import Aspect
    llm, backend = fake_llm("[[5]]", store=store)
    judge = get_method("direct").fit([], Aspect("grounded", 0, 1), FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    assert judge.score(tiny_dataset.samples[:1], llm=llm)[0].score == 1.0
    assert "from 1 (worst) to 5 (best)" in backend.calls[0][0][0]["content"]


def test_geval_uses_logprob_expectation_when_available(store, tiny_dataset):
    llm, backend = fake_llm(lambda m, p: "steps" if "procedure" in m[0]["content"] else "3", logprobs=True, store=store)
    judge = GEval().fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    assert judge.state["scoring"] == "logprobs"
    [v] = judge.score(tiny_dataset.samples[:1], llm=llm)
    # fake distribution: 0.7 on "3", 0.1 on "2" and "4" -> expectation 3
    assert v.score == pytest.approx(3.0) and v.metadata["source"] == "logprobs"
    assert backend.calls[-1][1].top_logprobs == 20


class _EchoingBackend(FakeBackend):
    """Scores by echoing the prompt's fence first; the scale's digits are only alternatives there."""

    def __init__(self, *args, scale_mass=0.8, **kwargs):
        super().__init__(*args, **kwargs)
        self.scale_mass = scale_mass

    def generate(self, messages, params):
        done = super().generate(messages, params)
        if not params.top_logprobs:
            return done
        m = self.scale_mass  # split 3:1 between "2" and "4"
        first = {"token": "<<", "logprob": math.log(1 - m),
                 "top": {"<<": math.log(1 - m), "2": math.log(0.75 * m), "4": math.log(0.25 * m)}}
        return dataclasses.replace(done, texts=("<<<DIALOGUE",), logprobs=((first, {"token": "<", "logprob": 0.0,
                                                                                      "top": {"<": 0.0}}),))


def test_geval_reads_the_first_position_when_the_reply_chose_no_number(store, tiny_dataset):
    backend = _EchoingBackend(lambda m, p: "1. Read." if "procedure" in m[0]["content"] else "", logprobs=True)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    judge = GEval().fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    [v] = judge.score(tiny_dataset.samples[:1], llm=llm)
    # renormalised over the scale: 0.75 on 2 and 0.25 on 4 -> 2.5 on the 1-5 scale
    assert v.score == pytest.approx(2.5) and v.metadata["source"] == "logprobs_first_position"
    assert v.metadata["distribution"] == pytest.approx({"2": 0.75, "4": 0.25}) and v.raw == "<<<DIALOGUE"


def test_geval_first_position_with_little_mass_on_the_scale_is_missing_and_says_why(store, tiny_dataset):
    backend = _EchoingBackend(lambda m, p: "1. Read." if "procedure" in m[0]["content"] else "", logprobs=True,
                              scale_mass=0.2)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    judge = GEval().fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    [v] = judge.score(tiny_dataset.samples[:1], llm=llm)
    assert v.missing and v.metadata["source"] == "missing"
    assert "20%" in v.metadata["missing_reason"]


def test_scores_are_asked_for_as_json_and_read_from_it(store, tiny_dataset):
    def responder(messages, params):
        if "procedure" in messages[0]["content"]:
            return '{"steps": ["Read it.", "Check the facts.", "Rate it."]}'
        assert kind_of(params.json_schema) == "score"
        return '{"score": 2}'

    for name in ("direct", "geval"):
        llm, backend = fake_llm(responder, store=store)
        judge = get_method(name).fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
        [v] = judge.score(tiny_dataset.samples[:1], llm=llm)
        assert v.metadata["source"] in ("json", "sampling") and not v.missing
        if name == "geval":
            assert judge.state["steps"].startswith("1. Read it.\n2. Check the facts.")
            assert v.metadata["samples"][0] == pytest.approx(2.0)  # fake has no logprobs: sampled
        else:
            aspect = tiny_dataset.aspects[0]
            assert v.score == pytest.approx(to_aspect_range(2.0, judge_scale(aspect), aspect))


def test_geval_samples_n_replies_without_logprobs(store, tiny_dataset):
    def responder(messages, params):
        if "procedure" in messages[0]["content"]:
            return "1. Read."
        return ["2", "4", "oops"][params.sample_index % 3]

    llm, backend = fake_llm(responder, store=store)
    judge = GEval(n_samples=3).fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    assert judge.state["scoring"] == "sampling"
    [v] = judge.score(tiny_dataset.samples[:1], llm=llm)
    assert v.score == 3.0 and v.metadata["samples"] == [2.0, 4.0, None]
    assert backend.calls[-1][1].n == 3 and backend.calls[-1][1].temperature == 1.0


def test_geval_steps_are_generated_once_and_cached(store, tiny_dataset):
    llm, backend = fake_llm(lambda m, p: "1. Read." if "procedure" in m[0]["content"] else "[[3]]", store=store)
    GEval().fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    GEval().fit([], tiny_dataset.aspects[0], FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    assert len(backend.calls) == 1 and llm.ledger.snapshot().cache_hits == 1
