"""Active-Critic: every stage with a scripted LLM, human edits as parameters, and one run on the embedded model."""

import json
import math
import re

import pytest

from judge_engine.llm import GenerationParams, LedgerTotals, LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, Judge, get_method
from judge_engine.methods import active_critic as ac
from judge_engine.methods.active_critic.examples import _example
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample
from judge_engine.runs import RunSpec, create_run, execute_run

CRITERIA = {"Coverage": "Keeps the main points.", "Accuracy": "States only what the source says.",
            "Fluency": "Reads naturally.", "Conciseness": "No padding."}
DESCRIPTION = ("1. Text summarization.\n4. The evaluation task is text summarization, which refers to evaluating "
               "summaries generated from news articles. The relationship between 'Source' and 'Response' is that "
               "the response condenses the source.")


def _number(prompt):
    """The output number of the judged item (the last Response fence in the prompt)."""
    return int(re.findall(r"output number (\d+)", prompt)[-1])


def scripted(observe="The scores reward short faithful outputs.", criteria_observe="Fluency matters more.",
             init=None, refine=None, overall=None):
    """A fake LLM answering each prompt kind of the method; overall(prompt) gives the OS-E score."""
    init = init if init is not None else json.dumps({"Criteria": dict(list(CRITERIA.items())[:3]) | {"Style": "x"},
                                                     "Observations": "short is good"})
    refine = refine if refine is not None else json.dumps(CRITERIA)

    def responder(messages, params):
        prompt = messages[-1]["content"]
        if "could not be read as the requested JSON" in prompt:
            return refine(messages[0]["content"]) if callable(refine) else refine
        if "Add new observations" in prompt:
            return observe(prompt) if callable(observe) else observe
        if "Complete this summary" in prompt:
            return DESCRIPTION
        if "Study how the quality" in prompt:
            return init
        if "Check two things" in prompt:
            return criteria_observe(prompt) if callable(criteria_observe) else criteria_observe
        if "Improve the criteria" in prompt:
            return refine(prompt) if callable(refine) else refine
        if "Multiple Evaluation Criteria" in prompt:
            n = _number(prompt)
            return json.dumps({name: {"Explanation": f"{name} is fine for {n}", "Score": 10 * (n % 10)}
                               for name in CRITERIA})
        if "Score Of Overall" in prompt:
            score = overall(prompt) if overall else 10 * (_number(prompt) % 10)
            return f"Explanation: it is item {_number(prompt)}; shorten it.\nScore Of Overall: {score}"
        return "?"

    return responder


def llm_with(store, responder, concurrency=4):
    backend = FakeBackend(responder)
    return make_llm(LLMConfig(concurrency=concurrency), store=store, backend=backend), backend


@pytest.fixture
def data():
    """Twenty samples whose human quality rises with the output number (1-5 scale)."""
    samples = tuple(Sample(id=f"s{i}", input=f"source text {i}", output=f"output number {i}", group_id=f"g{i}",
                           system_id=f"sys{i % 3}", human={"quality": 1 + 4 * (i % 10) / 9}) for i in range(20))
    return samples, Aspect("quality", 1, 5, "How good it is."), TaskInfo("news summarization")


def _examples(samples, aspect):
    return [_example(s, aspect) for s in samples]


def test_scores_are_normalised_to_0_100_by_the_papers_ratio_and_mapped_back():
    aspect = Aspect("quality", 1, 5)
    # the paper's reading (spec §2.2: 53/12 of 5 -> 88.33): 100 * r / r_max
    assert ac.normalize_score(1, aspect) == pytest.approx(20.0)
    assert ac.normalize_score(5, aspect) == pytest.approx(100.0)
    assert ac.normalize_score(53 / 12, aspect) == pytest.approx(88.3333, abs=1e-4)
    assert ac.to_aspect_scale(80, aspect) == pytest.approx(4.0) and math.isnan(ac.to_aspect_scale(math.nan, aspect))
    assert ac.to_aspect_scale(10, aspect) == pytest.approx(0.5), "linear inverse, not clipped to the scale"
    # min-max stays an option
    assert ac.normalize_score(1, aspect, "minmax") == pytest.approx(0.0)
    assert ac.normalize_score(4, aspect, "minmax") == pytest.approx(75.0)
    assert ac.to_aspect_scale(75, aspect, "minmax") == pytest.approx(4.0)
    for mode in ac.NORMALIZATIONS:
        assert ac.to_aspect_scale(ac.normalize_score(3.5, aspect, mode), aspect, mode) == pytest.approx(3.5)
    with pytest.raises(ValueError, match="positive scale maximum"):
        ac.normalize_score(-1, Aspect("signed", -3, 0))
    assert get_method("active_critic", {}).score_normalization == "ratio"


def test_minibatches_of_five_at_most_the_cap(data):
    samples, _, _ = data
    batches = ac.make_minibatches(samples, batch_size=5, max_batches=25, seed=0)
    assert [len(b) for b in batches] == [5, 5, 5, 5]
    assert sorted(s.id for b in batches for s in b) == sorted(s.id for s in samples)
    assert len(ac.make_minibatches(samples, batch_size=5, max_batches=2, seed=0)) == 2
    assert ac.make_minibatches(samples, batch_size=5, max_batches=25, seed=0) == batches
    assert ac.make_minibatches(samples, batch_size=5, max_batches=25, seed=1) != batches


def test_demo_count_follows_the_task():
    assert ac.demo_count(TaskInfo("news summarization")) == 3
    assert ac.demo_count(TaskInfo("knowledge-grounded dialogue")) == 3
    assert ac.demo_count(TaskInfo("data-to-text (restaurants)")) == 8


def test_task_description_stops_after_five_consecutive_complete(store, data):
    samples, aspect, _ = data
    batches = [_examples(samples[i:i + 1], aspect) for i in range(12)]
    # batch 1 observes, 2-3 COMPLETE (streak broken by 4), then five COMPLETE in a row: stop after batch 9
    answers = {1: "Outputs are short.", 4: "Longer is worse."}

    def observe(prompt):
        n = int(re.search(r"source text (\d+)", prompt).group(1))
        return answers.get(n + 1, "COMPLETE.")

    llm, backend = llm_with(store, scripted(observe=observe))
    events = []
    inferred = ac.infer_task_description(
        batches, llm=llm, params=GenerationParams(temperature=1.0), source_chars=2000, complete_streak=5,
        log=lambda k, p: events.append((k, p)))
    description, versions = inferred.description, inferred.versions
    observed = [p for k, p in events if k == "task_observation"]
    assert [p["batch"] for p in observed] == list(range(1, 10))
    assert [p["complete"] for p in observed] == [False, True, True, False, True, True, True, True, True]
    assert len(versions) == 2 and sum(1 for k, _ in events if k == "task_description") == 2
    assert description.startswith("The evaluation task is text summarization")
    assert ac.task_phrase(description) == "a text summarization"
    # the second description prompt carries the first description as the prior one
    describe_prompts = [m[-1]["content"] for m, _ in backend.calls if "Complete this summary" in m[-1]["content"]]
    assert "(none yet)" in describe_prompts[0] and "The evaluation task is" in describe_prompts[1]


def test_task_descriptions_of_all_batches_are_ensembled_into_the_final_one(store, data):
    samples, aspect, _ = data
    batches = [_examples(samples[i:i + 5], aspect) for i in (0, 5, 10)]

    def describe(messages, params):
        prompt = messages[-1]["content"]
        if "Version 3:" in prompt:
            return "4. The evaluation task is news summarization, merged from every version."
        if "Complete this summary" in prompt:
            return f"4. The evaluation task is summarization, draft {prompt.count('draft') + 1}."
        return "Outputs are short."

    llm, backend = llm_with(store, describe, concurrency=1)
    events = []
    inferred = ac.infer_task_description(batches, llm=llm, params=GenerationParams(), source_chars=2000,
                                         complete_streak=5, ensemble=True,
                                         log=lambda k, p: events.append((k, p)))
    description, versions = inferred.description, inferred.versions
    assert description == "The evaluation task is news summarization, merged from every version."
    assert len(versions) == 4 and len(backend.calls) == 7  # 3 observations, 3 descriptions, 1 ensemble
    merge = backend.calls[-1][0][-1]["content"]
    assert all(f"Version {i}: {v}" in merge for i, v in enumerate(versions[:3], 1))
    assert [p.get("ensemble", False) for k, p in events if k == "task_description"] == [False, False, False, True]
    llm, backend = llm_with(store, describe, concurrency=1)
    assert ac.infer_task_description(batches[:1], llm=llm, params=GenerationParams(max_tokens=96), source_chars=2000,
                                     complete_streak=5, ensemble=True).versions == ["The evaluation task is summarization, draft 1."]
    assert len(backend.calls) == 2, "a single version needs no ensemble call"
    method = get_method("active_critic", {})
    assert method.estimate_calls(15, 0)["fit"] - get_method(
        "active_critic", {"ensemble_task": False}).estimate_calls(15, 0)["fit"] == 1


def test_task_phrase_without_a_summary_sentence():
    assert ac.task_phrase("no idea") == "an NLG"
    assert ac.extract_task_description("no idea") == "no idea"
    assert ac.task_phrase("The evaluation task is [essay scoring], which") == "an essay scoring"


def test_criteria_init_observe_refine_and_stopping(store, data):
    samples, aspect, _ = data
    batches = [_examples(samples[i:i + 2], aspect) for i in range(0, 20, 2)]  # 10 batches
    seen = {"n": 0}

    def criteria_observe(prompt):
        seen["n"] += 1
        return "Accuracy needs care." if seen["n"] == 1 else "COMPLETE"

    llm, backend = llm_with(store, scripted(criteria_observe=criteria_observe), concurrency=1)
    events = []
    defined = ac.define_criteria(batches, ac.extract_task_description(DESCRIPTION), llm=llm, params=GenerationParams(),
                                 source_chars=2000, complete_streak=5,
                                 log=lambda k, p: events.append((k, p)))
    criteria, failures = defined.criteria, defined.parse_failures
    assert criteria == CRITERIA and failures == 0
    kinds = [(k, p.get("action")) for k, p in events if k == "criteria"]
    assert kinds == [("criteria", "init"), ("criteria", "refine")]
    refine = [p for k, p in events if k == "criteria"][1]
    assert refine["added"] == ["Conciseness"] and refine["removed"] == ["Style"]
    # one observation refined, then five COMPLETE in a row: 1 init + 6 observe + 1 refine calls
    assert sum(1 for k, _ in events if k == "criteria_observation") == 6
    assert len(backend.calls) == 8
    init_prompt = backend.calls[0][0][0]["content"]
    assert "from a text summarization evaluation dataset" in init_prompt and "Task description: The evaluation" in init_prompt
    refine_prompt = next(m[0]["content"] for m, _ in backend.calls if "Improve the criteria" in m[0]["content"])
    assert "Accuracy needs care." in refine_prompt, "refine uses the new observation (Eq. 8)"


def test_unparsable_criteria_are_retried_once_then_the_previous_set_is_kept(store, data):
    samples, aspect, _ = data
    batches = [_examples(samples[:5], aspect), _examples(samples[5:10], aspect)]
    llm, backend = llm_with(store, scripted(refine="I think the criteria are fine."), concurrency=1)
    events = []
    defined = ac.define_criteria(batches, "", llm=llm, params=GenerationParams(), source_chars=2000,
                                 complete_streak=5, log=lambda k, p: events.append((k, p)))
    criteria, failures = defined.criteria, defined.parse_failures
    assert set(criteria) == {"Coverage", "Accuracy", "Fluency", "Style"} and failures == 1
    refine_event = [p for k, p in events if k == "criteria"][-1]
    assert refine_event["parsed"] is False and refine_event["retried"] is True
    retry = [m for m, _ in backend.calls if len(m) == 3]
    assert len(retry) == 1 and retry[0][1]["role"] == "assistant"
    assert "from an NLG evaluation dataset" in backend.calls[0][0][0]["content"]


def test_criteria_parsing_accepts_both_shapes_and_caps_at_ten():
    assert ac.parse_criteria_and_observations('{"Criteria": {"A": "a"}, "Observations": "o"}') == ({"A": "a"}, "o")
    assert ac.parse_criteria_and_observations('```json\n{"A": "a", "B": {"description": "b"}}\n```') == (
        {"A": "a", "B": "b"}, "")
    assert ac.parse_criteria_and_observations("no json") == ({}, "")


def test_criteria_scores_parse_json_and_the_papers_unquoted_form():
    names = ["Coherence", "Conciseness", "Fluency"]
    parsed = ac.parse_criteria_scores(json.dumps({"coherence": {"Explanation": "flows", "Score": "90"},
                                                  "Conciseness": 70, "Fluency": {"Score": 140}}), names)
    assert parsed["Coherence"] == {"score": pytest.approx(90.0), "explanation": "flows"}
    assert parsed["Conciseness"]["score"] == pytest.approx(70.0)
    assert math.isnan(parsed["Fluency"]["score"]), "out of range is missing, not clipped to a default"
    paper = ("Coherence: { explanation: The response is coherent. score: 90 }\n"
             "Conciseness: { explanation: Brief. score: 85 }")
    parsed = ac.parse_criteria_scores(paper, names)
    assert parsed["Coherence"]["score"] == pytest.approx(90) and parsed["Conciseness"]["score"] == pytest.approx(85)
    assert "coherent" in parsed["Coherence"]["explanation"]
    assert math.isnan(parsed["Fluency"]["score"])
    nested = ac.parse_criteria_scores(json.dumps({"Scores": {"Fluency": {"Score": 60}}}), names)
    assert nested["Fluency"]["score"] == pytest.approx(60)


@pytest.mark.parametrize("reply,score", [
    ("Explanation: good.\nScore Of Overall: 85", 85.0),
    ("**Explanation:** good.\n**Overall Score:** 90.0", 90.0),
    ("Explanation: a score of 30 would be unfair.\nScore Of Overall: [72]", 72.0),
    ("[[4]]", 4.0),
])
def test_overall_score_parsing(reply, score):
    parsed, explanation = ac.parse_overall(reply)
    assert parsed == pytest.approx(score)
    if reply.startswith("Explanation"):
        assert explanation.startswith(("good", "a score of 30"))


def test_overall_score_missing_is_nan():
    assert math.isnan(ac.parse_overall("I cannot rate this.")[0])
    assert math.isnan(ac.parse_overall("Score Of Overall: 250")[0])


def test_fine_and_coarse_scoring_calls(store, data):
    samples, aspect, _ = data
    state = {"variant": "fine", "task_description": "T.", "criteria": CRITERIA}
    llm, backend = llm_with(store, scripted())
    results = ac.run_pipeline(_examples(samples[:3], aspect), state, [], llm=llm, params=GenerationParams(),
                              source_chars=2000)
    assert len(backend.calls) == 6
    assert results[2]["overall"] == pytest.approx(20)
    assert results[2]["criteria_scores"]["Coverage"]["score"] == pytest.approx(20)
    ose = [m[0]["content"] for m, _ in backend.calls if "Score Of Different Criteria" in m[0]["content"]]
    assert len(ose) == 3 and '"Coverage is fine for' in "".join(ose), "OS-E sees the McS-E explanations"
    coarse = {**state, "variant": "coarse"}
    llm, backend = llm_with(store, scripted())
    results = ac.run_pipeline(_examples(samples[:3], aspect), coarse, [], llm=llm, params=GenerationParams(seed=1),
                              source_chars=2000)
    assert len(backend.calls) == 3 and results[1]["criteria_scores"] == {}
    assert "Evaluation Criteria:\nCoverage: Keeps the main points." in backend.calls[0][0][0]["content"]


def test_candidate_selection_by_summed_correlation(store, data):
    samples, aspect, _ = data
    examples = _examples(samples, aspect)
    state = {"variant": "coarse", "task_description": "T.", "criteria": CRITERIA}

    # Only prompts whose demos include one chosen item score in line with the humans.
    drawn = ac.propose_candidates(examples, {}, k=6, n_demos=3, mode="labeled", threshold=15, seed=0)
    target = drawn[2][1][0]["sample_id"]
    marker = f"output number {target[1:]}\n"

    def overall(prompt):
        n = _number(prompt)
        good = "Example 1:" in prompt and marker in prompt.split("Now the item")[0]
        return 10 * (n % 10) if good else 50 + (7 * n) % 13

    llm, _ = llm_with(store, scripted(overall=overall))
    events = []
    found = ac.optimize_demonstrations(
        examples, state, llm=llm, k=6, n_demos=3, mode="labeled", threshold=15, eval_subsample=None, seed=0,
        params=GenerationParams(), source_chars=2000, log=lambda k, p: events.append((k, p)))
    demos, search, warnings = found.demos, found.search, found.warnings
    assert len(search) == 6 and search[0]["kind"] == "zero-shot" and search[0]["demo_ids"] == []
    qs = [s["q"] for s in search]
    best = max(range(6), key=lambda i: (qs[i], -i))
    assert [d["sample_id"] for d in demos] == search[best]["demo_ids"] and warnings == []
    assert target in search[best]["demo_ids"] and qs[best] == pytest.approx(3), "the helpful demo set wins"
    for s in search:
        assert s["q"] == pytest.approx(s["pearson"] + s["spearman"] + s["kendall"])
        assert s["n_items"] == 20 - len(s["demo_ids"]), "a candidate's own demos are not scored"
        assert s["n_scored"] == s["n_items"] and s["coverage"] == pytest.approx(1.0)
        assert s["fitness"] == pytest.approx(s["q"])
    assert [p["candidate"] for k, p in events if k == "candidate"] == list(range(6))
    assert [p for k, p in events if k == "demos_selected"][0]["candidate"] == best


def test_bootstrapped_candidates_reuse_accepted_zero_shot_traces(data):
    samples, aspect, _ = data
    examples = _examples(samples, aspect)
    traces = {e["sample_id"]: {"overall": e["human_100"] + (5 if i % 2 else 40), "explanation": "why",
                               "criteria_scores": {"Coverage": {"score": 50.0, "explanation": "ok"}}}
              for i, e in enumerate(examples)}
    candidates = ac.propose_candidates(examples, traces, k=11, n_demos=3, mode="bootstrap", threshold=15, seed=0)
    assert len(candidates) == 11 and candidates[0] == ("zero-shot", [])
    assert candidates[1][0] == "labeled" and all(d["kind"] == "labeled" for d in candidates[1][1])
    for kind, demos in candidates[2:]:
        assert kind == "bootstrap" and len(demos) == 3
        boot = [d for d in demos if d["kind"] == "bootstrapped"]
        assert boot and all(int(d["sample_id"][1:]) % 2 == 1 for d in boot), "only traces within 15 points"
        assert boot[0]["overall"] == traces[boot[0]["sample_id"]]["overall"]
    text = ac.render_demos(candidates[2][1], stage="ose", source_chars=2000)
    assert "Score Of Different Criteria:" in text and 'Reply: {"explanation": "why", "overall":' in text
    coarse_trace = {**candidates[2][1][0], "kind": "bootstrapped", "criteria_scores": {}, "explanation": "ok",
                    "overall": 60.0}
    text = ac.render_demos([coarse_trace], stage="ose", source_chars=2000)
    assert "Score Of Different Criteria" not in text and text.rstrip().endswith("Now the item to evaluate:")
    assert '"overall": 60}' in text and "Human Score" not in text
    assert ac.propose_candidates(examples, traces, k=4, n_demos=3, mode="bootstrap", threshold=15, seed=0) \
        == candidates[:4]


def test_eval_subsample_limits_the_candidate_evaluation(store, data):
    samples, aspect, _ = data
    llm, backend = llm_with(store, scripted())
    state = {"variant": "coarse", "task_description": "T.", "criteria": CRITERIA}
    search = ac.optimize_demonstrations(_examples(samples, aspect), state, llm=llm, k=3, n_demos=2,
                                        mode="labeled", threshold=15, eval_subsample=6, seed=0,
                                        params=GenerationParams(), source_chars=2000).search
    assert search[0]["n_items"] == 6, "zero-shot scores the whole subsample"
    assert all(4 <= s["n_items"] <= 6 for s in search[1:]), "a set's own demos (2) leave the subsample"
    assert sum(s["n_items"] for s in search) == len(backend.calls), "one coarse call per scored item, no more"


def test_fit_and_score_end_to_end_with_events(store, data):
    samples, aspect, task = data
    # with demonstrations the scripted judge agrees with the humans, without them it does not
    llm, backend = llm_with(store, scripted(overall=lambda p: 10 * (_number(p) % 10) if "Example 1:" in p
                                            else 50 + (7 * _number(p)) % 13))
    events = []
    method = get_method("active_critic", {"n_candidates": 3, "seed": 0})
    judge = method.fit(samples[:15], aspect, FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    fit_calls = len(backend.calls)
    # stage 1: 3 observations + 3 descriptions + 1 ensemble, 1 init + 2 x (observe + refine); the init's
    # "Style: x" is refused by the rubric checks, so 3 of its criteria count: a follow-up turn and the two
    # fallback prompts are asked (this script answers none of them);
    # search: zero-shot on 15 items and two 3-demo sets on 12, two calls each (AC-Fine)
    assert fit_calls == 7 + 5 + 3 + 2 * (15 + 12 + 12) <= method.estimate_calls(15, 5)["fit"]
    assert judge.state["criteria"] == CRITERIA and judge.state["task_description"].startswith("The evaluation task")
    assert len(judge.state["demos"]) == 3 and len(judge.state["search"]) == 3
    kinds = {k for k, _ in events}
    assert {"task_observation", "task_description", "criteria", "criteria_observation", "candidate",
            "demos_selected"} <= kinds
    verdicts = judge.score(samples[15:], llm=llm)
    # every reply had a score: no follow-up turn; the estimate counts one per item on top
    assert len(backend.calls) - fit_calls == 10 and method.estimate_calls(15, 5)["score"] == 15
    v = verdicts[2]  # s17: the scripted judge says 70 -> 5 * 0.7 on the 1-5 scale (100 * r / r_max)
    assert v.score == pytest.approx(3.5) and v.metadata["overall_100"] == pytest.approx(70)
    assert v.criteria["Coverage"] == pytest.approx(3.5) and v.metadata["criteria_100"]["Coverage"] == pytest.approx(70)
    assert v.metadata["source"] == "text" and v.metadata["read"] == "text", "free-text replies: the fallback read them"
    assert v.metadata["criteria_explanations"]["Coverage"] == "Coverage is fine for 17"
    assert v.explanation.startswith("it is item 17") and v.metadata["missing_criteria"] == []
    again = Judge.from_json(judge.to_json())
    new = [Sample(id="new", input="source text 99", output="output number 4", group_id="n")]
    assert again.score(new, llm=llm)[0].score == pytest.approx(5 * 0.4)
    assert judge.state["warnings"] == [] and judge.state["reads"]["criteria"] == {"text": 3}


def test_unparsed_replies_are_missing_and_counted(store, data):
    samples, aspect, task = data
    llm, _ = llm_with(store, lambda m, p: "I would rather not.")
    events = []
    with pytest.raises(ValueError, match="no usable judge.*zero-shot: no Q"):
        get_method("active_critic", {"n_candidates": 2}).fit(samples[:10], aspect,
                                                             FitContext(llm=llm, task=task,
                                                                        log=lambda k, p: events.append((k, p))))
    assert [p["candidate"] for k, p in events if k == "demos_selected"] == [None]
    # "I would rather not." read as a task description says nothing about the task: used, with its flag logged
    assert [p["code"] for k, p in events if k == "warning"] == ["no_criteria"]
    [doubt] = [p for k, p in events if k == "rubric_flagged"]
    assert doubt["stage"] == "task description" and [f["rule"] for f in doubt["flags"]] == ["no_quality"]
    # a person may keep the zero-shot judge anyway; the judge says so
    judge = get_method("active_critic", {"n_candidates": 2, "no_positive_set": "zero_shot"}).fit(
        samples[:10], aspect, FitContext(llm=llm, task=task))
    assert judge.state["criteria"] == {} and judge.state["criteria_parse_failures"] == 2  # init and one refine
    assert [w["code"] for w in judge.state["warnings"]] == ["no_criteria",
                                                             "selection_fallback"]
    assert judge.state["task_description"] == "I would rather not."
    assert judge.state["flagged"][0]["text"] == "I would rather not." and judge.state["flagged"][0]["flags"]
    assert "no_positive_set='zero_shot'" in judge.state["warnings"][1]["message"]
    first = judge.state["search"][0]
    assert first["n_items"] == 10 and first["n_scored"] == 0 and first["n_missing"] == 10
    assert first["coverage"] == pytest.approx(0.0) and first["selectable"] is False
    [v] = judge.score(samples[10:11], llm=llm)
    assert v.missing and v.criteria == {} and v.metadata["retried"]
    assert v.metadata["source"] == "missing" and "follow-up" in v.metadata["missing_reason"]
    assert v.raw == "I would rather not.\n---\nI would rather not.", "the reply and the follow-up turn are kept"


def test_a_reply_without_score_gets_one_follow_up_turn(store, data):
    samples, aspect, _ = data

    def responder(messages, params):
        if len(messages) == 3:
            return "Score Of Overall: 40"
        return "A nice response about item 1." if "output number 1\n" in messages[0]["content"] else \
            "Explanation: fine.\nScore Of Overall: 80"

    state = {"variant": "coarse", "task_description": "T.", "criteria": CRITERIA}
    llm, backend = llm_with(store, responder)
    results = ac.run_pipeline(_examples(samples[:3], aspect), state, [], llm=llm, params=GenerationParams(),
                              source_chars=2000, retry=True)
    assert [r["overall"] for r in results] == pytest.approx([80, 40, 80]) and [r["retried"] for r in results] == [False, True, False]
    assert results[1]["explanation"] == "A nice response about item 1." and len(backend.calls) == 4
    follow_up = next(m for m, _ in backend.calls if len(m) == 3)
    assert follow_up[1] == {"role": "assistant", "content": "A nice response about item 1."}
    llm, backend = llm_with(store, responder)
    no_retry = ac.run_pipeline(_examples(samples[:3], aspect), state, [], llm=llm,
                               params=GenerationParams(max_tokens=99), source_chars=2000)
    assert math.isnan(no_retry[1]["overall"]) and len(backend.calls) == 3


def test_criteria_written_as_lines_are_read():
    reply = ("Here are the criteria:\n1. **Relevance**: the response stays on the topic of the source.\n"
             "2. Engagement: the response invites the other speaker to keep talking.\n"
             "- Factual accuracy - it states only facts found in the context.\n"
             "Source: <<<SOURCE>>> some echoed text here\nObservations: the scores vary a great deal.\n"
             "Engagement: a repeated name keeps its first definition.\nTone: ok")
    assert ac.parse_criteria_and_observations(reply) == (
        {"Engagement": "the response invites the other speaker to keep talking.",
         "Factual accuracy": "it states only facts found in the context."}, "")
    assert ac.parse_criteria_lines("just prose, no criteria at all") == {}
    items = ("1. Ability to read the context of the sentence\n2. Ability to provide an actionable feedback.\n"
             "3. Short\nTo improve our language, we need to refine it.")
    assert ac.parse_criteria_lines(items) == {}, "plain list items only count for the list prompt"
    assert ac.parse_criteria_lines(items, plain_items=True) == {
        "Ability to read the context": "Ability to read the context of the sentence.",
        "Ability to provide an actionable": "Ability to provide an actionable feedback."}
    assert list(ac.parse_criteria_lines("- User ability to evaluate and respond well", plain_items=True)) == [
        "User ability to evaluate"], "a cut name does not end on a joining word"


def test_criteria_fall_back_to_a_short_list_prompt_when_json_fails(store, data):
    samples, aspect, _ = data
    batches = [_examples(samples[:5], aspect)]
    listed = "Coverage: keeps the main points of the source.\nFluency: reads naturally and without errors."

    def responder(messages, params):
        return listed if "Name: definition" in messages[-1]["content"] else "<<<SOURCE>>> echo of the examples"

    llm, backend = llm_with(store, responder, concurrency=1)
    events = []
    defined = ac.define_criteria(batches, DESCRIPTION, llm=llm, params=GenerationParams(),
                                 source_chars=2000, complete_streak=5, fallback=True,
                                 dataset_task="news summarization", log=lambda k, p: events.append((k, p)))
    criteria, failures = defined.criteria, defined.parse_failures
    assert criteria == {"Coverage": "keeps the main points of the source.",
                        "Fluency": "reads naturally and without errors."} and failures == 0
    assert len(backend.calls) == 4  # init, its JSON retry, the short qualities prompt, then the short list prompt
    assert "Which qualities of a response" in backend.calls[2][0][0]["content"]
    short = backend.calls[3][0]
    assert len(short) == 1 and "output number" in short[0]["content"]
    assert "We evaluate news summarization" in short[0]["content"] and "for its overall quality" in short[0]["content"]
    assert [p["raw"] for k, p in events if k == "criteria"] == [listed]
    llm, backend = llm_with(store, responder, concurrency=1)
    assert ac.define_criteria(batches, DESCRIPTION, llm=llm, params=GenerationParams(max_tokens=99),
                              source_chars=2000, complete_streak=5) == ac.DefinedCriteria({}, 1)
    assert len(backend.calls) == 2, "without the fallback there is no third call"

    def metadata_json(messages, params):  # JSON of the wrong kind: a title, a category and an id are no criteria
        if "Name: definition" in messages[-1]["content"]:
            return listed
        return '{"title": "A comparison of systems", "category": "taxonomy", "Clarity": "Easy to follow."}'

    llm, _ = llm_with(store, metadata_json, concurrency=1)
    criteria = ac.define_criteria(batches, DESCRIPTION, llm=llm, params=GenerationParams(max_tokens=97),
                                  source_chars=2000, complete_streak=5, fallback=True).criteria
    assert list(criteria) == ["Coverage", "Fluency"], "the longer list replaces a set under the minimum of 4"


def test_weighted_overall_reads_a_1_to_9_digit_after_the_explanation(store, data):
    samples, aspect, _ = data

    def responder(messages, params):
        if len(messages) == 3:
            return "7" if "output number 1\n" in messages[0]["content"] else "no digit"
        return "Explanation: it rambles.\nScore Of Overall: 55"

    state = {"variant": "coarse", "task_description": "T.", "criteria": CRITERIA}
    llm = make_llm(LLMConfig(concurrency=2), store=store, backend=FakeBackend(responder, logprobs=True))
    results = ac.run_pipeline(_examples(samples[:3], aspect), state, [], llm=llm, params=GenerationParams(),
                              source_chars=2000, weighted=True)
    # fake logprobs: 0.7 on "7", 0.1 on "6" and "8" -> expectation 7 on 1-9 -> 75 on 0-100
    assert results[1]["overall"] == pytest.approx(75.0) and results[1]["explanation"] == "it rambles."
    assert math.isnan(results[0]["overall"]), "no digit among the alternatives: missing, not the stated 55"
    assert all(r["retried"] for r in results) and results[1]["ose_raw"].endswith("---\n7")
    llm = make_llm(LLMConfig(concurrency=2), store=store, backend=FakeBackend(responder, logprobs=False))
    plain = ac.run_pipeline(_examples(samples[:3], aspect), state, [], llm=llm, params=GenerationParams(max_tokens=98),
                            source_chars=2000, weighted=True)
    assert [r["overall"] for r in plain] == pytest.approx([55, 55, 55]), "without logprobs the stated score is read"
    method = get_method("active_critic", {"weighted": True, "n_candidates": 3})
    assert method.estimate_calls(10, 4)["score"] == 4 * 3


def test_a_copied_shape_example_is_not_a_criterion():
    shape_copy = '{"Criterion name": "one-sentence definition", "Another criterion": "x"}'
    assert ac.parse_criteria_and_observations(shape_copy) == ({}, "")


def test_person_edits_replace_stage_one_and_reuse_the_cache(store, data):
    samples, aspect, task = data
    llm, backend = llm_with(store, scripted())
    params = {"n_candidates": 2, "variant": "coarse"}
    first = get_method("active_critic", params).fit(samples[:10], aspect, FitContext(llm=llm, task=task))
    edited = dict(first.state["criteria"], Fluency="Reads naturally, no typos.")
    method = get_method("active_critic", {**params, "task_description": first.state["task_description"],
                                          "criteria": edited})
    # no stage 1; 2 candidates x 10 items x (OS-E + at most one follow-up)
    assert method.estimate_calls(10, 5)["fit"] == 2 * 10 * 2
    before = len(backend.calls)
    second = method.fit(samples[:10], aspect, FitContext(llm=llm, task=task))
    assert len(backend.calls) - before == 10 + 7, "zero-shot on 10 items, the labeled 3-demo set on 7"
    new_prompts = [m[0]["content"] for m, _ in backend.calls[before:]]
    assert not any("Add new observations" in p or "Study how the quality" in p for p in new_prompts)
    assert second.state["criteria"] == edited
    assert all("Reads naturally, no typos." in p for p in new_prompts)
    # the same edited parameters again: every call is a cache hit
    before = len(backend.calls)
    assert method.fit(samples[:10], aspect, FitContext(llm=llm, task=task)) == second and len(backend.calls) == before


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="criteria"):
        get_method("active_critic", {"criteria": ["a"]})._validate_params()
    with pytest.raises(ValueError, match="n_demos"):
        get_method("active_critic", {"n_demos": -1})._validate_params()
    get_method("active_critic", {"n_demos": None, "eval_subsample": None})._validate_params()


@pytest.mark.model
def test_tiny_run_on_the_embedded_model_and_its_free_repeat(store, tiny_dataset):
    """Real SmolLM2 through execute_run: stage 1, a 2-candidate search, scoring; the repeat costs 0 calls."""
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="active_critic", dataset="tiny", aspect="quality", train_size=5, test_size=2,
                   params={"n_candidates": 2, "n_demos": 1, "eval_subsample": 2, "max_tokens": 64, "max_batches": 1,
                           "variant": "fine", "demo_mode": "labeled", "retry_unparsed": False,
                           "no_positive_set": "zero_shot"})
    run_id = create_run(store, spec)
    summary = execute_run(store, run_id)
    run = store.get_run(run_id)
    assert run["status"] == "finished", run["message"]
    assert summary.n == 3 and summary.ledger.calls > 0  # test_size=2 takes one whole group of 3
    judge = Judge.from_dict(run["judge"])
    assert isinstance(judge.state["task_description"], str) and len(judge.state["search"]) == 2
    # each set scores the 2 subsampled items minus its own demo when that demo is one of them
    assert all(2 - len(s["demo_ids"]) <= s["n_items"] <= 2 and s["n_scored"] + s["n_missing"] == s["n_items"]
               and s["coverage"] == pytest.approx(s["n_scored"] / s["n_items"]) for s in judge.state["search"])
    kinds = {e["kind"] for e in store.events(run_id)}
    assert {"task_observation", "criteria", "candidate", "demos_selected"} <= kinds
    verdicts = store.load_verdicts(run_id)
    assert len(verdicts) == 3 and all(v.raw for v in verdicts)
    repeat = create_run(store, spec)
    assert execute_run(store, repeat).ledger.calls == 0
    assert [v.score for v in store.load_verdicts(repeat)] == pytest.approx([v.score for v in verdicts], nan_ok=True)



def test_a_made_up_story_as_task_description_and_copied_or_empty_criteria_are_rejected_and_kept(store, data):
    samples, aspect, task = data
    story = "The 2008 election was a pivotal moment in history when many voters went to the polls early."
    shown = ["the mayor opened the new bridge over the river on monday after three years of building work"]
    criteria = {"Coverage": "Keeps the main points of the source.",
                "Bridge": "the mayor opened the new bridge over the river on monday after three years", "X": "y"}
    # a story names nothing about the task: used with a flag, as a person may have meant it
    checked_task = ac.check_task_description(story, task, shown)
    description, refused, doubt = checked_task.description, checked_task.refused, checked_task.flagged
    assert description == story and refused is None and doubt["flags"][0]["rule"] == "no_quality"
    # a copy of an example is refused and replaced by the dataset's own task
    copied = "The mayor opened the new bridge over the river on monday after three years of building work."
    checked_task = ac.check_task_description(copied, task, shown)
    description, refused, doubt = checked_task.description, checked_task.refused, checked_task.flagged
    assert refused["rule"] == "copy" and refused["text"] == copied and task.task in description and doubt is None
    checked = ac.check_criteria(criteria, shown)
    assert list(checked.kept) == ["Coverage"]
    assert {r["name"]: r["rule"] for r in checked.refused} == {"Bridge": "copy", "X": "empty"}


def test_a_reply_cut_off_inside_its_json_is_no_task_description():
    assert ac.read_task_description('{"score": "unsure') == ("", "missing")
    assert ac.read_task_description('{"task_description": "The evaluation task is rating summaries."}')[1] == "json"
    assert ac.read_task_description("The evaluation task is rating summaries.")[1] == "text"


REPEATED = "Explanation:\n" + "* **Reflection of the evaluation criteria**:\n" * 14 + "Score Of Overall: 60"
"""The SmolLM2 reply of issue #23: one line fourteen times, then a score."""


def test_check_explanation_refuses_empty_and_repeated_explanations_only():
    assert "14 times" in ac.check_explanation("* **Reflection of the evaluation criteria**:\n" * 14)
    assert "0 words" in ac.check_explanation("* ** :")
    assert ac.check_explanation("Short and faithful; it copies 'output number 4' from the source.") is None
    assert ac.check_explanation("x " * 2000) is not None, "a long run of one word is repetitive too"
    assert ac.check_explanation(" ".join(f"w{i}" for i in range(2000))) is None, "a long explanation may stand"


def test_repeated_or_empty_explanations_are_flagged_not_shown_and_counted(store, data):
    from judge_engine.runs import run_warnings

    samples, aspect, task = data
    base = scripted()

    def responder(messages, params):
        prompt = messages[-1]["content"]
        if "Score Of Overall" in prompt and _number(prompt) == 17:
            return REPEATED
        if "Score Of Overall" in prompt and _number(prompt) == 18:
            return json.dumps({"explanation": "* *", "overall": 70})  # parses, says nothing
        return base(messages, params)

    llm, _ = llm_with(store, responder)
    judge = get_method("active_critic", {"n_candidates": 2, "seed": 0, "variant": "coarse"}).fit(
        samples[:15], aspect, FitContext(llm=llm, task=task))
    verdicts = {v.sample_id: v for v in judge.score(samples[15:], llm=llm)}
    repeated, empty = verdicts["s17"], verdicts["s18"]
    assert "repeats" in repeated.metadata["explanation_rejected"] and "14 times" in repeated.metadata[
        "explanation_rejected"]
    assert repeated.explanation == "" and "Reflection of the evaluation criteria" in repeated.raw
    assert repeated.score == pytest.approx(5 * 0.6), "the score itself is still read"
    assert "0 words" in empty.metadata["explanation_rejected"] and empty.explanation == "" and '"* *"' in empty.raw
    others = [v for k, v in verdicts.items() if k not in ("s17", "s18")]
    assert all("explanation_rejected" not in v.metadata and v.explanation.startswith("it is item") for v in others)
    [warning] = [w for w in run_warnings(list(verdicts.values()), ledger=LedgerTotals()) if w.code == "explanations_rejected"]
    assert warning.count == 2 and "2 of 5" in warning.message


def test_near_duplicate_and_over_long_criteria_are_rejected_and_kept(store, data):
    shown = ["source text 1", "output number 1"]
    criteria = {"Coverage": "Keeps the main points of the source text.",
                "Coverage of points": "Keeps the main points of the source text.",
                "Detail": "Good detail: " + " ".join(f"term{i}" for i in range(250))}
    checked = ac.check_criteria(criteria, shown)
    assert list(checked.kept) == ["Coverage"]
    assert {r["name"]: r["rule"] for r in checked.refused} == {"Coverage of points": "near_duplicate",
                                                               "Detail": "too_long"}
    assert all(r["stage"] == "criteria" and r["reason"] for r in checked.refused)


def test_the_paper_form_reads_the_papers_own_reply_shape_from_a_backend_without_schemas(store, data):
    """§4.1's reply shape, ``{"Criteria": {name: description}, "Observations": ...}``, from a backend that
    ignores the named-criteria schema: read by the free-text fallback, each criterion under its own name."""
    samples, aspect, _ = data
    batches = [_examples(samples[:5], aspect), _examples(samples[5:10], aspect)]
    llm, backend = llm_with(store, scripted(criteria_observe="Accuracy needs care."), concurrency=1)
    events = []
    defined = ac.define_criteria(batches, ac.extract_task_description(DESCRIPTION), llm=llm,
                                 params=GenerationParams(), source_chars=2000, complete_streak=5,
                                 opener="", log=lambda k, p: events.append((k, p)))
    criteria, failures = defined.criteria, defined.parse_failures
    assert criteria == CRITERIA and failures == 0
    steps = [p for k, p in events if k == "criteria"]
    assert [(p["action"], p["read"]) for p in steps] == [("init", "text"), ("refine", "text")]
    assert steps[0]["criteria"] == {**dict(list(CRITERIA.items())[:3]), "Style": "x"}
    asked = [(m[0]["content"], p) for m, p in backend.calls if p.json_schema]
    assert len(asked) == 2 and all("Start each sentence" not in prompt and "a name of a few words" in prompt
                                   for prompt, _ in asked)
    assert "- Coverage: Keeps the main points." in asked[1][0], "the refine prompt lists name: definition"


def test_criteria_a_reply_gave_that_reading_leaves_out_are_recorded_with_their_reasons(store, data):
    # issue 50 item 4: the placeholder filter, a prompt label and a repeated name no longer drop silently
    samples, aspect, _ = data
    batches = [_examples(samples[:5], aspect), _examples(samples[5:10], aspect)]
    init = json.dumps({"criteria": [
        {"name": "Criterion name", "definition": "One-sentence definition"},
        {"name": "Score", "definition": "The score given to the response."},
        {"name": "Coverage", "definition": "Keeps the main points."},
        {"name": "coverage", "definition": "Keeps every point."},
        {"name": "Accuracy", "definition": "States only what the source says."},
        {"name": "Fluency", "definition": "Reads naturally."},
        {"name": "Conciseness", "definition": "No padding."}, 7],
        "observations": "short is good"})
    llm, _ = llm_with(store, scripted(init=init, criteria_observe="COMPLETE"), concurrency=1)
    defined = ac.define_criteria(batches, ac.extract_task_description(DESCRIPTION), llm=llm,
                                 params=GenerationParams(), source_chars=2000, complete_streak=1, opener="")
    assert "Criterion name" not in defined.criteria and "Score" not in defined.criteria
    left_out = {(r["name"], r["rule"], r["stage"]) for r in defined.refused}
    assert {("Criterion name", "placeholder", "criteria init"), ("Score", "field_name", "criteria init"),
            ("coverage", "near_duplicate", "criteria init"), ("7", "not_text", "criteria init")} <= left_out
    assert all(r["reason"] and r["ok"] is False and r["text"] for r in defined.refused)


def test_statements_that_are_no_criterion_are_recorded_not_dropped():
    opener = "A good summary"
    dropped = []
    got = ac.statement_criteria(["A good summary keeps the main points of the article.", "Nice.", 3,
                                 "A good summary keeps the main points of the article."], opener, dropped=dropped)
    assert list(got.values()) == ["A good summary keeps the main points of the article."]
    assert [(d["text"], d["rule"]) for d in dropped] == [
        ("Nice.", "not_text"), ("3", "not_text"),
        ("A good summary keeps the main points of the article.", "near_duplicate")]


def test_a_criteria_reply_that_is_not_used_and_criteria_over_ten_are_recorded(store):
    # issue 50 item 4: the follow-up reply adds no usable criterion, so it is not used; its criteria are recorded
    from judge_engine.methods.active_critic.criteria_definition import _ask_criteria

    first = {f"Facet {c}": f"Keeps detail {c} of the source in order." for c in "ABCDEFGHIJKL"}
    replies = iter([json.dumps({"criteria": [{"name": "Only", "definition": "One usable facet."}]}),
                    json.dumps({"criteria": [{"name": "Spam", "definition": "Not usable at all."}]})])
    llm, _ = llm_with(store, lambda m, p: next(replies), concurrency=1)
    usable = (lambda c: {n: d for n, d in c.items() if n != "Spam"})
    got = _ask_criteria(llm, "Study how the quality ...", GenerationParams(), opener="", usable=usable)
    assert list(got.criteria) == ["Only"]
    assert [(d["name"], d["rule"]) for d in got.dropped] == [("Spam", "not_used")]
    # twelve usable criteria in one reply: the ten kept are the first, the two cut are recorded
    reply = json.dumps({"criteria": [{"name": n, "definition": d} for n, d in first.items()]})
    llm, _ = llm_with(store, lambda m, p: reply, concurrency=1)
    got = _ask_criteria(llm, "Study how the quality of these", GenerationParams(), opener="", usable=dict)
    assert len(got.criteria) == 10
    assert [(d["name"], d["rule"]) for d in got.dropped] == [("Facet K", "beyond_limit"), ("Facet L", "beyond_limit")]
