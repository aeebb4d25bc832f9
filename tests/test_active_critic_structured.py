"""Active-Critic with structured replies, coverage-aware and sign-aware demonstration selection, and call estimates.

The scripted LLMs here answer the JSON each request's schema asks for (dispatching on the schema's title, as
the benchmarks' simulated judge does), so the structured path is the one under test; the free-text fallback
is covered in test_active_critic.py.
"""

import json
import math
import re
from dataclasses import replace

import pytest

from judge_engine import structured
from judge_engine.llm.base import LOGPROB_POSITIONS, GenerationParams
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, Judge, get_method
from judge_engine.methods import active_critic as ac
from judge_engine.methods.active_critic.criteria_definition import _ask_criteria
from judge_engine.methods.active_critic.examples import _example
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample
from tests.scripted import fake_llm

OPENER = "A good output"
"""The opener of the fixture's task (TaskInfo("news summarization"): its outputs are called "Output")."""
STATEMENTS = ["A good output is accurate about what the source says.",
              "A good output has complete coverage of the main points.",
              "A good output is fluent and reads naturally.", "A good output is concise, with no padding or filler."]
CRITERIA = {"Accurate about what the source says": STATEMENTS[0], "Has complete coverage of the main\u2026": STATEMENTS[1],
            "Fluent and reads naturally": STATEMENTS[2], "Concise": STATEMENTS[3]}
"""What the method makes of :data:`STATEMENTS`: name (taken from the statement) -> the statement."""
TASK = ("The evaluation task is text summarization, which refers to evaluating summaries generated from news "
        "articles. The relationship between 'Source' and 'Response' is that the response condenses the source.")


def _number(text):
    """The output number of the judged item (the last one in the prompt)."""
    return int(re.findall(r"output number (\d+)", text)[-1])


def _demo_part(prompt):
    return prompt.split("Now the item")[0] if "Now the item" in prompt else ""


def json_judge(*, overall=None, statements=STATEMENTS, observe="Short faithful outputs score higher."):
    """Answers every request with the JSON its schema asks for; ``overall(n, prompt)`` gives OS-E's 0-100 score
    (None = no score: an empty explanation object that breaks the schema)."""
    overall = overall or (lambda n, prompt: 10 * (n % 10))

    def responder(messages, params):
        kind = structured.kind_of(params.json_schema)
        first = messages[0]["content"]
        if kind == structured.TASK_DESCRIPTION:
            return json.dumps({"task_description": TASK})
        if kind == structured.CRITERIA:
            reply = {"criteria": list(statements)}
            if "observations" in structured.schema_of(params.json_schema)["properties"]:
                reply["observations"] = "shorter summaries scored higher"
            return json.dumps(reply)
        if kind == structured.EXPLAINED_SCORES:
            props = structured.schema_of(params.json_schema)["properties"]
            n = _number(first)
            if "criteria" in props:
                return json.dumps({"criteria": {name: {"explanation": f"{name} is fine for {n}", "score": 10 * (n % 10)}
                                                for name in props["criteria"]["properties"]}})
            score = overall(n, first)
            return json.dumps({"explanation": f"item {n}; shorten it."} if score is None
                              else {"explanation": f"item {n}; shorten it.", "overall": score})
        if kind == structured.SCORE:
            return json.dumps({"score": 50})
        return observe  # observations are free text

    return responder


@pytest.fixture
def data():
    """Twenty samples whose human quality rises with the output number (1-5 scale)."""
    samples = tuple(Sample(id=f"s{i}", input=f"source text {i}", output=f"output number {i}", group_id=f"g{i}",
                           system_id=f"sys{i % 3}", human={"quality": 1 + 4 * (i % 10) / 9}) for i in range(20))
    return samples, Aspect("quality", 1, 5, "How good it is."), TaskInfo("news summarization")


def _examples(samples, aspect):
    return [_example(s, aspect) for s in samples]


# ------------------------------------------------------------------------------------ schemas and reading

def test_every_generation_step_asks_for_its_schema_and_is_read_as_json(store, data):
    samples, aspect, task = data
    llm, backend = fake_llm(json_judge(), store=store, concurrency=2)
    events = []
    method = get_method("active_critic", {"n_candidates": 2, "seed": 0})
    judge = method.fit(samples[:10], aspect, FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    kinds = [structured.kind_of(p.json_schema) for _, p in backend.calls]
    observations = [m[-1]["content"] for (m, p) in backend.calls if not p.json_schema]
    assert all("Add new observations" in o or "Check two things" in o for o in observations), \
        "only the observations are free text"
    assert {structured.TASK_DESCRIPTION, structured.CRITERIA, structured.EXPLAINED_SCORES} <= set(kinds)
    assert judge.state["task_description"] == TASK and judge.state["criteria"] == CRITERIA
    assert judge.state["reads"]["task_description"] == {"json": 3}  # 2 batches + the ensemble
    assert judge.state["reads"]["criteria"] == {"json": 2}  # init + one refine
    zero_shot = judge.state["search"][0]
    assert zero_shot["reads"]["json"] == 2 * 10 and zero_shot["reads"]["fallback"] == 0
    init = next(p for k, p in events if k == "criteria" and p["action"] == "init")
    assert init["read"] == "json" and init["observations"] == "shorter summaries scored higher"
    [v] = judge.score(samples[17:18], llm=llm)
    assert v.metadata["source"] == "json" and v.metadata["criteria_read"] == "json"
    assert v.metadata["overall_100"] == pytest.approx(70) and v.explanation == "item 17; shorten it."
    assert v.metadata["criteria_explanations"]["Concise"] == "Concise is fine for 17"
    schema = structured.schema_of(next(p.json_schema for _, p in backend.calls
                                       if structured.kind_of(p.json_schema) == structured.CRITERIA))
    assert schema["properties"]["criteria"]["items"]["pattern"].startswith("^A good output "), \
        "the criteria are asked for as statements that start with the opener"


def test_the_explanation_limit_bounds_every_overall_score_request_of_the_search_and_of_scoring(store, data):
    """``explanation_chars`` bounds OS-E's explanation in the requested schema (a small model under a grammar
    writes up to it), in the demonstration search and in the fitted judge's scoring; the default asks as before."""
    samples, aspect, task = data
    for chars in (200, None):
        llm, backend = fake_llm(json_judge(), store=store, concurrency=2)
        params = {"n_candidates": 2, "seed": 0, "variant": "coarse", **({"explanation_chars": chars} if chars else {})}
        judge = get_method("active_critic", params).fit(samples[:10], aspect, FitContext(llm=llm, task=task))
        judge.score(samples[17:18], llm=llm)
        limits = {structured.schema_of(p.json_schema)["properties"]["explanation"]["maxLength"]
                  for _, p in backend.calls if structured.kind_of(p.json_schema) == structured.EXPLAINED_SCORES}
        assert limits == {chars or ac.OSE_SCHEMA["properties"]["explanation"]["maxLength"]}
    with pytest.raises(ValueError, match="explanation_chars"):
        get_method("active_critic", {"explanation_chars": 5}).fit(samples[:10], aspect, FitContext(llm=llm, task=task))


def test_the_schemas_have_the_shapes_the_paper_needs():
    assert structured.schema_of(structured.as_param(ac.TASK_SCHEMA))["title"] == structured.TASK_DESCRIPTION
    schema, init = ac.criteria_schema(OPENER), ac.criteria_schema(OPENER, observations=True)
    crit = schema["properties"]["criteria"]
    assert schema["title"] == init["title"] == ac.qualities_schema(OPENER)["title"] == structured.CRITERIA
    assert (crit["minItems"], crit["maxItems"]) == (4, 10), "4-10 criteria by construction (§4.1)"
    assert re.match(crit["items"]["pattern"], STATEMENTS[0])
    assert not re.match(crit["items"]["pattern"], "A good output is Barcelona."), "no capital after the opener"
    assert init["required"] == ["criteria"] and list(init["properties"]) == ["criteria", "observations"]
    assert ac.criteria_opener(TaskInfo("t", output_label="Summary")) == "A good summary"
    mcse = ac.mcse_schema(["Coverage", "Fluency"])
    assert mcse["title"] == structured.EXPLAINED_SCORES
    inner = mcse["properties"]["criteria"]
    assert inner["required"] == ["Coverage", "Fluency"] and inner["additionalProperties"] is False
    assert list(inner["properties"]["Coverage"]["properties"]) == ["explanation", "score"]
    assert inner["properties"]["Coverage"]["properties"]["score"]["enum"] == list(range(101))
    assert list(ac.OSE_SCHEMA["properties"]) == ["explanation", "overall"], "reason first, as in OS-E's format"
    assert list(ac.WEIGHTED_SCHEMA["properties"]) == ["score"], "the weighted digit comes first"
    assert ac.WEIGHTED_SCHEMA["properties"]["score"]["enum"] == list(range(1, 10))


def test_three_criteria_break_the_schema_and_get_the_json_retry(store, data):
    samples, aspect, _ = data
    answers = iter([json.dumps({"criteria": STATEMENTS[:3]}), json.dumps({"criteria": STATEMENTS})])
    llm, backend = fake_llm(lambda m, p: next(answers), store=store, concurrency=1)
    events = []
    defined = ac.define_criteria([_examples(samples[:5], aspect)], TASK, llm=llm,
                                 params=GenerationParams(), source_chars=2000, complete_streak=5,
                                 opener=OPENER, log=lambda k, p: events.append((k, p)))
    criteria, failures = defined.criteria, defined.parse_failures
    assert criteria == CRITERIA and failures == 0 and len(backend.calls) == 2
    assert 'Start each sentence with "A good output"' in backend.calls[0][0][0]["content"]
    assert "A good output" in backend.calls[1][0][-1]["content"], "the retry names the opener"
    assert structured.kind_of(backend.calls[1][1].json_schema) == structured.CRITERIA, "the retry asks for JSON too"
    assert [(p["read"], p["retried"]) for k, p in events if k == "criteria"] == [("json", True)]


def test_a_placeholder_copied_from_the_prompt_is_no_criterion():
    reply = json.dumps({"criteria": [{"name": "a short name", "definition": "what the criterion asks of a response"}, *(
        {"name": k, "definition": v} for k, v in CRITERIA.items())]})
    criteria, _, read = ac.read_criteria(reply, ac.criteria_schema(OPENER), OPENER)
    assert criteria == CRITERIA and read == "text", "named criteria are the fallback's"


def test_statements_become_criteria_named_after_them_each_name_once():
    same = ["A good output is concise, with no padding.", "A good output is concise, in a few words.",
            "A good output is concise, in a few words.", "A good output is concise, keeping it brief."]
    criteria, _, read = ac.read_criteria(json.dumps({"criteria": same}), ac.criteria_schema(OPENER), OPENER)
    assert read == "json" and list(criteria.values()) == [same[0], same[1], same[3]], "a repeated statement once"
    assert list(criteria) == ["Concise", "Concise in a few words", "Concise keeping it brief"]
    taken = ac.statement_criteria(same[:1] * 2 + ["A good output is concise, with no padding now."], OPENER,
                                  taken=["concise"])
    assert list(taken) == ["Concise with no padding", "Concise with no padding now"]
    assert ac.statement_criteria(["A good output is x.", "Coverage is good.", 7], OPENER) == {}, \
        "too short, no opener, no text"


def test_a_reply_cut_off_by_its_token_limit_keeps_its_finished_statements():
    cut = '{"criteria": [' + ", ".join(json.dumps(s) for s in STATEMENTS[:3]) + ', "A good output has no err'
    criteria, observations, read = ac.read_criteria(cut, ac.criteria_schema(OPENER), OPENER)
    assert list(criteria.values()) == STATEMENTS[:3] and read == "text" and observations == ""
    listed = "Here they are:\n1. A good output is fluent and reads naturally\n2) " + STATEMENTS[0] + " " \
        + STATEMENTS[3] + "\nClarity: the output is easy to follow for a reader."
    found = ac.parse_criteria_lines(listed, opener=OPENER)
    assert list(found.values()) == [STATEMENTS[2], STATEMENTS[0], STATEMENTS[3],
                                    "the output is easy to follow for a reader."], \
        "lines that start with the opener (a plain line needs no full stop), then Name: definition"
    assert ac.read_qualities("1. " + "\n2. ".join(STATEMENTS), OPENER) == CRITERIA


def test_free_text_replies_still_read_and_are_marked_as_fallback():
    score, explanation, read = ac.read_overall("Explanation: too long.\nScore Of Overall: 64")
    assert score == pytest.approx(64) and explanation == "too long." and read == "text"
    score, _, read = ac.read_overall('{"explanation": "cut off", "overall": 250}')
    assert math.isnan(score) and read == "missing", "off the scale is missing, not clipped"
    scores, read = ac.read_criteria_scores('Coverage: { explanation: fine. score: 80 }', ["Coverage", "Fluency"])
    assert scores["Coverage"]["score"] == pytest.approx(80) and math.isnan(scores["Fluency"]["score"])
    assert read == "text"
    assert ac.read_task_description("4. The evaluation task is dialogue. More.")[1] == "text"
    assert ac.read_task_description("") == ("", "missing")


# ------------------------------------------------------------------------------- weighted follow-up turn

class PositionedLogprobs(FakeBackend):
    """A scripted backend whose logprobs come from ``positions(text)``: one dict per leading token."""

    def __init__(self, responder, positions):
        super().__init__(responder, logprobs=True)
        self.positions = positions

    def generate(self, messages, params):
        out = super().generate(messages, params)
        if params.top_logprobs:
            out = replace(out, logprobs=(tuple(self.positions(out.text)),))
        return out


def _pos(token, top):
    return {"token": token, "logprob": math.log(top.get(token, 0.01)), "top": {k: math.log(v) for k, v in top.items()}}


def test_the_weighted_score_comes_from_the_digits_position_inside_the_json(data):
    samples, aspect, _ = data

    def responder(messages, params):
        if structured.kind_of(params.json_schema) == structured.SCORE:
            n = _number(messages[0]["content"])
            return {1: '{"score": 7}', 2: "{\"score\": 7}", 3: "Hmm"}[n]
        return json.dumps({"explanation": "it rambles", "overall": 55})

    def positions(text):
        if text == "Hmm":  # no digit chosen: only the first position's alternatives, with enough mass
            return [_pos("Hmm", {"Hmm": 0.2, "6": 0.4, "8": 0.4})]
        # {"score": 7} as tokens: the digit is the fifth, well inside the positions that keep alternatives
        return [_pos('{"', {'{"': 1.0}), _pos("score", {"score": 1.0}), _pos('":', {'":': 1.0}),
                _pos(" ", {" ": 1.0}), _pos("7", {"7": 0.5, "8": 0.5}), _pos("}", {"}": 1.0})]

    backend = PositionedLogprobs(responder, positions)
    llm, _ = fake_llm(fake_backend=backend, concurrency=2)
    state = {"variant": "coarse", "task_description": TASK, "criteria": CRITERIA}
    results = ac.run_pipeline(_examples(samples[1:4], aspect), state, [], llm=llm, params=GenerationParams(),
                              source_chars=2000, weighted=True)
    follow = [p for m, p in backend.calls if len(m) == 3]
    assert len(follow) == 3 and all(p.top_logprobs == 20 and p.max_tokens == ac.WEIGHTED_MAX_TOKENS <= LOGPROB_POSITIONS
                                    and structured.kind_of(p.json_schema) == structured.SCORE for p in follow)
    # 0.5 on 7 and on 8 -> 7.5 on 1-9 -> 81.25 on 0-100, not the stated 55
    assert results[0]["overall"] == pytest.approx(81.25) and results[0]["source"] == "logprobs"
    assert results[0]["explanation"] == "it rambles"
    # 0.4 on 6 and on 8 (80% of the mass) -> 7 on 1-9 -> 75, flagged as read from the alternatives
    assert results[2]["overall"] == pytest.approx(75.0) and results[2]["source"] == "logprobs_first_position"

    def thin(text):  # 4% of the mass on the scale: too little to be a score
        return [_pos("Hmm", {"Hmm": 0.96, "6": 0.02, "8": 0.02})]

    llm, _ = fake_llm(fake_backend=PositionedLogprobs(responder, thin), concurrency=2)
    [r] = ac.run_pipeline(_examples(samples[3:4], aspect), state, [], llm=llm, params=GenerationParams(),
                          source_chars=2000, weighted=True)
    assert math.isnan(r["overall"]) and r["source"] == "missing" and "probability" in r["missing_reason"]


def test_verdicts_flag_scores_read_from_alternatives(data):
    samples, aspect, task = data
    # the weighted follow-up's chosen tokens hold no digit; 70% of the first position's mass is on "4"
    backend = PositionedLogprobs(json_judge(), lambda text: [_pos("x", {"x": 0.3, "4": 0.7})])
    llm, _ = fake_llm(fake_backend=backend, concurrency=2)
    params = get_method("active_critic", {"variant": "coarse", "weighted": True}).get_params()
    judge = Judge(method="active_critic", params=params, aspect=aspect.to_dict(), task=task.to_dict(),
                  state={"variant": "coarse", "task_description": TASK, "criteria": CRITERIA, "demos": []})
    [v] = judge.score(samples[2:3], llm=llm)
    assert v.metadata["source"] == "logprobs_first_position" and v.metadata["read"] == "json"
    # 4 on 1-9 -> 37.5 on 0-100 -> 5 * 0.375 on the 1-5 scale
    assert v.metadata["overall_100"] == pytest.approx(37.5) and v.score == pytest.approx(1.875)


# ----------------------------------------------------------------------------------------------- selection

def test_a_set_that_scored_2_of_10_items_cannot_beat_one_that_scored_all_10_slightly_worse():
    few = ac.candidate_fitness(3.0, 2, 10)  # perfect on the 2 items it scored
    full = ac.candidate_fitness(2.7, 10, 10)
    assert math.isnan(few.value) and not few.selectable and "2 of 10" in few.reason
    assert full.selectable and full.value == pytest.approx(2.7)
    assert ac.select_candidate([ac.candidate_fitness(-0.5, 10, 10), few, full]) == (2, "")
    # above the minimum coverage, missing items still cost: 9 of 10 at 2.9 loses to 10 of 10 at 2.7
    assert ac.select_candidate([ac.candidate_fitness(2.9, 9, 10), full])[0] == 1


def _labeled_sets(examples, k):
    return ac.propose_candidates(examples, {}, k=k, n_demos=2, mode="labeled", threshold=15, seed=0)


def test_coverage_aware_choice_in_the_search(data):
    samples, aspect, _ = data
    examples = _examples(samples[:10], aspect)
    sets = _labeled_sets(examples, 3)
    a_ids, b_ids = {d["sample_id"] for d in sets[1][1]}, {d["sample_id"] for d in sets[2][1]}
    only_a = min(a_ids - b_ids)

    def overall(n, prompt):
        demos = _demo_part(prompt)
        if not demos:
            return 90 - 10 * n  # zero-shot: anti-correlated
        if f"output number {only_a[1:]}\n" in demos:  # set A: perfect, but only on items 0 and 9
            return 10 * n if n in (0, 9) else None
        return 10 * n + (5 if n % 2 else 0)  # set B: every item, a little noise

    llm, _ = fake_llm(json_judge(overall=overall), concurrency=2)
    state = {"variant": "coarse", "task_description": TASK, "criteria": CRITERIA}
    events = []
    found = ac.optimize_demonstrations(
        examples, state, llm=llm, k=3, n_demos=2, mode="labeled", threshold=15, eval_subsample=None, seed=0,
        params=GenerationParams(), source_chars=2000, log=lambda k, p: events.append((k, p)))
    demos, search, warnings = found.demos, found.search, found.warnings
    a, b = search[1], search[2]
    assert a["q"] == pytest.approx(3.0) and a["n_scored"] <= 2 and a["selectable"] is False
    assert "needs 80%" in a["not_selectable_because"]
    assert b["n_scored"] == b["n_items"] == 8 and 0 < b["q"] < 3 and b["selectable"] is True
    assert search[0]["q"] < 0 and search[0]["selectable"] is False
    assert {d["sample_id"] for d in demos} == b_ids and warnings == []
    chosen = next(p for k, p in events if k == "demos_selected")
    assert chosen["candidate"] == 2 and chosen["coverage"] == pytest.approx(1.0) and chosen["n_scored"] == 8


def test_every_candidate_anti_correlated_gives_no_judge_unless_a_person_keeps_zero_shot(data):
    samples, aspect, task = data
    llm, _ = fake_llm(json_judge(overall=lambda n, prompt: 90 - 10 * n), concurrency=2)
    params = {"n_candidates": 3, "variant": "coarse", "criteria": CRITERIA, "task_description": TASK,
              "retry_unparsed": False}
    events = []
    with pytest.raises(ValueError, match=r"no usable judge.*zero-shot: Q = -3\.000 on 10 of 10 items"):
        get_method("active_critic", params).fit(samples[:10], aspect,
                                                FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    assert [k for k, _ in events].count("candidate") == 3
    assert all(p["q"] < 0 and p["selectable"] is False for k, p in events if k == "candidate")
    judge = get_method("active_critic", {**params, "no_positive_set": "zero_shot"}).fit(
        samples[:10], aspect, FitContext(llm=llm, task=task))
    assert judge.state["demos"] == [] and [w["code"] for w in judge.state["warnings"]] == ["selection_fallback"]
    assert "Q = -3.000" in judge.state["warnings"][0]["message"]


def test_zero_shot_is_kept_with_a_warning_when_every_demo_set_is_anti_correlated(data):
    samples, aspect, task = data
    llm, _ = fake_llm(json_judge(overall=lambda n, prompt: 90 - 10 * n if _demo_part(prompt) else 10 * n),
                      concurrency=2)
    events = []
    judge = get_method("active_critic", {"n_candidates": 3, "variant": "coarse", "criteria": CRITERIA,
                                         "task_description": TASK}).fit(samples[:10], aspect,
                                                                        FitContext(llm=llm, task=task,
                                                                                   log=lambda k, p: events.append((k, p))))
    assert judge.state["demos"] == [] and all(not s["selectable"] for s in judge.state["search"][1:])
    [warning] = judge.state["warnings"]
    assert warning["code"] == "selection_fallback" and "kept zero-shot" in warning["message"]
    assert ("warning", warning) in events


# ------------------------------------------------------------------------------------------- estimates

def worst_case(messages, params):
    """Every step takes its longest path: criteria need the JSON retry and the list prompt, no overall
    score is readable before the follow-up turn, observations are never COMPLETE."""
    kind = structured.kind_of(params.json_schema)
    last = messages[-1]["content"]
    if kind == structured.CRITERIA:
        # three criteria break the 4-item minimum every time; the list prompt finds only two
        return json.dumps({"criteria": STATEMENTS[:3]})
    if "Name: definition" in last:
        return "Coverage: keeps the main points of the source.\nFluency: reads naturally and well."
    if kind == structured.EXPLAINED_SCORES and "criteria" in structured.schema_of(params.json_schema)["properties"]:
        return json_judge()(messages, params)
    if kind == structured.EXPLAINED_SCORES:
        return "I would rather explain than score."
    if kind == structured.SCORE:
        n = _number(messages[0]["content"])
        if "1 (worst) to 9" in last:  # the weighted turn: a bare digit, read from its logprobs
            return str(1 + (n % 10) * 8 // 9)
        return json.dumps({"score": 10 * (n % 10)})
    return json_judge()(messages, params)


@pytest.mark.parametrize("params", [
    {"n_candidates": 3, "variant": "fine"},
    {"n_candidates": 2, "variant": "coarse", "eval_subsample": 6, "ensemble_task": False},
    {"n_candidates": 2, "variant": "fine", "weighted": True, "criteria_fallback": False, "max_batches": 2},
])
def test_the_estimate_bounds_the_actual_backend_calls(data, params):
    samples, aspect, task = data
    backend = FakeBackend(worst_case, logprobs=params.get("weighted", False))
    llm, _ = fake_llm(fake_backend=backend, concurrency=2)  # no cache: every request reaches the backend
    method = get_method("active_critic", params)
    estimate = method.estimate_calls(12, 5)
    judge = method.fit(samples[:12], aspect, FitContext(llm=llm, task=task))
    fit_calls = len(backend.calls)
    assert 0 < fit_calls <= estimate["fit"]
    assert len(judge.state["criteria"]) == (5 if method.criteria_fallback else 3), \
        "the replies' 3 statements and the list prompt's 2 named criteria are pooled"
    n_batches = min(method.max_batches, 3)
    stage1 = 2 * n_batches + (n_batches > 1 and method.ensemble_task) + 2 + 2 * method.criteria_fallback \
        + 3 * (n_batches - 1)
    assert sum(1 for m, p in backend.calls if "Check two things" in m[-1]["content"]
               or "Add new observations" in m[-1]["content"] or structured.kind_of(p.json_schema)
               in (structured.TASK_DESCRIPTION, structured.CRITERIA) or "Name: definition" in m[-1]["content"]) \
        == stage1, "stage 1 takes exactly the calls the estimate counts for it"
    judge.score(samples[12:17], llm=llm)
    assert len(backend.calls) - fit_calls == estimate["score"], "every item took its follow-up turn"


def test_a_refused_task_description_never_reaches_the_criteria_prompt(store, data):
    # SmolLM2's "description" (one clause four times) was refused only after the criteria step had shown it
    junk = ("The evaluation task is [the task_description], which refers to evaluating [the task_description]. "
            "The evaluation task is [the task_description]. The evaluation task is [the task_description].")
    base = json_judge()

    def responder(messages, params):
        if structured.kind_of(params.json_schema) == structured.TASK_DESCRIPTION:
            return json.dumps({"task_description": junk})
        return base(messages, params)

    samples, aspect, task = data
    llm, backend = fake_llm(responder, store=store, concurrency=2)
    judge = get_method("active_critic", {"n_candidates": 2, "seed": 0}).fit(samples[:10], aspect,
                                                                          FitContext(llm=llm, task=task))
    criteria_prompts = [m[0]["content"] for m, p in backend.calls
                        if structured.kind_of(p.json_schema) == structured.CRITERIA]
    assert criteria_prompts and not any("[the task_description]" in c for c in criteria_prompts)
    assert judge.state["task_description"].startswith("Evaluate ")
    assert all(f"Task description: {judge.state['task_description']}" in c for c in criteria_prompts[:1])
    assert [r["rule"] for r in judge.state["rejected"] if r["stage"] == "task description"] == ["placeholder"]


def test_a_refinement_the_rubric_checks_refuse_does_not_replace_usable_criteria(store, data):
    # praise only: nothing a rater could check (content sentences are only flagged, and may be a person's intent)
    junk = ["A good output is a great one.", "A good output is an excellent one.",
            "A good output is a nice and perfect one.", "A good output is the best one of all."]
    base = json_judge()

    def responder(messages, params):
        schema = structured.schema_of(params.json_schema)
        if structured.kind_of(params.json_schema) == structured.CRITERIA and "observations" not in schema["properties"]:
            return json.dumps({"criteria": junk})
        return base(messages, params)

    samples, aspect, task = data
    llm, _ = fake_llm(responder, store=store, concurrency=2)
    events = []
    judge = get_method("active_critic", {"n_candidates": 2, "seed": 0}).fit(
        samples[:10], aspect, FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    assert judge.state["criteria"] == CRITERIA
    [refine] = [p for k, p in events if k == "criteria" and p["action"] == "refine"]
    assert refine["parsed"] and "kept_previous" in refine and refine["criteria"] == CRITERIA
    # issue 50: the refused refinement is recorded, each of its criteria with the rule that refused it
    refused = [r for r in judge.state["rejected"] if r["stage"].startswith("criteria refinement")]
    assert sorted(r["text"] for r in refused) == sorted(junk) and {r["rule"] for r in refused} == {"empty"}


def test_the_short_structured_fallback_asks_for_qualities_and_reads_them_as_criteria():
    from judge_engine.llm import LLMConfig, make_llm

    asked = []

    def responder(messages, params):
        schema = structured.schema_of(params.json_schema)
        asked.append(list(schema["properties"]) if schema else None)
        if schema and "qualities" in schema["properties"]:
            assert schema["properties"]["qualities"]["items"]["pattern"].startswith("^A good output ")
            return json.dumps({"qualities": STATEMENTS})
        return '{"criteria": []}'  # the paper prompt and its retry give nothing usable

    llm = make_llm(LLMConfig(), backend=FakeBackend(responder))
    prompt = ac.criteria_qualities_prompt(task="summarization", quality="coherence", output="output",
                                          definition="How well the sentences fit together.", opener=OPENER)
    assert "Which qualities of an output" in prompt and "..." not in prompt and "fit together" in prompt
    assert 'Start each sentence with "A good output"' in prompt
    reply = _ask_criteria(llm, "paper prompt", GenerationParams(max_tokens=64),
                          opener=OPENER, fallback="list prompt", qualities_fallback=prompt)
    criteria, retried, read = reply.criteria, reply.retried, reply.read
    assert criteria == CRITERIA and read == "qualities" and retried
    assert asked == [["criteria"], ["criteria"], ["qualities"]], "the list prompt is not needed"


def test_criteria_the_checks_refuse_do_not_count_and_usable_ones_are_pooled_across_replies():
    """The paper prompt's reply has two usable statements and two the rubric checks refuse; the follow-up names
    the refused ones, the qualities fallback adds three more, and the pool holds all five usable ones."""
    from judge_engine.llm import LLMConfig, make_llm

    first = {"criteria": [STATEMENTS[0], "A good output is a great one.", STATEMENTS[1],
                          "A good output is an excellent one."],
             "observations": "short outputs score higher"}
    asked = []

    def responder(messages, params):
        schema = structured.schema_of(params.json_schema)
        asked.append(messages[-1]["content"])
        if schema and "qualities" in schema["properties"]:
            return json.dumps({"qualities": [
                "A good output is accurate about what the source says, always.",  # a name already pooled
                "A good output is concise, saying it without padding or repetition.",
                "A good output follows the rules of grammar correctly.",
                "A good output presents the points in a logical order."]})
        return json.dumps(first)  # the follow-up turn gets the same reply again

    llm = make_llm(LLMConfig(), backend=FakeBackend(responder))
    usable = lambda c: ac.check_criteria(c, ["The source text of the example."], opener=OPENER).kept  # noqa: E731
    reply = _ask_criteria(
        llm, "paper prompt", GenerationParams(max_tokens=64), schema=ac.criteria_schema(OPENER, observations=True),
        opener=OPENER, qualities_fallback="qualities prompt", fallback="list prompt", usable=usable)
    criteria, observations, raw = reply.criteria, reply.observations, reply.raw
    retried, read = reply.retried, reply.read
    names = ["Accurate about what the source says", "Has complete coverage of the main\u2026", "Concise",
             "Follows the rules of grammar correctly", "Presents the points in a logical\u2026"]
    assert list(usable(criteria)) == names and list(criteria)[:5] == names, "usable ones first"
    assert criteria[names[0]] == STATEMENTS[0], "a pooled name is not replaced"
    assert set(criteria) - set(usable(criteria)) == {"A great one", "An excellent one"}, \
        "refused ones stay to be recorded"
    assert retried and read == "json+qualities" and "--- next reply ---" in raw
    assert observations == "short outputs score higher"
    assert "Only 2 of the 4 criteria" in asked[1] and "'A great one'" in asked[1]
    assert 'starting with "A good output"' in asked[1]
    assert len(asked) == 3, "five usable criteria: the list prompt is not needed"


SMOLLM2_SENTENCES = {
    # SmolLM2-135M's own sentences (/work/exp/sent2.out, 2026-11-25), asked for "A good summary ..." on SummEval
    # and "A good response ..." on Topical-Chat: the facets are kept, praise and the aspect restated are refused
    ("summary", "consistency", "The summary states only facts the article supports."): [
        ("A good summary is consistent with the article's content.", True),
        ("A good summary is based on facts and evidence.", True),
        ("A good summary should not have anything contradicted.", True),
        ("A good summary is a high consistency, with no contradicting facts.", True),
        ("A good summary is a good article, with no contradicting facts.", True),
        ("A good summary is a great summary.", False),
    ],
    ("response", "coherence", "The response follows on from the dialogue history."): [
        ("A good response should follow the dialogue history, stay on topic.", True),
        ("A good response should be coherent with the rest of the conversation.", True),
        ("A good response is a great one.", False),
        ("A good response is a good one.", False),
    ],
    ("response", "overall", "How good the response is overall."): [
        ("A good response is a great one.", False),
        # praise about the conversation names no quality of the response: used, with the no_quality flag
        ("A good response to this conversation is excellent.", True),
    ],
}


@pytest.mark.parametrize("key", list(SMOLLM2_SENTENCES), ids=lambda k: f"{k[0]}-{k[1]}")
def test_smollm2s_own_sentences_junk_refused_facets_kept(key):
    output, aspect, definition = key
    opener = f"A good {output}"
    statements = [s for s, _ in SMOLLM2_SENTENCES[key]]
    criteria = ac.statement_criteria(statements, opener)
    assert list(criteria.values()) == statements, "every sentence is read as a criterion"
    checked = ac.check_criteria(criteria, ["A judged text about something else entirely."],
                                topics=(output.capitalize(), aspect, definition), opener=opener)
    kept, refused = checked.kept, checked.refused
    assert [s for s in statements if s in kept.values()] == [s for s, ok in SMOLLM2_SENTENCES[key] if ok]
    assert all(r["stage"] == "criteria" and r["rule"] and r["reason"] and r["name"] in criteria for r in refused)
    assert len(refused) == sum(not ok for _, ok in SMOLLM2_SENTENCES[key])


# ------------------------------------------------------ criteria forms: the paper's named criteria by default

NAMED = {"Accuracy": "The output states only what the source says.",
         "Coverage": "The output keeps every main point of the source.",
         "Fluency": "The output reads naturally, in well-formed sentences.",
         "Concision": "The output says it without padding or repetition."}
"""Named criteria with definitions, the paper's form (§4.1, Table 15)."""
OPENAI = {"backend": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:1"}


def named_judge(criteria=NAMED, **kwargs):
    """:func:`json_judge`, but a criteria request of the named schema gets ``criteria`` as named items (under
    the schema's own key: ``criteria`` or ``qualities``)."""
    base = json_judge(**kwargs)

    def responder(messages, params):
        schema = structured.schema_of(params.json_schema)
        if structured.kind_of(params.json_schema) == structured.CRITERIA:
            key = next(k for k in schema["properties"] if k != "observations")
            if schema["properties"][key]["items"]["type"] == "object":
                reply = {key: [{"name": n, "definition": d} for n, d in criteria.items()]}
                if "observations" in schema["properties"]:
                    reply["observations"] = "shorter summaries scored higher"
                return json.dumps(reply)
        return base(messages, params)

    return responder


def _criteria_requests(backend):
    return [(m, p) for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.CRITERIA]


def test_the_paper_form_asks_every_criteria_step_for_named_criteria_without_an_opener(store, data):
    samples, aspect, task = data
    llm, backend = fake_llm(named_judge(), store=store, concurrency=2)
    events = []
    judge = get_method("active_critic", {"n_candidates": 2, "seed": 0, "criteria_form": "paper"}).fit(
        samples[:10], aspect, FitContext(llm=llm, task=task, log=lambda k, p: events.append((k, p))))
    asks = _criteria_requests(backend)
    assert len(asks) == 2, "init and one refine"
    for messages, params in asks:
        crit = structured.schema_of(params.json_schema)["properties"]["criteria"]
        assert (crit["minItems"], crit["maxItems"]) == (4, 10) and "pattern" not in crit["items"]
        assert list(crit["items"]["properties"]) == ["name", "definition"]
        assert "Start each sentence" not in messages[0]["content"] and OPENER not in messages[0]["content"]
        assert "a name of a few words" in messages[0]["content"]
    init = structured.schema_of(asks[0][1].json_schema)
    assert list(init["properties"]) == ["criteria", "observations"] and init["required"] == ["criteria"]
    assert "- Accuracy: The output states only what the source says." in asks[1][0][0]["content"], \
        "the refine prompt lists the current criteria as name: definition"
    assert judge.state["criteria"] == NAMED and judge.state["criteria_form"] == "paper"
    assert judge.state["reads"]["criteria"] == {"json": 2} and not judge.state["rejected"]
    assert [p for k, p in events if k == "criteria_form"] == [{"criteria_form": "paper", "parameter": "paper"}]
    # the scoring prompts show every criterion as "name: definition", and McS-E scores each by its name
    mcse = [(m, p) for m, p in backend.calls if structured.kind_of(p.json_schema) == structured.EXPLAINED_SCORES
            and "criteria" in structured.schema_of(p.json_schema)["properties"]]
    assert mcse and all(list(structured.schema_of(p.json_schema)["properties"]["criteria"]["properties"])
                        == list(NAMED) for _, p in mcse)
    assert all(f"{n}: {d}" in m[0]["content"] for m, _ in mcse for n, d in NAMED.items())


def test_a_junk_named_criterion_is_refused_and_the_others_kept(store, data):
    samples, aspect, task = data
    junk = {**NAMED, "...": "...", "Quality": "It is a great one, of high quality."}
    llm, _ = fake_llm(named_judge(junk), store=store, concurrency=2)
    judge = get_method("active_critic", {"n_candidates": 2, "seed": 0, "criteria_form": "paper"}).fit(
        samples[:10], aspect, FitContext(llm=llm, task=task))
    assert judge.state["criteria"] == NAMED
    refused = {r["name"]: r["rule"] for r in judge.state["rejected"] if r["stage"] == "criteria"}
    assert refused == {"...": "empty", "Quality": "circular"}


def test_the_paper_forms_retry_and_fallbacks_ask_for_named_criteria_too():
    from judge_engine.llm import LLMConfig, make_llm

    asked = []

    def responder(messages, params):
        asked.append((messages[-1]["content"], structured.schema_of(params.json_schema)))
        schema = asked[-1][1]
        if schema and "qualities" in schema["properties"]:
            return json.dumps({"qualities": [{"name": n, "definition": d} for n, d in NAMED.items()]})
        return json.dumps({"criteria": [{"name": "Accuracy", "definition": NAMED["Accuracy"]}]})  # too few

    llm = make_llm(LLMConfig(), backend=FakeBackend(responder))
    prompt = ac.criteria_qualities_prompt(task="summarization", quality="coherence", output="output",
                                          definition="How well the sentences fit together.", opener="")
    assert "Give 5 different qualities" in prompt and "Start each sentence" not in prompt
    reply = _ask_criteria(llm, "paper prompt", GenerationParams(max_tokens=64), opener="",
                          fallback="list prompt", qualities_fallback=prompt)
    criteria, retried, read = reply.criteria, reply.retried, reply.read
    assert criteria == NAMED and retried and read == "qualities"
    assert [list(schema["properties"]) for _, schema in asked] == [["criteria"], ["criteria"], ["qualities"]]
    assert all(schema["properties"][key]["items"]["type"] == "object"
               for _, schema in asked for key in schema["properties"])
    retry = asked[1][0]
    assert '"name"' in retry and '"definition"' in retry and "starting with" not in retry
    refused = ac.CRITERIA_REFUSED_RETRY.format(usable=1, proposed=2, refused="'X'", expected=ac.criteria_shape(""),
                                               items="criteria")
    assert "Keep the usable criteria" in refused


@pytest.mark.parametrize("config, resolved", [({}, "sentence"), (OPENAI, "paper")], ids=["embedded", "openai"])
def test_auto_asks_for_sentences_on_the_embedded_model_and_named_criteria_elsewhere(store, data, config, resolved):
    samples, aspect, task = data
    llm, backend = fake_llm(named_judge(), store=store, concurrency=2, **config)
    method = get_method("active_critic", {"n_candidates": 2, "seed": 0})
    assert method.criteria_form == "auto"
    judge = method.fit(samples[:10], aspect, FitContext(llm=llm, task=task))
    item = structured.schema_of(_criteria_requests(backend)[0][1].json_schema)["properties"]["criteria"]["items"]
    assert judge.state["criteria_form"] == resolved and judge.params["criteria_form"] == "auto"
    if resolved == "sentence":
        assert item["pattern"].startswith("^A good output ") and judge.state["criteria"] == CRITERIA
    else:
        assert item["type"] == "object" and judge.state["criteria"] == NAMED


def test_the_estimate_bounds_the_paper_forms_calls(data):
    samples, aspect, task = data

    def worst_named(messages, params):  # three named criteria break the minimum at every step
        if structured.kind_of(params.json_schema) == structured.CRITERIA:
            schema = structured.schema_of(params.json_schema)
            key = next(k for k in schema["properties"] if k != "observations")
            return json.dumps({key: [{"name": n, "definition": d} for n, d in list(NAMED.items())[:3]]})
        return worst_case(messages, params)

    backend = FakeBackend(worst_named)
    llm, _ = fake_llm(fake_backend=backend, concurrency=2, **OPENAI)
    method = get_method("active_critic", {"n_candidates": 2, "variant": "fine"})
    judge = method.fit(samples[:12], aspect, FitContext(llm=llm, task=task))
    assert judge.state["criteria_form"] == "paper"
    assert 0 < len(backend.calls) <= method.estimate_calls(12, 5)["fit"]
    assert len(_criteria_requests(backend)) == 3 + 2 * 2, \
        "init, its retry and the qualities prompt; per further batch a refine and its retry"
