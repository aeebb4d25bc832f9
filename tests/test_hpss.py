"""HPSS: strategy space, template builder, auxiliaries, search (scripted LLM), and one real-model run."""

import math
import zlib

import numpy as np
import pytest

from judge_engine.hpss_auxiliaries import Auxiliaries, parse_questions, select_examples
from judge_engine.hpss_strategy import (FACTOR_NAMES, FACTORS, StrategyInputs, all_strategies, base_strategy,
                                        build_prompt, display_rating, neighbours, parse_strategy, rating_range,
                                        replace_value, strategy_name)
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import Judge, get_method
from judge_engine.methods.hpss import (HPSS, SearchState, evaluate_strategy, exploit, exploration_scores,
                                       greedy_search, initialize, iterative_search, stepwise_greedy_search,
                                       update_advantage)
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample

ASPECT = Aspect("quality", 1, 5, "How good it is.")
TASK = TaskInfo("toy summarization", "Article", "Summary")
BASE = base_strategy(ASPECT)
FULL = StrategyInputs(criteria="CRITERIA-TEXT", steps="1. STEP-ONE", questions="1. QUESTION-ONE?",
                      reference="REFERENCE-TEXT",
                      examples=tuple({"id": f"e{i}", "input": f"ex in {i}", "output": f"EXAMPLE-OUT-{i}",
                                      "context": None, "level": lvl} for i, lvl in enumerate([0, .25, .5, .75, 1])))


def responder(messages, params):
    """Scripted LLM: auxiliaries by prompt kind, judge ratings from a hash of the prompt (deterministic)."""
    text = messages[-1]["content"]
    if "Propose at most three" in text:
        return "1. Is it faithful?\n2. Is it short?"
    if text.rstrip().endswith("Summary:") and "Reply with the summary only" in text:
        return "A generated reference."
    if text.rstrip().endswith("Evaluation steps:"):
        return "Evaluation steps:\n1. Read.\n2. Rate."
    if "Write the evaluation criteria" in text:
        return "quality : how complete and correct it is."
    return f"Because. Rating: [[{zlib.crc32(text.encode()) % 5 + 1}]]"


def make_fake(store, fn=responder):
    backend = FakeBackend(fn)
    return make_llm(LLMConfig(), store=store, backend=backend), backend


# --------------------------------------------------------------------------- the space and the builder


def test_strategy_space_has_12960_distinct_members_and_20_neighbours():
    space = all_strategies()
    assert len(space) == 12960 == len({strategy_name(s) for s in space})
    assert len(neighbours(BASE)) == 20
    assert parse_strategy(strategy_name(space[1234])) == space[1234]
    with pytest.raises(ValueError, match="scale"):
        parse_strategy("7_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI")


def test_base_is_mt_bench_on_the_native_scale():
    assert strategy_name(BASE) == "5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"
    assert base_strategy(Aspect("coh", 1, 3))[0] == "3"


def _prompt(factor, value, sample=None):
    sample = sample or Sample(id="x", input="THE-INPUT", output="THE-OUTPUT", group_id="g")
    return build_prompt(replace_value(BASE, FACTOR_NAMES.index(factor), value), sample, ASPECT, TASK, FULL)


@pytest.mark.parametrize("factor,value", [(f, v) for f, values in FACTORS for v in values])
def test_every_factor_value_renders(factor, value):
    prompt = _prompt(factor, value)
    assert "<<<SUMMARY>>>\nTHE-OUTPUT\n<<<END SUMMARY>>>" in prompt and "THE-INPUT" in prompt
    assert prompt == _prompt(factor, value)  # deterministic: identical prompts hit the cache
    if factor == "scale":
        assert f"from 1 to {value}" in prompt and f"[[{value}]]" in prompt
    elif factor == "criteria":
        assert ("CRITERIA-TEXT" in prompt) == (value != "NoCriteria")
    elif factor == "cot":
        marker = {"Prefix": "Start with a brief explanation", "Suffix": "Then explain",
                  "Free": "with no explanation"}[value]
        assert marker in prompt
    elif factor == "autocot":
        assert ("STEP-ONE" in prompt) == (value == "AutoCoT")
    elif factor == "metrics":
        assert ("QUESTION-ONE" in prompt) == (value == "Metrics")
    elif factor == "example":
        assert prompt.count("# Example") == {"NoExample": 0}.get(value, 5)
        if value != "NoExample":
            assert prompt.index("EXAMPLE-OUT-0") < prompt.index("EXAMPLE-OUT-4") < prompt.index("THE-INPUT")
    elif factor == "reference":
        assert ("REFERENCE-TEXT" in prompt) == (value == "Reference")
        assert ("write your own summary" in prompt) == (value == "Dialectic")
    elif factor == "order":
        where = {"T": prompt.index("[Instruction]"), "E": prompt.index("Evaluation rules"),
                 "I": prompt.index("THE-INPUT")}
        assert sorted(where, key=where.get) == list(value)
        assert ("shown below" in prompt) == (value.index("T") < value.index("I"))


def test_example_ratings_are_shown_on_the_strategy_scale():
    assert [display_rating(p, "10", ASPECT) for p in (0, .25, .5, .75, 1)] == ["1", "2.5", "5", "7.5", "10"]
    assert [display_rating(p, "3", ASPECT) for p in (0, .5, 1)] == ["1", "2", "3"]
    grounded = Aspect("groundedness", 0, 1)
    assert rating_range("3", grounded) == (0, 1) and rating_range("10", grounded) == (0, 10)
    assert display_rating(1, "50", grounded) == "50"


def test_missing_auxiliary_is_refused_by_the_builder():
    with pytest.raises(ValueError, match="criteria"):
        build_prompt(BASE, Sample(id="x", input="a", output="b", group_id="g"), ASPECT, TASK, StrategyInputs())


# --------------------------------------------------------------------------- auxiliaries


def _samples(n=12):
    return tuple(Sample(id=f"s{i}", input=f"source text {i // 3}", output=f"output number {i}", group_id=f"g{i // 3}",
                        system_id=f"sys{i % 3}", human={"quality": float(1 + (i * 7) % 5)}) for i in range(n))


def test_examples_are_stratified_and_leave_the_judged_sample_out(store):
    pool = _samples(10)
    ex = select_examples(pool, ASPECT, 5, seed=0)
    assert [e["level"] for e in ex] == [0, .25, .5, .75, 1]
    assert select_examples(pool, ASPECT, 5, seed=0) == ex
    llm, _ = make_fake(store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=pool)
    strategy = replace_value(BASE, FACTOR_NAMES.index("example"), "Example5")
    judged = next(s for s in pool if s.id == ex[0]["id"])
    [inputs] = aux.inputs_for(strategy, [judged], leave_out=True)
    assert len(inputs.examples) == 4 and judged.id not in [e["id"] for e in inputs.examples]
    [inputs] = aux.inputs_for(strategy, [judged], leave_out=False)
    assert len(inputs.examples) == 5


def test_auxiliaries_are_generated_once_and_missing_ones_are_counted(store):
    def fn(messages, params):
        text = messages[-1]["content"]
        if "Propose at most three" in text:
            return "I have no questions." if "output number 1\n" in text or "source text 1" in text else "1. Q?"
        return responder(messages, params)

    llm, backend = make_fake(store, fn)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=_samples())
    strategy = ("10", "LLM", "Prefix", "AutoCoT", "Metrics", "NoExample", "Reference", "TEI")
    samples = _samples(6)
    first = aux.inputs_for(strategy, samples, leave_out=True)
    calls = len(backend.calls)
    # criteria, steps, then questions and references per distinct input (6 samples share 2 sources: sent once)
    assert calls == 1 + 1 + 2 + 2
    assert aux.inputs_for(strategy, samples, leave_out=True) == first and len(backend.calls) == calls
    assert first[0].criteria == "how complete and correct it is." and first[0].steps == "1. Read.\n2. Rate."
    assert [x is None for x in first] == [False, False, False, True, True, True]  # source text 1: no questions
    assert aux.failures == {"questions": 3}
    result = evaluate_strategy(strategy, samples, aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.missing_aux == 3 and all(math.isnan(x) for x in result.scores[3:])


def test_parse_questions_keeps_at_most_three():
    assert parse_questions("Sure:\n1. A?\n2) B?\n- C?\n4. D?") == "1. A?\n2. B?\n3. C?"
    assert parse_questions("[[4]]") is None


def test_unparsed_judge_reply_is_missing_never_a_number(store):
    llm, _ = make_fake(store, lambda m, p: "I cannot rate this." if "number 1\n" in m[-1]["content"] else "[[4]]")
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    result = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.unparsed == 1 and math.isnan(result.scores[1]) and result.scores[0] == 4.0


def test_a_reply_without_rating_gets_one_follow_up_and_only_then_is_missing(store):
    def fn(messages, params):
        if len(messages) > 2:  # the follow-up turn: item 1 answers with a number, item 2 still does not
            return "4" if "number 1\n" in messages[1]["content"] else "no idea"
        return "[[3]]" if "number 0\n" in messages[-1]["content"] else "I cannot rate this."

    backend = FakeBackend(fn, logprobs=True)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    result = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True, retry=True)
    # the fake puts 70% on "4" and 10% on each neighbour: probability-weighted 4.0 on the 5-point scale
    assert result.scores[0] == 3.0 and result.scores[1] == pytest.approx(4.0) and math.isnan(result.scores[2])
    assert result.retried == 2 and result.unparsed == 1
    follow_ups = [(m, p) for m, p in backend.calls if len(m) > 2]
    assert len(follow_ups) == 2 and all(p.max_tokens <= 8 and p.top_logprobs == 20 for _, p in follow_ups)
    assert "--- follow-up ---" in result.raw[1]
    # without retry the same replies stay missing, and nothing more is asked
    before = len(backend.calls)
    plain = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True, retry=False)
    assert plain.unparsed == 2 and plain.retried == 0 and len(backend.calls) == before


# --------------------------------------------------------------------------- the search (no LLM)


TRUE_GAIN = {(i, v): (j * 3.0 if i != 7 else -j) for i, (_, values) in enumerate(FACTORS) for j, v in enumerate(values)}


def synthetic(calls):
    def evaluate(strategy, stage):
        calls.append((strategy, stage))
        return sum(TRUE_GAIN[(i, v)] for i, v in enumerate(strategy))
    return evaluate


def test_initialization_makes_21_evaluations_with_zero_mean_advantages():
    calls = []
    state = initialize(BASE, synthetic(calls))
    assert len(calls) == 21 == len(state.perf) and {s for s, _ in calls} == set(state.perf)
    for i, (_, values) in enumerate(FACTORS):
        assert sum(state.A[(i, v)] for v in values) == pytest.approx(0)
        assert all(state.N[(i, v)] == 1 and state.M[(i, v)] == 1 for v in values)
    # one factor changed at a time: the advantage is the value's gain minus the factor mean
    assert state.A[(0, "100")] == pytest.approx(12 - 6)


def test_search_never_repeats_a_strategy_stops_at_budget_and_is_seeded():
    runs = []
    for _ in range(2):
        calls = []
        state = initialize(BASE, synthetic(calls))
        best = iterative_search(state, synthetic(calls), np.random.default_rng(3), population=5, mutations=2,
                                rho=0.2, tau=5.0, lam=4.0, budget=50)
        assert len(calls) == 71 == len({s for s, _ in calls}) and state.cost == 50
        assert best == state.best(1)[0] and state.perf[best] >= state.perf[BASE]
        runs.append([strategy_name(s) for s, _ in calls])
    assert runs[0] == runs[1]
    assert {stage for _, stage in calls} >= {"init", "explore", "exploit"}


def test_exploitation_picks_the_highest_total_advantage_unexplored_strategy():
    state = initialize(BASE, synthetic([]))
    target = max(all_strategies(), key=lambda s: sum(state.A[(i, v)] for i, v in enumerate(s)))
    assert exploit(state) == target
    state.perf[target] = 0.0
    second = exploit(state)
    assert second != target and second not in {s for s in state.perf if s != target}


def test_advantage_update_is_a_moving_average_then_recentred():
    state = SearchState(perf={BASE: 10.0})
    for i, (_, values) in enumerate(FACTORS):
        for v in values:
            state.A[(i, v)], state.N[(i, v)], state.M[(i, v)] = 0.0, 1, 1
    state.A[(0, "5")], state.A[(0, "3")] = 2.0, -2.0
    update_advantage(state, BASE, 0, "10", 20.0)
    # fresh sample 20 - (10 - 2) = 12, averaged with 0 over N=1 -> 6, then the factor mean 6/5 is removed
    assert state.A[(0, "10")] == pytest.approx(6 - 1.2) and state.N[(0, "10")] == 2
    assert sum(state.A[(0, v)] for v in FACTORS[0][1]) == pytest.approx(0)
    update_advantage(state, BASE, 0, "50", math.nan)  # undefined fitness: no evidence, nothing changes
    assert state.N[(0, "50")] == 1


def test_exploration_term_favours_rarely_seen_values():
    state = initialize(BASE, lambda s, stage: 0.0)  # all advantages 0
    state.cost = 10
    state.M[(0, "3")] = 50
    neigh, p = exploration_scores(state, BASE, tau=5.0, lam=4.0)
    assert p.sum() == pytest.approx(1) and len(neigh) == 20
    assert p[neigh.index((0, "3"))] < p[neigh.index((0, "10"))]


def test_greedy_and_stepwise_baselines_use_their_budgets():
    calls = []
    state = greedy_search(BASE, synthetic(calls), np.random.default_rng(0), budget=70)
    # stops at the budget, or earlier once every neighbour of its optimum is explored
    assert len(calls) <= 71 and len(calls) == len({s for s, _ in calls}) == state.cost + 1
    assert state.best(1)[0] == ("100", "LLM", "Free", "AutoCoT", "Metrics", "Example10", "Dialectic", "TEI")
    calls = []
    greedy_search(BASE, synthetic(calls), np.random.default_rng(0), budget=7)
    assert len(calls) == 8
    calls = []
    state = stepwise_greedy_search(BASE, synthetic(calls))
    assert len(calls) == 21
    assert state.best(1)[0] == ("100", "LLM", "Free", "AutoCoT", "Metrics", "Example10", "Dialectic", "TEI")


# --------------------------------------------------------------------------- the Method


def test_fit_logs_every_strategy_and_the_judge_scores_new_samples(store):
    llm, backend = make_fake(store)
    events = []
    method = HPSS(budget=10, seed=1)
    judge = method.fit(_samples()[:9], ASPECT, llm=llm, task=TASK, log=lambda k, p: events.append((k, p)))
    evaluated = [p for k, p in events if k == "hpss_evaluated"]
    assert len(evaluated) == 31 and len({p["strategy"] for p in evaluated}) == 31
    assert evaluated[0]["strategy"] == strategy_name(BASE)
    assert judge.state["fitness"] == max(p["fitness"] for p in evaluated if p["fitness"] is not None)
    assert any(k == "hpss_advantages" for k, _ in events) and any(k == "hpss_population" for k, _ in events)
    again = Judge.from_json(judge.to_json())
    verdicts = again.score(_samples()[9:], llm=llm)
    assert [v.sample_id for v in verdicts] == ["s9", "s10", "s11"]
    assert all(1 <= v.score <= 5 for v in verdicts)
    calls = len(backend.calls)
    HPSS(budget=10, seed=1).fit(_samples()[:9], ASPECT, llm=llm, task=TASK)  # everything cached
    assert len(backend.calls) == calls


def test_fixed_strategy_scores_without_search_and_bad_values_are_named(store):
    llm, _ = make_fake(store)
    name = "10_Human_Free_NoAutoCoT_NoMetrics_Example3_NoReference_ETI"
    judge = HPSS(fixed_strategy=name).fit(_samples()[:9], ASPECT, llm=llm, task=TASK)
    assert judge.state["strategy"] == name and len(judge.state["explored"]) == 1
    assert len(judge.state["examples"]) == 3
    prompt = HPSS.render(judge, _samples()[10], llm=llm)
    assert "from 1 to 10" in prompt and prompt.count("# Example") == 3
    with pytest.raises(ValueError, match="fixed_strategy"):
        HPSS(fixed_strategy="nope").fit(_samples()[:9], ASPECT, llm=llm, task=TASK)
    with pytest.raises(ValueError, match="validation_size"):
        HPSS(validation_size=1).fit(_samples()[:9], ASPECT, llm=llm, task=TASK)


def test_estimate_is_about_71_times_the_validation_size():
    est = HPSS().estimate_calls(100, 40)
    assert 71 * 100 <= est["fit"] <= 71 * 100 + 2 * 100 + 15
    assert HPSS(validation_size=10, budget=5).estimate_calls(100, 40)["fit"] <= 26 * 10 + 2 * 10 + 15
    assert HPSS(search="stepwise_greedy").estimate_calls(10, 0)["fit"] <= 21 * 10 + 35


# --------------------------------------------------------------------------- the real embedded model


def test_real_model_run_end_to_end_and_repeat_is_free(store, shared_data):
    from judge_engine import runs
    spec = runs.RunSpec(method="hpss", dataset="sfhot", aspect="naturalness", train_size=4, test_size=1,
                        seed=0, params={"validation_size": 2, "budget": 1, "judge_max_tokens": 16,
                                        "aux_max_tokens": 32})
    run_id = runs.create_run(store, spec)
    summary = runs.execute_run(store, run_id)
    run = store.get_run(run_id)
    assert run["status"] == "finished"
    evaluated = [e for e in store.events(run_id) if e["kind"] == "hpss_evaluated"]
    assert len(evaluated) == 22
    assert summary["calls"] > 0
    again = runs.create_run(store, spec)
    summary2 = runs.execute_run(store, again)
    assert summary2["calls"] == 0 and summary2["cache_hits"] > 0
    assert store.get_run(again)["judge"]["state"]["strategy"] == run["judge"]["state"]["strategy"]


def test_validation_subset_is_seeded_and_keeps_whole_groups_at_group_level():
    from judge_engine.methods.hpss import select_validation
    train = _samples(12)
    a = select_validation(train, 5, seed=3)
    assert len(a) == 5 and a == select_validation(train, 5, seed=3)
    g = select_validation(train, 5, seed=3, by_group=True)
    groups = {s.group_id for s in g}
    assert len(g) == 3 * len(groups) >= 5  # groups of three, never cut
    assert select_validation(train, None, seed=3) == train


def test_a_request_the_backend_rejects_is_missing_and_an_unreachable_backend_still_raises(store):
    from judge_engine.llm import BackendUnavailable, LLMError

    def fn(messages, params):
        if "output number 1\n" in messages[-1]["content"]:
            raise LLMError("prompt longer than the context window")
        return "[[2]]"

    llm, _ = make_fake(store, fn)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    result = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.scores[0] == 2.0 and math.isnan(result.scores[1]) and result.scores[2] == 2.0
    assert result.unparsed == 1

    def down(messages, params):
        raise BackendUnavailable("server not reachable")

    llm, _ = make_fake(store, down)
    with pytest.raises(BackendUnavailable):
        evaluate_strategy(BASE, _samples(2), Auxiliaries(llm=llm, aspect=ASPECT, task=TASK), llm=llm,
                          max_tokens=64, leave_out=True)


def test_natural_fitness_level_follows_the_dataset_passed_by_the_run(store, tiny_dataset):
    """tiny is group-level data: with the default fitness_level the run's natural level picks group Spearman."""
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.llm.fake import FakeBackend
    from judge_engine.runs import RunSpec, create_run, execute_run

    from judge_engine.methods import METHODS

    assert METHODS["hpss"].default_params()["fitness_level"] == "natural"
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="hpss", dataset="tiny", aspect="quality", train_size=6, test_size=3,
                                       params={"budget": 0}))
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(lambda m, p: "[[3]]"))
    execute_run(store, run_id, llm=llm)
    started = next(e for e in store.events(run_id) if e["kind"] == "hpss_started")
    assert started["payload"]["level"] == "group"
