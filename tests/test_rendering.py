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
    first, *rest = recorder.new_tokens
    assert first == pytest.approx(recorder.prompt_tokens[0], abs=2)
    assert all(new < 0.2 * sent for new, sent in zip(rest, recorder.prompt_tokens[1:]))


def test_unrelated_prompts_are_new_and_old_ones_are_forgotten():
    recorder = rendering.Recorder()
    _ask(recorder, "A" * 800)
    for i in range(rendering.KEPT_PREFIXES):
        _ask(recorder, f"{i:03d}" + "B" * 800)
    assert min(recorder.new_tokens[1:]) > 0.9 * recorder.prompt_tokens[1]
    _ask(recorder, "A" * 800)  # more than KEPT_PREFIXES prompts ago: not kept
    assert recorder.new_tokens[-1] == pytest.approx(recorder.prompt_tokens[-1], abs=2)
    _ask(recorder, "A" * 800)  # just asked: all of it repeats
    assert recorder.new_tokens[-1] < 0.05 * recorder.prompt_tokens[-1]


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
