"""What a rendering tells an estimate: prompt tokens new to a model that keeps earlier prompts, and reply sizes."""

from __future__ import annotations

import json

import pytest

from judge_engine.llm.base import GenerationParams
from judge_engine.runs import rendering

SCORE_SCHEMA = json.dumps({"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3]}},
                           "required": ["score"]})
TEXT_SCHEMA = json.dumps({"type": "object", "properties": {"reasoning": {"type": "string"},
                                                           "score": {"type": "integer"}}})


SHORT = GenerationParams(max_tokens=32)


def _ask(recorder, text: str) -> None:
    recorder.generate([{"role": "user", "content": text}], SHORT)


def test_a_prompt_that_repeats_an_earlier_ones_beginning_is_new_only_after_it():
    recorder = rendering.Recorder()
    article = "The council voted to keep the night buses. " * 40
    for i in range(4):
        _ask(recorder, f"Rate the summary.\n{article}\nSummary {i}: " + "word " * 20)
    first, *rest = recorder.sent
    assert first.new_tokens == pytest.approx(first.prompt_tokens, abs=2)
    assert all(r.new_tokens < 0.2 * r.prompt_tokens for r in rest)


def test_unrelated_prompts_are_new_and_old_ones_are_forgotten():
    recorder = rendering.Recorder()
    _ask(recorder, "A" * 800)
    for i in range(rendering.KEPT_PREFIXES):
        _ask(recorder, f"{i:03d}" + "B" * 800)
    assert min(r.new_tokens for r in recorder.sent[1:]) > 0.9 * recorder.sent[1].prompt_tokens
    _ask(recorder, "A" * 800)  # more than KEPT_PREFIXES prompts ago: not kept
    assert recorder.sent[-1].new_tokens == pytest.approx(recorder.sent[-1].prompt_tokens, abs=2)
    _ask(recorder, "A" * 800)  # just asked: all of it repeats
    assert recorder.sent[-1].new_tokens < 0.05 * recorder.sent[-1].prompt_tokens


def test_a_reply_that_can_hold_only_a_score_counts_a_few_tokens():
    assert rendering.score_only(SCORE_SCHEMA) and not rendering.score_only(TEXT_SCHEMA)
    assert not rendering.score_only("not json") and not rendering.score_only(json.dumps({"type": "object"}))
    done = rendering.render(lambda llm: [llm.complete([{"role": "user", "content": "x"}],
                                                      GenerationParams(max_tokens=32, json_schema=schema))
                                         for schema in (SCORE_SCHEMA, SCORE_SCHEMA, TEXT_SCHEMA, "")])
    assert done.requests == 4
    typical = 100.0
    expected = (2 * rendering.SCORE_REPLY_TOKENS + 2 * min(typical, (4 * 32) / 4)) / 4
    assert done.completion_per_request(typical) == pytest.approx(expected)
    assert 0 < done.new_share <= 1.0


def test_on_a_model_that_writes_toward_its_bounds_each_text_reply_is_a_share_of_its_own_bound():
    def work(llm):
        ask = [{"role": "user", "content": "Explain, then score."}]
        llm.complete(ask, GenerationParams(max_tokens=600, json_schema=TEXT_SCHEMA))
        llm.complete(ask + [{"role": "assistant", "content": ""}, {"role": "user", "content": "Only the score."}],
                     GenerationParams(max_tokens=16, json_schema=SCORE_SCHEMA))  # a follow-up turn
        llm.complete([{"role": "user", "content": "Score it."}], GenerationParams(max_tokens=48, json_schema=SCORE_SCHEMA))
        llm.complete([{"role": "user", "content": "Write criteria."}], GenerationParams(max_tokens=200))

    done = rendering.render(work)
    assert done.requests == 4 and [r.follow_up for r in done.sent] == [False, True, False, False]
    # the follow-up asks again only because the reply before it was empty: the three first turns stand
    expected = (0.5 * 600 + rendering.SCORE_REPLY_TOKENS + 0.5 * 200) / 3
    assert done.completion_per_request(100.0, bound_share=0.5) == pytest.approx(expected)
    # without a share, as on a server: the typical reply, at most what the requests allow on average
    assert done.completion_per_request(100.0) == pytest.approx(
        (2 * rendering.SCORE_REPLY_TOKENS + 2 * min(100.0, (600 + 16 + 48 + 200) / 4)) / 4)
