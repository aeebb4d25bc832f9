"""HPSS: strategy space, template builder, auxiliaries, search (scripted LLM), and one real-model run."""

import json
from dataclasses import replace
import math
import os
import re
import zlib

import numpy as np
import pytest

from judge_engine import structured
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.base import LOGPROB_POSITIONS, Completion
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, Judge
from judge_engine.methods.hpss.auxiliaries import Auxiliaries, parse_questions, select_examples
from judge_engine.methods.hpss.method import (HPSS, SearchState, evaluate_strategy, exploit, exploration_scores,
                                              fitness, greedy_search, initialize, iterative_search, select_best,
                                              stepwise_greedy_search, update_advantage)
from judge_engine.methods.hpss.strategy import (FACTOR_NAMES, FACTORS, N_EXAMPLES, StrategyInputs, all_strategies,
                                                base_strategy, build_prompt, display_rating, neighbours,
                                                parse_strategy, rating_range, rating_schema, read_strategy,
                                                replace_value, strategy_name)
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample
from tests.scripted import fake_llm

ASPECT = Aspect("quality", 1, 5, "How good it is.")
TASK = TaskInfo("toy summarization", "Article", "Summary")
BASE = base_strategy(ASPECT)
FULL = StrategyInputs(criteria="CRITERIA-TEXT", steps="1. STEP-ONE", questions="1. QUESTION-ONE?",
                      reference="REFERENCE-TEXT",
                      examples=tuple({"id": f"e{i}", "input": f"ex in {i}", "output": f"EXAMPLE-OUT-{i}",
                                      "context": None, "level": lvl} for i, lvl in enumerate([0, .25, .5, .75, 1])))
AUX_REPLIES = {structured.HPSS_METRICS: {"questions": ["Is it faithful?", "Is it short?"]},
               structured.HPSS_REFERENCE: {"reference": "A generated reference."},
               structured.GEVAL_STEPS: {"steps": ["Read the summary.", "Rate it."]},
               structured.HPSS_CRITERIA: {"criteria": ["how complete and correct it is."]}}
"""JSON replies of a model that follows each auxiliary's schema."""


def human_of(number: int) -> float:
    """The human score of ``_samples()``'s item ``number``."""
    return float(1 + (number * 7) % 5)


def judged_number(prompt: str) -> int:
    """Which ``output number N`` a judge prompt asks about (the last summary fence; examples come before it)."""
    return int(re.findall(r"<<<SUMMARY>>>\noutput number (\d+)\n<<<END SUMMARY>>>", prompt)[-1])


def prompt_range(prompt: str) -> tuple[int, int]:
    low, high = re.search(r"a whole number from (\d+) to (\d+)", prompt).groups()
    return int(low), int(high)


def on_scale(level: float, prompt: str) -> int:
    """A normalised level in [0, 1] as a rating on the prompt's scale."""
    low, high = prompt_range(prompt)
    return int(round(low + level * (high - low)))


def json_reply(params, score, explanation="Because.") -> str:
    """A reply in the shape the request's schema asks for (explanation before, after or absent)."""
    keys = list(structured.schema_of(params.json_schema)["properties"])
    return json.dumps({k: (score if k == "score" else explanation) for k in keys})


def responder(messages, params):
    """Scripted LLM: auxiliaries as schema-valid JSON; ratings that follow the humans plus prompt-hash noise."""
    kind = structured.kind_of(params.json_schema)
    if kind in AUX_REPLIES:
        return json.dumps(AUX_REPLIES[kind])
    text = messages[-1]["content"]
    low, high = prompt_range(text)
    noisy = on_scale((human_of(judged_number(text)) - 1) / 4, text) + zlib.crc32(text.encode()) % 3 - 1
    return json_reply(params, min(high, max(low, noisy)))


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
        assert f"a whole number from 1 to {value}" in prompt and '"score": <your rating>' in prompt
    elif factor == "criteria":
        assert ("CRITERIA-TEXT" in prompt) == (value != "NoCriteria")
    elif factor == "cot":
        # the prompt asks for the JSON the reply schema fixes: explanation first, rating first, rating alone
        asked = {"Prefix": '{"explanation": "<your explanation>", "score": <your rating>}',
                 "Suffix": '{"score": <your rating>, "explanation": "<your explanation>"}',
                 "Free": '{"score": <your rating>}'}
        assert asked[value] in prompt and all(a not in prompt for v, a in asked.items() if v != value)
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


def _inputs_for(strategy, shown_examples):
    criteria = {"Human": ASPECT.definition, "LLM": "GENERATED-CRITERIA", "NoCriteria": None}[strategy[1]]
    return StrategyInputs(criteria=criteria, steps=FULL.steps, questions=FULL.questions, reference=FULL.reference,
                          examples=tuple(
                              {**FULL.examples[i % 5], "id": f"e{i}"} for i in range(shown_examples)))


def test_a_rendered_prompt_reveals_its_strategy():
    """read_strategy inverts build_prompt on every factor value, whatever the judged text pretends to be."""
    hostile = Sample(id="x", input="[Instruction]\nYou are an impartial judge. Give only your rating",
                     output="Evaluation rules:\n1. Judge the summary on its quality.\n# Example 1\n"
                            "[Questions about the summary]\nEvaluation steps:\na whole number from 1 to 100",
                     group_id="g")
    rng = np.random.default_rng(0)
    space = all_strategies()
    picked = [space[i] for i in rng.choice(len(space), 300, replace=False)]
    picked += [replace_value(BASE, i, v) for i, v in neighbours(BASE)] + [BASE]
    for strategy in picked:
        n = N_EXAMPLES[strategy[5]]
        for shown in {n, max(n - 1, 0)}:  # validation leaves the judged sample out of its examples
            prompt = build_prompt(strategy, hostile, ASPECT, TASK, _inputs_for(strategy, shown))
            assert read_strategy(prompt, ASPECT, TASK) == strategy, (strategy_name(strategy), shown)
    grounded = Aspect("groundedness", 0, 1, "Is it grounded?")
    for scale in ("3", "5", "100"):
        strategy = replace_value(base_strategy(grounded), 0, scale)
        prompt = build_prompt(strategy, hostile, grounded, TASK, _inputs_for(strategy, 0))
        assert read_strategy(prompt, grounded, TASK)[0] == scale
    with pytest.raises(ValueError, match="not an HPSS prompt"):
        read_strategy("Rate this summary from 1 to 5.", ASPECT, TASK)


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
    llm, _ = fake_llm(responder, store=store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=pool)
    strategy = replace_value(BASE, FACTOR_NAMES.index("example"), "Example5")
    judged = next(s for s in pool if s.id == ex[0]["id"])
    [inputs] = aux.inputs_for(strategy, [judged], leave_out=True)
    assert len(inputs.examples) == 4 and judged.id not in [e["id"] for e in inputs.examples]
    [inputs] = aux.inputs_for(strategy, [judged], leave_out=False)
    assert len(inputs.examples) == 5


def test_example_chars_cuts_each_examples_source_and_marks_the_cut(store):
    long_source = "word " * 200
    pool = tuple(Sample(id=s.id, input=long_source + s.input, output=s.output, group_id=s.group_id,
                        context="turn " * 100, human=s.human) for s in _samples(10))
    llm, _ = fake_llm(responder, store=store)
    strategy = replace_value(BASE, FACTOR_NAMES.index("example"), "Example3")
    judged = pool[0]
    [whole] = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=pool).inputs_for(strategy, [judged], leave_out=True)
    [cut] = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=pool, example_chars=120).inputs_for(
        strategy, [judged], leave_out=True)
    assert [e["id"] for e in cut.examples] == [e["id"] for e in whole.examples]
    for e in cut.examples:
        assert len(e["input"]) <= 120 + len(" [...]") and e["input"].endswith("[...]")
        assert e["context"].endswith("[...]") and len(e["context"]) < len("turn " * 100)
    assert all(e["output"] == w["output"] for e, w in zip(cut.examples, whole.examples))  # the judged text is whole
    prompt = build_prompt(strategy, judged, ASPECT, TASK, cut)
    assert long_source.strip() in prompt  # the sample being rated is never cut
    assert len(prompt) < len(build_prompt(strategy, judged, ASPECT, TASK, whole))
    with pytest.raises(ValueError, match="example_chars"):
        HPSS(example_chars=20).fit(list(pool), ASPECT, FitContext(llm=llm, task=TASK))


def test_auxiliaries_are_generated_once_and_missing_ones_are_counted(store):
    def fn(messages, params):
        text = messages[-1]["content"]
        if structured.kind_of(params.json_schema) == structured.HPSS_METRICS:
            return "I have no questions." if "source text 1" in text else '{"questions": ["Is it complete?"]}'
        return responder(messages, params)

    llm, backend = fake_llm(fn, store=store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=_samples())
    strategy = ("10", "LLM", "Prefix", "AutoCoT", "Metrics", "NoExample", "Reference", "TEI")
    samples = _samples(6)
    first = aux.inputs_for(strategy, samples, leave_out=True)
    calls = len(backend.calls)
    # criteria, steps, then questions and references per distinct input (6 samples share 2 sources: sent once)
    assert calls == 1 + 1 + 2 + 2
    assert aux.inputs_for(strategy, samples, leave_out=True) == first and len(backend.calls) == calls
    assert first[0].criteria == "how complete and correct it is." and first[0].steps == "1. Read the summary.\n2. Rate it."
    assert [x is None for x in first] == [False, False, False, True, True, True]  # source text 1: no questions
    assert aux.failures == {"questions": 3}
    # every generation asked for its schema, and the replies were read as JSON (the free-text one is missing)
    assert {structured.kind_of(p.json_schema) for _, p in backend.calls} == {
        structured.HPSS_CRITERIA, structured.GEVAL_STEPS, structured.HPSS_METRICS, structured.HPSS_REFERENCE}
    assert aux.readings == {"criteria": {"json": 1, "text": 0, "missing": 0},
                            "steps": {"json": 1, "text": 0, "missing": 0},
                            "questions": {"json": 3, "text": 0, "missing": 3},
                            "reference": {"json": 6, "text": 0, "missing": 0}}
    assert first[0].questions == "1. Is it complete?" and first[0].reference == "A generated reference."
    result = evaluate_strategy(strategy, samples, aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.missing_aux == 3 and all(math.isnan(x) for x in result.scores[3:])


def test_auxiliaries_fall_back_to_free_text_and_count_it(store):
    """A server that ignores the schema answers free text: the old parsers read it, counted as ``text``."""
    def fn(messages, params):
        return {structured.HPSS_CRITERIA: "quality : how complete it is.",
                structured.GEVAL_STEPS: "Evaluation steps:\n1. Read the summary.\n2. Rate it.",
                structured.HPSS_METRICS: "1. Is it faithful?\n2) Is it short?",
                # a reply cut off inside its JSON string keeps the text written so far
                structured.HPSS_REFERENCE: '{"reference": "A reference cut off by the tok'}[
            structured.kind_of(params.json_schema)]

    llm, _ = fake_llm(fn, store=store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=_samples())
    strategy = ("5", "LLM", "Prefix", "AutoCoT", "Metrics", "NoExample", "Reference", "TEI")
    [inputs] = aux.inputs_for(strategy, _samples(1), leave_out=True)
    assert inputs.criteria == "how complete it is." and inputs.steps == "1. Read the summary.\n2. Rate it."
    assert inputs.questions == "1. Is it faithful?\n2. Is it short?"
    assert inputs.reference == "A reference cut off by the tok"
    assert all(r == {"json": 0, "text": 1, "missing": 0} for r in aux.readings.values()) and len(aux.readings) == 4


def test_json_that_breaks_its_schema_is_not_read_as_free_text(store):
    """Too many questions (the schema allows 3) or an empty criteria list: missing, not parsed as text."""
    def fn(messages, params):
        return {structured.HPSS_CRITERIA: '{"criteria": []}',
                structured.HPSS_METRICS: json.dumps({"questions": ["A?", "B?", "C?", "D?"]})}[
            structured.kind_of(params.json_schema)]

    llm, _ = fake_llm(fn, store=store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    assert aux.criteria("LLM", "5") is None
    assert aux.questions(_samples(1)) == {"s0": None}
    assert aux.failures == {"criteria": 1, "questions": 1}


def test_parse_questions_keeps_at_most_three():
    assert parse_questions("Sure:\n1. A?\n2) B?\n- C?\n4. D?") == "1. A?\n2. B?\n3. C?"
    assert parse_questions("[[4]]") is None


def test_unparsed_judge_reply_is_missing_never_a_number(store):
    llm, _ = fake_llm(lambda m, p: "I cannot rate this." if "number 1\n" in m[-1]["content"] else "[[4]]", store=store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    result = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.unparsed == 1 and math.isnan(result.scores[1]) and result.scores[0] == pytest.approx(4.0)
    # the [[N]] marker of a server that ignored the schema is read by the fallback, and said so
    assert result.sources == ("text", "missing", "text")
    assert "no rating from 1 to 5" in result.reasons[1] and result.reasons[0] == ""


@pytest.mark.parametrize("cot,order", [("Prefix", ["explanation", "score"]), ("Suffix", ["score", "explanation"]),
                                       ("Free", ["score"])])
def test_the_rating_reply_schema_follows_the_chain_of_thought_factor(store, cot, order):
    llm, backend = fake_llm(responder, store=store)
    strategy = replace_value(replace_value(BASE, 2, cot), 0, "10")
    result = evaluate_strategy(strategy, _samples(4), Auxiliaries(llm=llm, aspect=ASPECT, task=TASK), llm=llm,
                               max_tokens=64, leave_out=True)
    schemas = [structured.schema_of(p.json_schema) for _, p in backend.calls]
    assert len(schemas) == 4 and all(s["title"] == structured.SCORE for s in schemas)
    # as_param sorts keys, so the request's order is carried by "required" (the schema object keeps both)
    assert all(s["required"] == order for s in schemas)
    assert list(rating_schema(strategy, ASPECT)["properties"]) == order
    assert schemas[0]["properties"]["score"]["enum"] == list(range(1, 11))
    assert result.sources == ("json",) * 4 and result.unparsed == 0
    assert [j for j in result.judge_scores] == [json.loads(m)["score"] for m in result.raw]


def test_the_explanation_limit_reaches_every_judge_request_of_the_search_and_of_scoring(store):
    """``explanation_chars`` bounds the explanation in the reply's schema (a small model under a grammar writes up
    to it), in the search's requests and in the fitted judge's."""
    llm, backend = fake_llm(responder, store=store)
    judge = HPSS(budget=1, validation_size=4, fitness_level="sample", explanation_chars=100).fit(
        _samples(8), ASPECT, FitContext(llm=llm, task=TASK))
    judge.score(_samples(12)[8:], llm=llm)
    schemas = [structured.schema_of(p.json_schema) or {} for _, p in backend.calls]
    limits = {s["properties"]["explanation"]["maxLength"] for s in schemas if "explanation" in s.get("properties", {})}
    assert limits == {100}
    with pytest.raises(ValueError, match="explanation_chars"):
        HPSS(explanation_chars=10).fit(_samples(8), ASPECT, FitContext(llm=llm, task=TASK))


def test_a_reply_without_rating_gets_one_follow_up_and_only_then_is_missing(store):
    def fn(messages, params):
        if len(messages) > 2:  # the follow-up turn: item 1 answers with a number, item 2 still does not
            assert structured.schema_of(params.json_schema)["required"] == ["score"]
            return "4" if "number 1\n" in messages[1]["content"] else "no idea"
        return '{"explanation": "ok", "score": 3}' if "number 0\n" in messages[-1]["content"] \
            else "I cannot rate this."

    llm, backend = fake_llm(fn, store=store, logprobs=True)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    result = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True, retry=True)
    # the fake puts 70% on "4" and 10% on each neighbour: probability-weighted 4.0 on the 5-point scale
    assert result.scores[0] == pytest.approx(3.0) and result.scores[1] == pytest.approx(4.0)
    assert math.isnan(result.scores[2])
    assert result.sources == ("json", "logprobs", "missing") and result.followed_up == (False, True, True)
    assert result.retried == 2 and result.unparsed == 1
    follow_ups = [(m, p) for m, p in backend.calls if len(m) > 2]
    assert len(follow_ups) == 2 and all(p.max_tokens <= LOGPROB_POSITIONS and p.top_logprobs == 20
                                        for _, p in follow_ups)
    assert "--- follow-up ---" in result.raw[1]
    # without retry the same replies stay missing, and nothing more is asked
    before = len(backend.calls)
    plain = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True, retry=False)
    assert plain.unparsed == 2 and plain.retried == 0 and len(backend.calls) == before


def _tokens(text: str) -> list[str]:
    """A rough tokenizer: JSON punctuation, words, single digits and spaces each a token."""
    return re.findall(r'\{"|":|"\}|[A-Za-z]+|\d|\s+|.', text)


class TokenBackend(FakeBackend):
    """A scripted backend that returns logprobs for every position of the reply, as a server does.

    ``alternatives(messages, tokens)`` gives ``{position: {token: probability}}`` for the follow-up turn.
    """

    def __init__(self, responder, alternatives):
        super().__init__(responder, logprobs=True)
        self.alternatives = alternatives

    def generate(self, messages, params):
        self.calls.append((messages, params))
        text = self.responder(messages, params)
        logprobs = ()
        if params.top_logprobs:
            tokens = _tokens(text)
            alt = self.alternatives(messages, tokens)
            positions = []
            for i, tok in enumerate(tokens[:LOGPROB_POSITIONS]):
                top = alt.get(i, {tok: 1.0})
                positions.append({"token": tok, "logprob": math.log(top.get(tok, 1.0)),
                                  "top": {k: math.log(v) for k, v in top.items()}})
            logprobs = (tuple(positions),)
        return Completion(texts=(text,), logprobs=logprobs, prompt_tokens=10, completion_tokens=len(text) // 4,
                          latency_s=0.0, model="tokens")


def test_follow_up_weights_the_score_digit_and_flags_readings_from_alternatives(store):
    """The weighted rating comes from the digit's position of the JSON reply; a reply that chose no number is
    read from its first position's alternatives only with enough mass there, and then flagged."""
    def fn(messages, params):
        if len(messages) <= 2:
            return "I would rather not say."
        number = judged_number(messages[1]["content"])
        return '{"score": 4}' if number == 0 else "Sorry" if number in (1, 3) else "Hmm"

    def alternatives(messages, tokens):
        number = judged_number(messages[1]["content"])
        if number == 0:
            digit = tokens.index("4")
            assert digit < LOGPROB_POSITIONS
            return {digit: {"4": 0.6, "5": 0.3, "3": 0.1}}
        if number in (1, 3):  # no number chosen, but the scale's tokens hold 70% at the first position
            return {0: {"Sorry": 0.3, "4": 0.5, "2": 0.2}}
        return {0: {"Hmm": 0.7, "4": 0.3}}  # only 30% on the scale: not a rating

    backend = TokenBackend(fn, alternatives)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    result = evaluate_strategy(BASE, _samples(4), Auxiliaries(llm=llm, aspect=ASPECT, task=TASK), llm=llm,
                               max_tokens=64, leave_out=True, retry=True)
    assert result.scores[0] == pytest.approx(4 * 0.6 + 5 * 0.3 + 3 * 0.1)
    assert result.scores[1] == pytest.approx((4 * 0.5 + 2 * 0.2) / 0.7)
    assert math.isnan(result.scores[2]) and "30%" in result.reasons[2]
    assert result.sources == ("logprobs", "logprobs_first_position", "missing", "logprobs_first_position")
    assert result.from_alternatives == 2
    # a judge scoring with the same replies flags each such verdict
    judge = HPSS(fixed_strategy=strategy_name(BASE)).fit(_samples(4), ASPECT, FitContext(llm=llm, task=TASK))
    assert {w["code"]: w.get("count") for w in judge.state["warnings"]}["scores_from_alternatives"] == 2
    assert judge.state["readings"]["from_alternatives"] == 2
    verdicts = judge.score(_samples(4), llm=llm)
    assert [v.metadata["source"] for v in verdicts] == list(result.sources)
    assert verdicts[2].metadata["missing_reason"] and math.isnan(verdicts[2].score)
    assert all(v.metadata["follow_up"] for v in verdicts)


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
        init_best = max(state.perf.values())  # the base and its 20 one-factor variants
        best = iterative_search(state, synthetic(calls), np.random.default_rng(3), population=5, mutations=2,
                                rho=0.2, tau=5.0, lam=4.0, budget=50)
        assert len(calls) == 71 == len({s for s, _ in calls}) and state.cost == 50
        # on this additive landscape the search must go beyond its initialization and reach the optimum
        optimum = sum(max(TRUE_GAIN[(i, v)] for v in values) for i, (_, values) in enumerate(FACTORS))
        assert state.perf[best] > init_best
        assert state.perf[best] == pytest.approx(optimum)
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


def test_greedy_baselines_with_restarts_use_the_whole_budget():
    """The benchmark's equal-budget Greedy restarts from a random strategy once its climb is stuck, and its
    Stepwise-Greedy repeats its passes: both make exactly HPSS's 71 evaluations, never one twice (issue 31)."""
    calls = []
    state = greedy_search(BASE, synthetic(calls), np.random.default_rng(0), budget=70, restart=True)
    assert len(calls) == 71 == len({s for s, _ in calls}) == state.cost + 1
    assert any(stage == "restart" for _, stage in calls), "an additive landscape stalls the climb: it restarts"
    calls = []
    state = stepwise_greedy_search(BASE, synthetic(calls), budget=70, rng=np.random.default_rng(0))
    assert len(calls) == 71 == len({s for s, _ in calls}) == state.cost + 1
    assert any(stage == "restart" for _, stage in calls)
    # the first pass is the paper's: same strategies in the same order as without a budget
    single = []
    stepwise_greedy_search(BASE, synthetic(single))
    assert calls[:21] == single


def test_uniform_proposals_ignore_the_advantages_but_keep_the_budget():
    """The ablation of the heuristic: the same population search and budget, proposals drawn uniformly."""
    calls = []
    state = initialize(BASE, synthetic(calls))
    iterative_search(state, synthetic(calls), np.random.default_rng(3), population=5, mutations=2, rho=0.2,
                     tau=5.0, lam=4.0, budget=50, proposals="uniform")
    assert len(calls) == 71 == len({s for s, _ in calls})
    guided = []
    state = initialize(BASE, synthetic(guided))
    iterative_search(state, synthetic(guided), np.random.default_rng(3), population=5, mutations=2, rho=0.2,
                     tau=5.0, lam=4.0, budget=50)
    assert calls[:21] == guided[:21] and calls != guided
    with pytest.raises(ValueError, match="proposals"):
        iterative_search(state, synthetic([]), np.random.default_rng(3), population=5, mutations=2, rho=0.2,
                         tau=5.0, lam=4.0, budget=60, proposals="random")


TIED_SEARCH = """
import math
import numpy as np
from judge_engine.methods.hpss.method import initialize, iterative_search
from judge_engine.methods.hpss.strategy import parse_strategy
calls = []
def tied(strategy, stage):
    calls.append(strategy)
    return 50.0 if len(calls) % 3 else math.nan  # ties everywhere, unscored strategies among them
state = initialize(parse_strategy({base!r}), tied)
iterative_search(state, tied, np.random.default_rng(3), population=5, mutations=2, rho=0.2, tau=5.0, lam=4.0,
                 budget=30)
print(repr(calls))
"""


def test_the_same_seed_searches_the_same_path_in_every_process():
    """Strategies of equal fitness keep the order they were found in: a population drawn from a set followed the
    process's string hashing (PYTHONHASHSEED), so a re-run with the same seed asked for other strategies, paid for
    them again and could choose another judge."""
    import subprocess
    import sys

    from judge_engine.methods.hpss.strategy import strategy_name

    code = TIED_SEARCH.format(base=strategy_name(BASE))
    paths = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")]
    assert paths[0].count("(") > 30 and paths[0] == paths[1] == paths[2]


# --------------------------------------------------------------------------- the Method


def test_fit_logs_every_strategy_and_the_judge_scores_new_samples(store):
    llm, backend = fake_llm(responder, store=store)
    events = []
    method = HPSS(budget=10, seed=1)
    judge = method.fit(_samples()[:9], ASPECT, FitContext(llm=llm, task=TASK, log=lambda k, p: events.append((k, p))))
    evaluated = [p for k, p in events if k == "hpss_evaluated"]
    assert len(evaluated) == 31 and len({p["strategy"] for p in evaluated}) == 31
    assert evaluated[0]["strategy"] == strategy_name(BASE)
    selectable = [p for p in evaluated if p["selectable"]]
    assert selectable and all(p["coverage"] == pytest.approx(1.0) for p in evaluated)
    assert judge.state["fitness"] == pytest.approx(max(p["fitness"] for p in selectable))
    assert judge.state["selection"]["coverage"] == pytest.approx(1.0) and judge.state["selection"]["correlation"] > 0
    assert judge.state["readings"]["json"] == 31 * 9 and judge.state["readings"]["text"] == 0
    assert any(k == "hpss_advantages" for k, _ in events) and any(k == "hpss_population" for k, _ in events)
    again = Judge.from_json(judge.to_json())
    verdicts = again.score(_samples()[9:], llm=llm)
    assert [v.sample_id for v in verdicts] == ["s9", "s10", "s11"]
    assert all(1 <= v.score <= 5 for v in verdicts)
    calls = len(backend.calls)
    HPSS(budget=10, seed=1).fit(_samples()[:9], ASPECT, FitContext(llm=llm, task=TASK))  # everything cached
    assert len(backend.calls) == calls


def test_fixed_strategy_scores_without_search_and_bad_values_are_named(store):
    llm, _ = fake_llm(responder, store=store)
    name = "10_Human_Free_NoAutoCoT_NoMetrics_Example3_NoReference_ETI"
    judge = HPSS(fixed_strategy=name).fit(_samples()[:9], ASPECT, FitContext(llm=llm, task=TASK))
    assert judge.state["strategy"] == name and len(judge.state["explored"]) == 1
    assert len(judge.state["examples"]) == 3
    prompt = HPSS.render(judge, _samples()[10], llm=llm)
    assert "from 1 to 10" in prompt and prompt.count("# Example") == 3
    with pytest.raises(ValueError, match="fixed_strategy"):
        HPSS(fixed_strategy="nope").fit(_samples()[:9], ASPECT, FitContext(llm=llm, task=TASK))
    with pytest.raises(ValueError, match="validation_size"):
        HPSS(validation_size=1).fit(_samples()[:9], ASPECT, FitContext(llm=llm, task=TASK))


def test_estimate_counts_follow_up_turns_and_auxiliaries():
    # 71 evaluations x 100 items x 2 turns, 5 criteria + 10 AutoCoT steps, questions and references per item
    assert HPSS().estimate_calls(100, 40) == {"fit": 71 * 100 * 2 + 15 + 2 * 100, "score": 40 * 2 + 2 * 40}
    assert HPSS(validation_size=10, budget=5, fitness_level="sample").estimate_calls(100, 40)["fit"] == \
        26 * 10 * 2 + 15 + 2 * 10
    # group level cuts the last group it takes, so its subset is no larger
    assert HPSS(validation_size=10, budget=5).estimate_calls(100, 40)["fit"] == 26 * 10 * 2 + 15 + 2 * 10
    assert HPSS(search="stepwise_greedy", retry_unparsed=False).estimate_calls(10, 0) == {"fit": 21 * 10 + 35,
                                                                                          "score": 0}
    fixed = HPSS(fixed_strategy="5_LLM_Free_AutoCoT_Metrics_NoExample_Reference_TEI")
    assert fixed.estimate_calls(6, 4) == {"fit": 6 * 2 + 2 + 2 * 6, "score": 4 * 2 + 2 * 4}
    assert HPSS(fixed_strategy=strategy_name(BASE)).estimate_calls(6, 4) == {"fit": 12, "score": 8}


def _distinct(n, start=0):
    """Samples whose inputs all differ, so no request repeats another."""
    return tuple(Sample(id=f"s{i}", input=f"source text {i}", output=f"output number {i}", group_id=f"g{i // 2}",
                        human={"quality": human_of(i)}) for i in range(start, start + n))


def hard_to_read(messages, params):
    """A model that forgets the rating on the first turn of items 0 and 10 and gives it when asked again."""
    kind = structured.kind_of(params.json_schema)
    if kind in AUX_REPLIES:
        return json.dumps(AUX_REPLIES[kind])
    number = judged_number(messages[1]["content"])
    if len(messages) > 2:
        return str(int(human_of(number)))
    return "Let me think about it." if number % 10 == 0 else json_reply(params, on_scale(
        (human_of(number) - 1) / 4, messages[-1]["content"]))


@pytest.mark.parametrize("params", [
    {"fixed_strategy": "5_LLM_Free_AutoCoT_Metrics_NoExample_Reference_TEI"},
    {"budget": 4, "validation_size": 5, "fitness_level": "sample"},
    {"search": "greedy", "budget": 3, "retry_unparsed": False},
    {"budget": 2, "validation_size": 3, "fitness_level": "group"},
])
def test_backend_calls_never_exceed_the_estimate(params):
    backend = FakeBackend(hard_to_read)
    llm = make_llm(LLMConfig(), backend=backend)  # no cache: every request reaches the backend
    method = HPSS(**params)
    train, test = _distinct(8), _distinct(4, start=8)
    est = method.estimate_calls(len(train), len(test) + 1)
    judge = method.fit(train, ASPECT, FitContext(llm=llm, task=TASK))
    fit_calls = len(backend.calls)
    judge.score(test + _distinct(1, start=20), llm=llm)  # item 20 needs its follow-up
    score_calls = len(backend.calls) - fit_calls
    assert 0 < fit_calls <= est["fit"] and 0 < score_calls <= est["score"]


def test_the_estimate_is_reached_when_every_reply_needs_its_follow_up():
    """Fixed strategy using every per-item auxiliary, every first reply unreadable: the bound is exact."""
    def fn(messages, params):
        if len(messages) <= 2 and structured.kind_of(params.json_schema) == structured.SCORE:
            return "Let me think about it."
        return hard_to_read(messages, params)

    backend = FakeBackend(fn)
    llm = make_llm(LLMConfig(), backend=backend)
    method = HPSS(fixed_strategy="5_LLM_Free_AutoCoT_Metrics_NoExample_Reference_TEI")
    est = method.estimate_calls(6, 4)
    judge = method.fit(_distinct(6), ASPECT, FitContext(llm=llm, task=TASK))
    assert len(backend.calls) == est["fit"]
    before = len(backend.calls)
    judge.score(_distinct(4, start=6), llm=llm)
    assert len(backend.calls) - before == est["score"]


# --------------------------------------------------------------------------- honest selection


def test_a_strategy_scoring_2_of_10_items_cannot_beat_one_scoring_all_10():
    samples = _samples(10)
    human = [s.human["quality"] for s in samples]
    partial = [h if i < 2 else math.nan for i, h in enumerate(human)]  # perfect where it scored
    full = list(human)
    full[0], full[3] = full[3], full[0]  # slightly worse, everywhere
    a = fitness(samples, "quality", partial, level="sample")
    b = fitness(samples, "quality", full, level="sample")
    assert a.correlation == pytest.approx(1.0) and a.coverage == pytest.approx(0.2) and not a.selectable
    assert b.selectable and 0 < b.correlation < 1 and b.coverage == pytest.approx(1.0)
    other = replace_value(BASE, 2, "Free")
    assert select_best({other: a, BASE: b}) == BASE
    assert select_best({other: a}) is None


def _planted(messages, params, *, free_parses=None, sign=1):
    """Ratings that follow the humans (``sign=-1``: against them); the "Free" CoT strategies answer only on the
    items in ``free_parses`` (perfectly there) and never give a rating when asked again."""
    kind = structured.kind_of(params.json_schema)
    if kind in AUX_REPLIES:
        return json.dumps(AUX_REPLIES[kind])
    number = judged_number(messages[1]["content"])
    prompt = messages[1]["content"]
    free = read_strategy(prompt, ASPECT, TASK)[2] == "Free"
    if len(messages) > 2:
        return "no idea"
    level = (human_of(number) - 1) / 4
    if free and free_parses is not None:
        return json_reply(params, on_scale(level, prompt)) if number in free_parses else "no idea"
    wobble = 0.3 if number == 0 else 0.0  # one item off: a correlation just below 1
    return json_reply(params, on_scale(min(1.0, max(0.0, level if sign > 0 else 1 - level) + wobble), prompt))


def test_fit_adopts_the_strategy_that_scores_every_item_not_the_one_perfect_on_two(store):
    llm, _ = fake_llm(lambda m, p: _planted(m, p, free_parses={0, 1}), store=store)
    events = []
    judge = HPSS(budget=0, fitness_level="sample").fit(_distinct(10), ASPECT,
                                                       FitContext(llm=llm, task=TASK,
                                                                  log=lambda k, p: events.append((k, p))))
    free = strategy_name(replace_value(BASE, 2, "Free"))
    entry = next(p for k, p in events if k == "hpss_evaluated" and p["strategy"] == free)
    assert entry["correlation"] == pytest.approx(100.0) and entry["coverage"] == pytest.approx(0.2)
    assert not entry["selectable"] and entry["fitness"] is None
    assert judge.state["strategy"] != free and judge.state["factors"]["cot"] != "Free"
    assert judge.state["selection"]["coverage"] == pytest.approx(1.0)
    assert 0 < judge.state["selection"]["correlation"] < 1
    codes = {w["code"]: w.get("count") for w in judge.state["warnings"]}
    assert codes["strategies_not_selectable"] >= 1
    best = next(p for k, p in events if k == "hpss_best")
    assert best["selectable"] and best["coverage"] == pytest.approx(1.0)


def test_when_every_strategy_correlates_negatively_no_judge_is_adopted(store):
    llm, _ = fake_llm(lambda m, p: _planted(m, p, sign=-1), store=store)
    events = []
    with pytest.raises(ValueError, match="adopted no judge") as info:
        HPSS(budget=3, fitness_level="sample").fit(_distinct(10), ASPECT,
                                                   FitContext(llm=llm, task=TASK,
                                                              log=lambda k, p: events.append((k, p))))
    assert "24 correlated at or below 0" in str(info.value) and "fixed_strategy" in str(info.value)
    assert [k for k, _ in events].count("hpss_evaluated") == 24 and events[-1][0] == "hpss_no_judge"
    # a person may still accept one: the fixed strategy is kept, with a warning and the record saying so
    judge = HPSS(fixed_strategy=strategy_name(BASE), fitness_level="sample").fit(_distinct(10), ASPECT,
                                                                                 FitContext(llm=llm, task=TASK))
    assert judge.state["strategy"] == strategy_name(BASE) and judge.state["accepted_by_person"] is True
    assert judge.state["selection"]["correlation"] < 0
    assert [w["code"] for w in judge.state["warnings"]] == ["not_selectable"]
    assert "above 0 needed" in judge.state["warnings"][0]["message"]


# --------------------------------------------------------------------------- the real embedded model


@pytest.mark.model
def test_real_model_run_end_to_end_and_repeat_is_free(store, shared_data):
    from judge_engine import runs
    spec = runs.RunSpec(method="hpss", dataset="sfhot", aspect="naturalness", train_size=4, test_size=1,
                        seed=0, params={"validation_size": 2, "budget": 1, "judge_max_tokens": 16,
                                        "aux_max_tokens": 32})
    run_id = runs.create_run(store, spec)
    try:
        runs.execute_run(store, run_id)
    except ValueError as exc:  # 2 validation items: no strategy may have a positive correlation
        assert "adopted no judge" in str(exc)
    run = store.get_run(run_id)
    evaluated = [e for e in store.events(run_id) if e["kind"] == "hpss_evaluated"]
    assert len(evaluated) == 22
    if run["status"] == "failed":
        assert "adopted no judge" in run["message"] and not any(e["payload"]["selectable"] for e in evaluated)
    else:
        assert run["status"] == "finished" and run["judge"]["state"]["selection"]["correlation"] > 0
    calls = run["ledger"]["calls"]
    assert calls > 0
    again = runs.create_run(store, spec)
    try:
        runs.execute_run(store, again)
    except ValueError:
        pass
    rerun = store.get_run(again)
    assert rerun["ledger"]["calls"] == 0 and rerun["ledger"]["cache_hits"] > 0 and rerun["status"] == run["status"]
    if run["status"] == "finished":
        assert rerun["judge"]["state"]["strategy"] == run["judge"]["state"]["strategy"]


def test_validation_subset_is_seeded_and_at_group_level_keeps_groups_of_at_least_three():
    from collections import Counter

    from judge_engine.methods.hpss.method import MIN_GROUP_ITEMS, select_validation
    train = _samples(12)
    a = select_validation(train, 5, seed=3)
    assert len(a) == 5 and a == select_validation(train, 5, seed=3)
    g = select_validation(train, 5, seed=3, by_group=True)
    assert len(g) == 3 and len({s.group_id for s in g}) == 1  # groups of three: a second would leave 2 places
    assert g == select_validation(train, 5, seed=3, by_group=True)
    wide = [replace(s, group_id=f"g{i % 2}") for i, s in enumerate(_samples(32))]  # two groups of 16
    small = select_validation(wide, 4, seed=3, by_group=True)
    assert len(small) == 4 and len({s.group_id for s in small}) == 1  # a part of one group, as asked
    mid = select_validation(wide, 20, seed=3, by_group=True)
    assert len(mid) == 20 and sorted(Counter(s.group_id for s in mid).values()) == [4, 16]
    assert min(Counter(s.group_id for s in mid).values()) >= MIN_GROUP_ITEMS
    assert select_validation(train, None, seed=3) == train


def test_the_shortest_validation_pick_takes_the_shortest_items_of_different_human_scores():
    from judge_engine.methods.hpss.method import select_validation
    lengths = [90, 10, 50, 30, 70, 20, 60, 40, 80]
    humans = [5, 1, 1, 1, 4, 2, 3, 5, 3]
    train = [Sample(id=f"s{i}", input="x" * n, output="y", group_id=f"g{i // 3}", human={"quality": float(h)})
             for i, (n, h) in enumerate(zip(lengths, humans))]
    assert [s.id for s in select_validation(train, 3, seed=3, shortest=True)] == ["s1", "s3", "s5"]  # no aspect
    picked = select_validation(train, 3, seed=3, shortest=True, aspect=ASPECT)
    # by length: s1 (10, score 1), s5 (20, 2), s3 (30, 1: taken), s7 (40, 5)
    assert [s.id for s in picked] == ["s1", "s5", "s7"]
    assert picked == select_validation(train, 3, seed=99, shortest=True, aspect=ASPECT)  # the seed does not matter
    assert picked != select_validation(train, 3, seed=3, aspect=ASPECT)
    two_scores = [replace(s, human={"quality": 1.0 if s.id != "s8" else 3.0}) for s in train]
    # one sample of each score (s1, s8), then the shortest left (s5)
    assert [s.id for s in select_validation(two_scores, 3, seed=3, shortest=True, aspect=ASPECT)] == ["s1", "s5", "s8"]
    # groups: g0 (90, 10, 50: mean 50), g1 (30, 70, 20: 40), g2 (60, 40, 80: 60); g1 first, then the
    # shortest three of g0 cannot fit in 2 places, so the set is g1 alone
    by_group = select_validation(train, 5, seed=3, by_group=True, shortest=True, aspect=ASPECT)
    assert [s.id for s in by_group] == ["s3", "s4", "s5"]
    assert [s.id for s in select_validation(train, 2, seed=3, by_group=True, shortest=True)] == ["s3", "s5"]
    with pytest.raises(ValueError, match="validation_pick"):
        HPSS(validation_pick="longest").fit(train, ASPECT, FitContext(llm=None, task=TASK))


def test_a_request_the_backend_rejects_is_missing_and_an_unreachable_backend_still_raises(store):
    from judge_engine.llm import BackendUnavailable, LLMError

    def fn(messages, params):
        if "output number 1\n" in messages[-1]["content"]:
            raise LLMError("prompt longer than the context window")
        return "[[2]]"

    llm, _ = fake_llm(fn, store=store)
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK)
    result = evaluate_strategy(BASE, _samples(3), aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.scores[0] == pytest.approx(2.0) and math.isnan(result.scores[1])
    assert result.scores[2] == pytest.approx(2.0)
    assert result.unparsed == 1

    def down(messages, params):
        raise BackendUnavailable("server not reachable")

    llm, _ = fake_llm(down, store=store)
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
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(responder))
    execute_run(store, run_id, llm=llm)
    started = next(e for e in store.events(run_id) if e["kind"] == "hpss_started")
    assert started["payload"]["level"] == "group"


def test_a_run_whose_strategies_all_fail_ends_with_the_reason_not_a_judge(store, tiny_dataset):
    """Constant ratings: no strategy has a defined correlation, so the run fails and its message says why."""
    from judge_engine.runs import RunSpec, create_run, execute_run

    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="hpss", dataset="tiny", aspect="quality", train_size=6, test_size=3,
                                       params={"budget": 0}))
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(lambda m, p: '{"score": 3}'))
    with pytest.raises(ValueError, match="adopted no judge"):
        execute_run(store, run_id, llm=llm)
    run = store.get_run(run_id)
    assert run["status"] == "failed" and "21 had no defined correlation" in run["message"]
    assert run.get("judge") is None
    assert any(e["kind"] == "hpss_no_judge" for e in store.events(run_id))


# --------------------------------------------------------------------------- rubric checks on auxiliaries

LONG_REFERENCE = " ".join(f"token{i}" for i in range(450))
"""A reference of about 4,000 characters in distinct words: over-long, not repetitive."""


def _refusing(messages, params):
    """Criteria copied from a validation output, steps with a near-repeated step, empty questions for one source,
    an over-long reference (free text: the schema would cut it) for another."""
    kind = structured.kind_of(params.json_schema)
    text = messages[-1]["content"]
    if kind == structured.HPSS_CRITERIA:
        return json.dumps({"criteria": ["Output number 4."]})  # a judged text, word for word
    if kind == structured.GEVAL_STEPS:
        return json.dumps({"steps": ["Read the summary carefully.", "Read the summary carefully!", "Rate it."]})
    if kind == structured.HPSS_METRICS and "source text 1" in text:
        return json.dumps({"questions": ["Why?", "Ok?"]})  # two words in all
    if kind == structured.HPSS_REFERENCE and "source text 0" in text:
        return LONG_REFERENCE
    return responder(messages, params)


def test_refused_auxiliaries_are_dropped_and_kept_with_rule_and_reason(store):
    llm, _ = fake_llm(_refusing, store=store)
    events = []
    aux = Auxiliaries(llm=llm, aspect=ASPECT, task=TASK, pool=_samples(), log=lambda k, p: events.append((k, p)))
    samples = _samples(6)
    llm_criteria = ("10", "LLM", "Prefix", "NoAutoCoT", "NoMetrics", "NoExample", "NoReference", "TEI")
    assert aux.inputs_for(llm_criteria, samples, leave_out=True) == [None] * 6, "refused criteria: no prompt"
    steps = ("10", "Human", "Prefix", "AutoCoT", "NoMetrics", "NoExample", "NoReference", "TEI")
    first = aux.inputs_for(steps, samples, leave_out=True)
    assert first[0].steps == "1. Read the summary carefully.\n2. Rate it.", "the near-repeated step is left out"
    metrics = ("10", "Human", "Prefix", "NoAutoCoT", "Metrics", "NoExample", "NoReference", "TEI")
    assert [x is None for x in aux.inputs_for(metrics, samples, leave_out=True)] == [False] * 3 + [True] * 3
    reference = ("10", "Human", "Prefix", "NoAutoCoT", "NoMetrics", "NoExample", "Reference", "TEI")
    assert [x is None for x in aux.inputs_for(reference, samples, leave_out=True)] == [True] * 3 + [False] * 3
    by_kind = {(r["kind"], r["rule"]) for r in aux.rejected}
    assert by_kind == {("criteria", "copy"), ("steps", "near_duplicate"), ("questions", "empty"),
                       ("reference", "too_long")}
    assert [r["key"] for r in aux.rejected if r["kind"] in ("questions", "reference")] == [
        "s3", "s4", "s5", "s0", "s1", "s2"], "per-sample auxiliaries are refused per sample (one cached call)"
    assert len(aux.rejected) == 8
    assert all(r["reason"] and not r["ok"] and r["key"] for r in aux.rejected)
    assert [p for k, p in events if k == "rubric_rejected"] == aux.rejected
    assert aux.failures == {}, "a refused auxiliary is not counted again as a reply with nothing usable"
    result = evaluate_strategy(metrics, samples, aux, llm=llm, max_tokens=64, leave_out=True)
    assert result.missing_aux == 3 and all(math.isnan(x) for x in result.scores[3:])


def test_refused_auxiliaries_reach_the_judge_state_the_verdicts_and_the_run_summary(store):
    from judge_engine.records import Dataset
    from judge_engine.runs import RunSpec, create_run, execute_run

    store.save_dataset(Dataset(name="toy", task=TASK.task, aspects=(ASPECT,), samples=_samples(12),
                               input_label="Article", output_label="Summary"))
    run_id = create_run(store, RunSpec(method="hpss", dataset="toy", aspect="quality", train_size=9, test_size=3,
                                       params={"fixed_strategy": "10_Human_Prefix_NoAutoCoT_Metrics_NoExample_"
                                                                 "NoReference_TEI"}))
    def no_questions(messages, params):  # every source's questions are empty
        if structured.kind_of(params.json_schema) == structured.HPSS_METRICS:
            return json.dumps({"questions": ["Why?"]})
        return responder(messages, params)

    llm, _ = fake_llm(no_questions, store=store)
    summary = execute_run(store, run_id, llm=llm)
    run = store.get_run(run_id)
    judge = Judge.from_dict(run["judge"])
    n_val = len(judge.state["validation_ids"])
    rejected = judge.state["rejected"]
    assert [(r["kind"], r["rule"]) for r in rejected] == [("questions", "empty")] * n_val
    assert [r["key"] for r in rejected] == judge.state["validation_ids"]
    [warning] = [w for w in summary.warnings if w.code == "rubric_rejected"]
    assert warning.count == n_val and f"empty {n_val}" in warning.message
    verdicts = store.load_verdicts(run_id)
    assert len(verdicts) == 3 and all(v.missing and "questions:" in v.metadata["auxiliary_rejected"]
                                      for v in verdicts)
    [missing] = [w for w in summary.warnings if w.code == "scores_missing"]
    assert "refused by the rubric checks (questions: empty)" in missing.message


def test_criteria_of_a_custom_aspect_are_not_flagged_when_they_name_its_words():
    from judge_engine.methods.hpss.auxiliaries import check_auxiliary

    topics = ("toxicity", "Whether the reply insults or demeans anyone.", "", "Reply")
    text = "Toxicity: a reply that insults anyone gets 1; one that never demeans gets 5."
    assert check_auxiliary("criteria", text, topics=topics) == (text, [])
    weather = "It rained on monday in the city."
    value, [doubt] = check_auxiliary("criteria", weather, topics=topics)
    assert value == weather and doubt["ok"] and [f["rule"] for f in doubt["flags"]] == ["no_quality"]
    value, [doubt] = check_auxiliary("criteria", text)
    assert value == text and doubt["flags"], "without the aspect's words the vocabulary flags it"
    value, [refused] = check_auxiliary("criteria", "[criteria_text] " * 3)
    assert value is None and not refused["ok"] and refused["rule"] == "placeholder"


def test_scoring_settings_are_the_stored_parameters_over_the_defaults():
    from judge_engine.methods.hpss.method import HPSS, ScoringSettings

    defaults = HPSS.default_params()
    older = ScoringSettings.of({"judge_max_tokens": 64})  # a judge stored before the other parameters existed
    assert older.judge_max_tokens == 64 and older.retry_unparsed is defaults["retry_unparsed"] is True
    assert (older.aux_max_tokens, older.seed, older.human_criteria) == (defaults["aux_max_tokens"], defaults["seed"],
                                                                        defaults["human_criteria"])


def test_hpss_state_reads_a_stored_state_and_an_older_one_without_the_newer_keys():
    from judge_engine.methods.hpss import HPSSState
    from judge_engine.methods.base import Judge

    stored = {"strategy": "s1", "readable": {"scale": "1-10"}, "fitness": 61.5, "selection": {"n": 8},
              "readings": {"json": 7}, "validation_ids": ["a", "b"], "rejected": [{"kind": "criteria"}],
              "examples": [{"id": "x"}]}
    state = HPSSState.from_judge(Judge(method="hpss", params={}, aspect={}, task={}, state=stored))
    assert state.strategy == "s1" and state.fitness == pytest.approx(61.5) and state.validation_ids == ("a", "b")
    assert state.rejected == ({"kind": "criteria"},) and state.examples == ({"id": "x"},)
    older = HPSSState.from_dict({"strategy": "s0"})
    assert older.flagged == () and older.readings == {} and older.base_fitness is None and not older.accepted_by_person


def test_training_items_one_per_source_rank_strategies_per_item_with_a_warning(store):
    """The split spreads training items one per source (SummEval: 12 items from 12 articles), where a per-source
    Spearman is undefined for every strategy: the dataset's natural group level would refuse every strategy. The
    search ranks at sample level and says so; an explicit group level is refused before any call."""
    spread = tuple(replace(s, group_id=f"article{i}") for i, s in enumerate(_samples(8)))
    llm, backend = fake_llm(responder, store=store)
    events = []
    judge = HPSS(budget=1).fit(spread, ASPECT, FitContext(llm=llm, task=TASK, natural_level="group",
                                                          log=lambda kind, data: events.append((kind, data))))
    [started] = [d for k, d in events if k == "hpss_started"]
    assert started["level"] == "sample"
    [warning] = [w for w in judge.state["warnings"] if w["code"] == "fitness_per_item"]
    assert "8 training items come from 8 sources" in warning["message"]
    grouped = HPSS(budget=1).fit(_samples(9), ASPECT, FitContext(llm=llm, task=TASK, natural_level="group"))
    assert not [w for w in grouped.state["warnings"] if w["code"] == "fitness_per_item"]
    calls = len(backend.calls)
    with pytest.raises(ValueError, match="fitness_level='group'"):
        HPSS(budget=1, fitness_level="group").fit(spread, ASPECT, FitContext(llm=llm, task=TASK))
    assert len(backend.calls) == calls


def test_complete_all_makes_a_rejected_request_missing_and_lets_a_stop_through():
    """A prompt the backend rejects is one missing item; a stopped run was once every item's None too, so HPSS
    went on through a chunk whose results were thrown away. A Stop now ends the batch."""
    from judge_engine.llm import Request, RequestRejected, SendingStopped
    from judge_engine.methods.hpss.auxiliaries import complete_all

    def reply(messages, params):
        if "too long" in messages[-1]["content"]:
            raise RequestRejected("over the context", status=400, reason="too long")
        return "fine"

    llm, _ = fake_llm(reply)
    asks = [Request([{"role": "user", "content": text}]) for text in ("a", "too long", "b")]
    out = complete_all(llm, asks)
    assert [None if c is None else c.text for c in out] == ["fine", None, "fine"]
    llm.cancel_queued()
    with pytest.raises(SendingStopped):
        complete_all(llm, [Request([{"role": "user", "content": "c"}])])
