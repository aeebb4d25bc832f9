"""Per-criterion scoring: layouts, joint JSON scoring, one follow-up, missing never becomes a number."""

import json
import math
import re

import pytest

from judge_engine.criteria_scoring import (CriterionText, criterion_prompt, estimate_criteria_calls, score_criteria)
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.prompting import TaskInfo, judge_scale

CRITERIA = (CriterionText("c1", "Clarity", "Is every sentence easy to follow?"),
            CriterionText("c2", "Coverage", "Does it keep the main points?"))
INSTRUCTIONS = "Judge the text with the criterion as your rubric."


def llm_with(store, responder, **config):
    backend = FakeBackend(responder)
    return make_llm(LLMConfig(**config), store=store, backend=backend), backend


def last_user(messages):
    return [m for m in messages if m["role"] == "user"][-1]["content"]


def test_layouts_put_the_sample_first_or_last(tiny_dataset):
    task, aspect, sample = TaskInfo.of(tiny_dataset), tiny_dataset.aspects[0], tiny_dataset.samples[0]
    paper = criterion_prompt(sample, CRITERIA[0], instructions=INSTRUCTIONS, aspect=aspect, task=task)
    first = criterion_prompt(sample, CRITERIA[0], instructions=INSTRUCTIONS, aspect=aspect, task=task,
                             layout="sample_first")
    assert paper.index("Clarity") < paper.index(sample.output) and first.index(sample.output) < first.index("Clarity")
    other = criterion_prompt(sample, CRITERIA[1], instructions=INSTRUCTIONS, aspect=aspect, task=task,
                             layout="sample_first")
    shared = len(next(p for p in re.split(r"(?=Criterion to apply)", first)))
    assert first[:shared] == other[:shared], "criteria share the whole sample prefix"
    assert "[[N]]" in paper
    with pytest.raises(ValueError, match="layout"):
        criterion_prompt(sample, CRITERIA[0], instructions=INSTRUCTIONS, aspect=aspect, task=task, layout="x")


def test_sample_first_writes_the_scale_before_the_criterion_and_ends_with_the_cue(tiny_dataset):
    task, aspect, sample = TaskInfo.of(tiny_dataset), tiny_dataset.aspects[0], tiny_dataset.samples[0]
    low, high = judge_scale(aspect)
    prompts = [criterion_prompt(sample, c, instructions=INSTRUCTIONS, aspect=aspect, task=task,
                                layout="sample_first", reasoning=False) for c in CRITERIA]
    for p, c in zip(prompts, CRITERIA):
        assert p.endswith(f"Criterion to apply: {c.name}\n{c.definition}\n\nScore:")
        assert p.index(f"{low} (worst)") < p.index(f"{high} (best)") < p.index("Criterion to apply")
    cut = prompts[0].index("Criterion to apply")
    assert prompts[1][:cut] == prompts[0][:cut], "everything before the criterion is shared"
    reasoning = criterion_prompt(sample, CRITERIA[0], instructions=INSTRUCTIONS, aspect=aspect, task=task,
                                 layout="sample_first")
    assert reasoning.rstrip().endswith("written as [[N]].") and "Score:" not in reasoning


def test_one_call_per_sample_and_criterion_with_explanations(store, tiny_dataset):
    def reply(messages, params):
        text = last_user(messages)
        return "Clear enough. [[4]]" if "Clarity" in text else "Misses a point. [[2]]"

    llm, backend = llm_with(store, reply)
    samples = tiny_dataset.samples[:3]
    out = score_criteria(samples, CRITERIA, instructions=INSTRUCTIONS, aspect=tiny_dataset.aspects[0],
                         task=TaskInfo.of(tiny_dataset), llm=llm)
    assert len(backend.calls) == 6 == estimate_criteria_calls(3, 2)
    assert [(r["c1"].score, r["c2"].score) for r in out] == [(4.0, 2.0)] * 3
    assert out[0]["c1"].explanation == "Clear enough."


def test_unparsed_reply_gets_one_follow_up_then_is_missing(store, tiny_dataset):
    def reply(messages, params):
        if len(messages) > 1:  # the follow-up turn
            return "[[5]]" if "Clarity" in messages[0]["content"] else "no idea"
        return "I would rather not say."

    llm, backend = llm_with(store, reply)
    out = score_criteria(tiny_dataset.samples[:2], CRITERIA, instructions=INSTRUCTIONS,
                         aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm)
    assert len(backend.calls) == 8  # 4 first replies + 4 follow-ups, never more
    assert all(r["c1"].score == 5.0 for r in out)
    assert all(math.isnan(r["c2"].score) and r["c2"].missing for r in out)
    assert "follow-up" in out[0]["c2"].raw


def test_joint_scores_all_criteria_in_one_json_call(store, tiny_dataset):
    llm, backend = llm_with(store, lambda m, p: json.dumps({"c1": 3, "c2": {"score": "5"}}))
    out = score_criteria(tiny_dataset.samples[:4], CRITERIA, instructions=INSTRUCTIONS,
                         aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm, joint=True)
    assert len(backend.calls) == 4 == estimate_criteria_calls(4, 2, joint=True)
    assert all((r["c1"].score, r["c2"].score) == (3.0, 5.0) for r in out)


def test_joint_out_of_range_value_is_missing(store, tiny_dataset):
    llm, _ = llm_with(store, lambda m, p: '{"c1": 9, "c2": 2}')
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, instructions=INSTRUCTIONS,
                         aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm, joint=True)
    assert math.isnan(out[0]["c1"].score) and out[0]["c2"].score == 2.0


def test_repeat_is_answered_from_the_cache(store, tiny_dataset):
    llm, backend = llm_with(store, lambda m, p: "[[3]]")
    kwargs = dict(instructions=INSTRUCTIONS, aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm)
    score_criteria(tiny_dataset.samples[:3], CRITERIA, **kwargs)
    score_criteria(tiny_dataset.samples[:3], CRITERIA, **kwargs)
    assert len(backend.calls) == 6
    edited = (CRITERIA[0], CriterionText("c2", "Coverage", "Does it keep every main point?"))
    score_criteria(tiny_dataset.samples[:3], edited, **kwargs)
    assert len(backend.calls) == 9, "only the edited criterion is scored again"


def test_duplicate_keys_are_refused(store, tiny_dataset):
    llm, _ = llm_with(store, lambda m, p: "[[3]]")
    with pytest.raises(ValueError, match="unique"):
        score_criteria(tiny_dataset.samples[:1], (CRITERIA[0], CRITERIA[0]), instructions=INSTRUCTIONS,
                       aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm)


def test_weighted_score_first_uses_logprobs_when_offered(store, tiny_dataset):
    backend = FakeBackend(lambda m, p: "4", logprobs=True)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, instructions=INSTRUCTIONS,
                         aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm,
                         reasoning=False, weighted=True, max_tokens=4)
    # the fake puts 70% on "4" and 10% on each of "3" and "5": expectation 4.0 over the renormalised scale
    assert out[0]["c1"].score == pytest.approx(4.0)
    assert all(params.top_logprobs == 20 for _, params in backend.calls)
