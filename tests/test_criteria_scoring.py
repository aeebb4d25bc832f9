"""Per-criterion scoring: layouts, joint JSON scoring, one follow-up, missing never becomes a number."""

import json
import math
import re

import pytest

from judge_engine.criteria_scoring import (CriterionText, ScoringSettings, criterion_prompt, estimate_criteria_calls,
                                           score_criteria)
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.prompting import TaskInfo, judge_scale
from tests.scripted import fake_llm

CRITERIA = (CriterionText("c1", "Clarity", "Is every sentence easy to follow?"),
            CriterionText("c2", "Coverage", "Does it keep the main points?"))
INSTRUCTIONS = "Judge the text with the criterion as your rubric."


def last_user(messages):
    return [m for m in messages if m["role"] == "user"][-1]["content"]


def _kw(tiny_dataset, llm, **settings):
    """The keywords of score_criteria but the samples and criteria; ``settings`` build its ScoringSettings."""
    return dict(instructions=INSTRUCTIONS, aspect=tiny_dataset.aspects[0], task=TaskInfo.of(tiny_dataset), llm=llm,
                settings=ScoringSettings(**settings))


def _prompt(sample, criterion, aspect, task, **settings):
    """The free-text prompt (structured=False unless given) of one criterion under ``settings``."""
    return criterion_prompt(sample, criterion, instructions=INSTRUCTIONS, aspect=aspect, task=task,
                            settings=ScoringSettings(**{"structured": False, **settings}))


def test_layouts_put_the_sample_first_or_last(tiny_dataset):
    task, aspect, sample = TaskInfo.of(tiny_dataset), tiny_dataset.aspects[0], tiny_dataset.samples[0]
    paper = _prompt(sample, CRITERIA[0], aspect, task)
    first = _prompt(sample, CRITERIA[0], aspect, task, layout="sample_first")
    assert paper.index("Clarity") < paper.index(sample.output) and first.index(sample.output) < first.index("Clarity")
    other = _prompt(sample, CRITERIA[1], aspect, task, layout="sample_first")
    shared = len(next(p for p in re.split(r"(?=Criterion to apply)", first)))
    assert first[:shared] == other[:shared], "criteria share the whole sample prefix"
    assert "[[N]]" in paper
    with pytest.raises(ValueError, match="layout"):
        ScoringSettings(layout="x")


def test_sample_first_writes_the_scale_before_the_criterion_and_ends_with_the_cue(tiny_dataset):
    task, aspect, sample = TaskInfo.of(tiny_dataset), tiny_dataset.aspects[0], tiny_dataset.samples[0]
    low, high = judge_scale(aspect)
    prompts = [_prompt(sample, c, aspect, task, layout="sample_first", reasoning=False) for c in CRITERIA]
    for p, c in zip(prompts, CRITERIA):
        assert p.endswith(f"Criterion to apply: {c.name}\n{c.definition}\n\nScore:")
        assert p.index(f"{low} (worst)") < p.index(f"{high} (best)") < p.index("Criterion to apply")
    cut = prompts[0].index("Criterion to apply")
    assert prompts[1][:cut] == prompts[0][:cut], "everything before the criterion is shared"
    reasoning = _prompt(sample, CRITERIA[0], aspect, task, layout="sample_first")
    assert reasoning.rstrip().endswith("written as [[N]].") and "Score:" not in reasoning


def test_one_call_per_sample_and_criterion_with_explanations(store, tiny_dataset):
    def reply(messages, params):
        text = last_user(messages)
        return "Clear enough. [[4]]" if "Clarity" in text else "Misses a point. [[2]]"

    llm, backend = fake_llm(reply, store=store)
    samples = tiny_dataset.samples[:3]
    out = score_criteria(samples, CRITERIA, **_kw(tiny_dataset, llm))
    assert len(backend.calls) == 6 == estimate_criteria_calls(3, 2)
    assert [(r["c1"].score, r["c2"].score) for r in out] == [pytest.approx((4.0, 2.0))] * 3
    assert out[0]["c1"].explanation == "Clear enough."


def test_unparsed_reply_gets_one_follow_up_then_is_missing(store, tiny_dataset):
    def reply(messages, params):
        if len(messages) > 1:  # the follow-up turn
            return "[[5]]" if "Clarity" in messages[0]["content"] else "no idea"
        return "I would rather not say."

    llm, backend = fake_llm(reply, store=store)
    out = score_criteria(tiny_dataset.samples[:2], CRITERIA, **_kw(tiny_dataset, llm))
    assert len(backend.calls) == 8  # 4 first replies + 4 follow-ups, never more
    assert [r["c1"].score for r in out] == pytest.approx([5.0, 5.0])
    assert all(math.isnan(r["c2"].score) and r["c2"].missing for r in out)
    assert "follow-up" in out[0]["c2"].raw


def test_joint_scores_all_criteria_in_one_json_call(store, tiny_dataset):
    llm, backend = fake_llm(lambda m, p: json.dumps({"c1": 3, "c2": {"score": "5"}}), store=store)
    out = score_criteria(tiny_dataset.samples[:4], CRITERIA, **_kw(tiny_dataset, llm, joint=True))
    assert len(backend.calls) == 4 == estimate_criteria_calls(4, 2, joint=True)
    assert [(r["c1"].score, r["c2"].score) for r in out] == [pytest.approx((3.0, 5.0))] * 4


def test_joint_out_of_range_value_is_missing(store, tiny_dataset):
    llm, _ = fake_llm(lambda m, p: '{"c1": 9, "c2": 2}', store=store)
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, **_kw(tiny_dataset, llm, joint=True))
    assert math.isnan(out[0]["c1"].score) and out[0]["c2"].score == pytest.approx(2.0)


def test_repeat_is_answered_from_the_cache(store, tiny_dataset):
    llm, backend = fake_llm(lambda m, p: "[[3]]", store=store)
    kwargs = _kw(tiny_dataset, llm)
    score_criteria(tiny_dataset.samples[:3], CRITERIA, **kwargs)
    score_criteria(tiny_dataset.samples[:3], CRITERIA, **kwargs)
    assert len(backend.calls) == 6
    edited = (CRITERIA[0], CriterionText("c2", "Coverage", "Does it keep every main point?"))
    score_criteria(tiny_dataset.samples[:3], edited, **kwargs)
    assert len(backend.calls) == 9, "only the edited criterion is scored again"


def test_duplicate_keys_are_refused(store, tiny_dataset):
    llm, _ = fake_llm(lambda m, p: "[[3]]", store=store)
    with pytest.raises(ValueError, match="unique"):
        score_criteria(tiny_dataset.samples[:1], (CRITERIA[0], CRITERIA[0]), **_kw(tiny_dataset, llm))


def test_weighted_score_first_uses_logprobs_when_offered(store, tiny_dataset):
    backend = FakeBackend(lambda m, p: "4", logprobs=True)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA,
                         **_kw(tiny_dataset, llm, reasoning=False, weighted=True, max_tokens=4))
    # the fake puts 70% on "4" and 10% on each of "3" and "5": expectation 4.0 over the renormalised scale
    assert out[0]["c1"].score == pytest.approx(4.0)
    assert all(params.top_logprobs == 20 for _, params in backend.calls)


# ---- structured replies -------------------------------------------------------------------------

class TokenBackend:
    """A scripted backend returning per-token logprobs: ``script(messages, params) -> [(token, {alt: p})]``."""

    name = "tokens"
    model_id = "tokens"
    supports_logprobs = True

    def __init__(self, script):
        self.script = script
        self.calls = []

    def generate(self, messages, params):
        from judge_engine.llm.base import Completion
        self.calls.append((messages, params))
        tokens = self.script(messages, params)
        positions = tuple({"token": t, "logprob": math.log(top.get(t, 1.0)),
                           "top": {k: math.log(p) for k, p in top.items()}} for t, top in tokens)
        return Completion(texts=("".join(t for t, _ in tokens),),
                          logprobs=(positions,) if params.top_logprobs else (), model="tokens")


def test_every_request_carries_the_score_schema_and_json_replies_are_read_as_json(store, tiny_dataset):
    from judge_engine import structured
    low, high = judge_scale(tiny_dataset.aspects[0])

    def reply(messages, params):
        schema = structured.schema_of(params.json_schema)
        assert schema["title"] == structured.SCORE
        if "Clarity" in last_user(messages):
            return json.dumps({"explanation": "Clear.", "score": high})
        return "Misses a point. [[2]]"  # a server that ignored the schema: the free-text fallback reads it

    llm, backend = fake_llm(reply, store=store)
    out = score_criteria(tiny_dataset.samples[:2], CRITERIA, **_kw(tiny_dataset, llm))
    schema = structured.schema_of(backend.calls[0][1].json_schema)
    assert list(schema["properties"]) == ["explanation", "score"], "reasoning comes before the score"
    assert schema["properties"]["score"]["enum"] == list(range(low, high + 1))
    assert '{"explanation": "...", "score": N}' in backend.calls[0][0][0]["content"], "the prompt asks for the JSON"
    assert [r["c1"].score for r in out] == pytest.approx([high, high])
    assert [(r["c1"].source, r["c1"].explanation) for r in out] == [("json", "Clear.")] * 2
    assert [r["c2"].score for r in out] == pytest.approx([2.0, 2.0]) and {r["c2"].source for r in out} == {"text"}
    first = score_criteria(tiny_dataset.samples[:1], CRITERIA, **_kw(tiny_dataset, llm, reasoning=False))
    score_first = structured.schema_of(backend.calls[-1][1].json_schema)
    assert list(score_first["properties"]) == ["score"] and first[0]["c2"].source == "text"


def test_a_missing_score_says_why_and_the_follow_up_asks_for_the_json(store, tiny_dataset):
    from judge_engine import structured

    def reply(messages, params):
        if len(messages) > 1:
            assert list(structured.schema_of(params.json_schema)["properties"]) == ["score"]
            return '{"score": 3}' if "Clarity" in messages[0]["content"] else '{"score": 99}'
        return "I would rather not say."

    llm, backend = fake_llm(reply, store=store)
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, **_kw(tiny_dataset, llm))
    assert out[0]["c1"].score == pytest.approx(3.0) and (out[0]["c1"].source, out[0]["c1"].follow_up) == ("json", True)
    assert out[0]["c2"].missing and out[0]["c2"].source == "missing" and "JSON" in out[0]["c2"].missing_reason
    assert len(backend.calls) == 4 == estimate_criteria_calls(1, 2, follow_ups=True)


def test_weighted_json_reply_reads_the_digit_position_not_the_sampled_number(store, tiny_dataset):
    """The score-first JSON puts the digit at token 4; the weighted value comes from that position."""
    def script(messages, params):
        return [('{"', {'{"': 0.9, "{": 0.1}), ("score", {"score": 1.0}), ('":', {'":': 1.0}), (" ", {" ": 1.0}),
                ("4", {"4": 0.5, "2": 0.25, "5": 0.25}), ("}", {"}": 1.0})]

    backend = TokenBackend(script)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, **_kw(tiny_dataset, llm, reasoning=False,
                                                                    weighted=True, max_tokens=32))
    expected = 4 * 0.5 + 2 * 0.25 + 5 * 0.25
    assert out[0]["c1"].score == pytest.approx(expected) and out[0]["c1"].source == "logprobs"
    assert not out[0]["c1"].from_alternatives
    assert all(p.top_logprobs == 20 and 5 < p.max_tokens <= 16 for _, p in backend.calls), \
        "the budget reaches the digit and keeps it within the first 16 tokens"


def test_first_position_alternatives_are_flagged_and_too_little_mass_is_missing(store, tiny_dataset):
    """Free-text prompts end with the score cue: a reply that chose no number is read from the first position's
    alternatives only when the scale's tokens hold enough mass there, and such a score is flagged."""
    def script(messages, params):
        heavy = "Clarity" in messages[0]["content"]
        top = {"The": 0.3, "3": 0.35, "5": 0.35} if heavy else {"The": 0.9, "3": 0.05, "5": 0.05}
        return [("The", top), (" text", {" text": 1.0})]

    backend = TokenBackend(script)
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, **_kw(tiny_dataset, llm, reasoning=False,
                                                                    weighted=True, structured=False))
    assert out[0]["c1"].score == pytest.approx(4.0) and out[0]["c1"].from_alternatives
    assert out[0]["c1"].source == "logprobs_first_position"
    assert out[0]["c2"].missing and "10%" in out[0]["c2"].missing_reason
    assert all(not p.json_schema for _, p in backend.calls), "structured=False sends free-text requests"


def test_joint_scoring_asks_for_an_object_of_every_criterion_score(store, tiny_dataset):
    from judge_engine import structured
    llm, backend = fake_llm(lambda m, p: json.dumps({"c1": 2, "c2": 4}), store=store)
    out = score_criteria(tiny_dataset.samples[:2], CRITERIA, **_kw(tiny_dataset, llm, joint=True))
    schema = structured.schema_of(backend.calls[0][1].json_schema)
    assert schema["title"] == structured.SCORE and sorted(schema["required"]) == ["c1", "c2"]
    assert [(r["c1"].score, r["c2"].score) for r in out] == [pytest.approx((2.0, 4.0))] * 2
    assert {r[k].source for r in out for k in ("c1", "c2")} == {"json"}


def test_a_backend_with_structured_off_gets_the_free_text_prompts(store, tiny_dataset):
    llm, backend = fake_llm(lambda m, p: "4", store=store, structured="off")
    out = score_criteria(tiny_dataset.samples[:1], CRITERIA, **_kw(tiny_dataset, llm, reasoning=False))
    assert all(not p.json_schema for _, p in backend.calls)
    assert backend.calls[0][0][0]["content"].endswith("Score:") and out[0]["c1"].source == "text"


def test_settings_follow_what_the_backend_can_honour(store):
    settings = ScoringSettings(reasoning=False, weighted=True)
    auto, _ = fake_llm(lambda m, p: "4", store=store)
    off, _ = fake_llm(lambda m, p: "4", store=store, structured="off")
    assert settings.for_backend(auto) is settings
    assert settings.for_backend(off) == ScoringSettings(reasoning=False, weighted=True, structured=False)
