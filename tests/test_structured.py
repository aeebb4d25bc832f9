"""Schemas of structured replies, reading replies against them, and coverage-aware selection fitness."""

import json
import math
import re

import pytest

from judge_engine import structured
from judge_engine.llm import GenerationParams
from judge_engine.metrics import coverage_adjusted, selection_fitness


def test_score_schema_reads_a_score_on_the_scale_and_refuses_one_off_it():
    schema = structured.score_schema(1, 5)
    assert structured.read_json('{"score": 4}', schema).value == {"score": 4}
    off = structured.read_json('{"score": 7}', schema)
    assert not off.ok and "score" in off.error
    assert structured.read_json("I would say 4", schema).error == "no JSON in the reply"


def test_explanation_order_follows_the_request():
    before = structured.score_schema(1, 5, explanation="before")
    after = structured.score_schema(1, 5, explanation="after")
    assert list(before["properties"]) == ["explanation", "score"]
    assert list(after["properties"]) == ["score", "explanation"]
    with pytest.raises(ValueError):
        structured.score_schema(1, 5, explanation="middle")


def test_list_schemas_bound_their_items():
    schema = structured.string_list_schema(structured.HYPOTHESES, "hypotheses", min_items=2, max_items=3,
                                           max_length=20)
    assert structured.read_json('{"hypotheses": ["clear", "short"]}', schema).ok
    assert not structured.read_json('{"hypotheses": ["clear"]}', schema).ok  # too few
    assert not structured.read_json('{"hypotheses": ["' + "x" * 21 + '", "a"]}', schema).ok  # too long
    named = structured.named_items_schema(structured.CRITERIA, "criteria", min_items=1, max_items=2)
    assert structured.read_json('```json\n{"criteria": [{"name": "A", "definition": "d"}]}\n```', named).ok
    assert not structured.read_json('{"criteria": [{"name": "A"}]}', named).ok


def test_the_schema_travels_as_canonical_text_and_names_its_kind():
    schema = structured.yes_no_schema()
    param = structured.as_param(schema)
    assert json.loads(param) == schema and structured.kind_of(param) == structured.YES_NO
    assert structured.as_param(None) == "" and structured.kind_of("") == ""


def test_a_schema_changes_the_cache_key_and_free_text_keys_stay_as_they_were():
    plain = GenerationParams(max_tokens=8)
    assert "json_schema" not in plain.cache_fields()
    constrained = plain.with_(json_schema=structured.as_param(structured.score_schema(1, 5)))
    assert constrained.cache_fields()["json_schema"] == constrained.json_schema


def test_a_candidate_that_scores_few_items_cannot_beat_one_that_scores_all():
    # 2 of 10 scored, perfect there; 10 of 10 scored, slightly lower
    few = selection_fitness([1, 2, 3, 4, 5, 1, 2, 3, 4, 5],
                            [1, 2] + [math.nan] * 8)
    full = selection_fitness([1, 2, 3, 4, 5, 1, 2, 3, 4, 5],
                             [1, 2, 3, 4, 4, 1, 2, 3, 5, 5])
    assert few.correlation > full.correlation
    assert not few.selectable and math.isnan(few.value) and "2 of 10" in few.reason
    assert full.selectable and full.value > 0


def test_coverage_shrinks_fitness_and_non_positive_correlation_is_never_selectable():
    assert coverage_adjusted(0.6, 9, 10).value == pytest.approx(0.54)
    assert coverage_adjusted(0.6, 9, 10).value < coverage_adjusted(0.56, 10, 10).value
    assert not coverage_adjusted(-0.3, 10, 10).selectable
    assert not coverage_adjusted(0.0, 10, 10).selectable
    assert not coverage_adjusted(math.nan, 10, 10).selectable


def test_the_request_keeps_the_order_of_properties():
    # a grammar writes the properties in this order: score first means the digit comes first
    after = structured.as_param(structured.score_schema(1, 5, explanation="after"))
    before = structured.as_param(structured.score_schema(1, 5, explanation="before"))
    assert list(json.loads(after)["properties"]) == ["score", "explanation"]
    assert list(json.loads(before)["properties"]) == ["explanation", "score"]
    assert after == structured.as_param(structured.score_schema(1, 5, explanation="after"))  # stable text


def test_statement_schema_takes_a_sentence_after_its_opener_and_refuses_names_and_timestamps():
    schema = structured.statement_list_schema(structured.DECOMPOSITION, "children", opener="A good summary", min_items=2,
                                      max_items=3)
    pattern = schema["properties"]["children"]["items"]["pattern"]
    assert re.match(pattern, "A good summary is consistent with the article's content.")
    assert not re.match(pattern, "A good summary is Aurora, a great summary.")  # a capital: a name
    assert not re.match(pattern, "A good summary 2019-08-24 23:57:56.")
    assert not re.match(pattern, "Coherence: the summary is well organised.")
    assert not re.match(pattern, "A good summary is consistent with the article")  # no full stop
    assert structured.read_json('{"children": ["A good summary keeps the order of events."]}', schema).ok is False  # 1 < 2
    two = '{"children": ["A good summary keeps the order of events.", "A good summary has no contradictions."]}'
    assert structured.read_json(two, schema).ok


def test_literal_pattern_escapes_what_a_grammar_converter_would_misread():
    for text in ("A good Q&A answer", "A good (short) reply", "A good multi-turn reply", "A good a.b answer"):
        pattern = structured.literal_pattern(text)
        assert "\\ " not in pattern
        assert re.fullmatch(pattern, text)
    assert not re.fullmatch(structured.literal_pattern("A good a.b answer"), "A good axb answer")


def test_find_statements_reads_lists_running_text_and_the_finished_items_of_a_cut_off_reply():
    opener = "A good summary"
    listed = "Here:\n1. A good summary is faithful to the article.\n- a good summary names the main event"
    assert structured.find_statements(listed, opener) == ["A good summary is faithful to the article.",
                                                          "a good summary names the main event"], \
        "a list item, any case of the opener; a plain line needs no full stop"
    running = "A good summary is short. It helps. A good summary keeps the order of events! Then more."
    assert structured.find_statements(running, opener) == ["A good summary is short.",
                                                           "A good summary keeps the order of events!"]
    cut = '{"children": ["A good summary is concise, with no filler.", "A good summary has no err'
    assert structured.find_statements(cut, opener) == ["A good summary is concise, with no filler."], \
        "an unfinished JSON item was cut off by the token limit"
    assert structured.find_statements("A good summary of <<<the text>>> is this.", opener) == []
    assert structured.find_statements("A good summary is short.", "") == []


def test_a_remembered_reply_is_checked_against_each_schema_and_a_long_one_is_checked_every_time():
    # short replies have their schema check remembered (issue 48, CPU per scored item): the memory is keyed by
    # the schema too, so the same text can be valid for one scale and off another
    reply = '{"score": 7}'
    assert structured.read_score(reply, 1, 10).score == pytest.approx(7.0)
    five = structured.read_score(reply, 1, 5)
    assert math.isnan(five.score) and "7 is not one of" in five.reason
    assert structured.read_score(reply, 1, 10).score == pytest.approx(7.0)
    # an equal schema built anew reads the same; the reply's value is never shared between readings
    first = structured.read_json('{"score": 2}', structured.score_schema(1, 5))
    first.value["score"] = 99
    assert structured.read_json('{"score": 2}', structured.score_schema(1, 5)).value == {"score": 2}
    padded = '{"score": 3, "note": "' + "x" * structured.SHORT_REPLY_CHARS + '"}'
    assert "Additional properties" in structured.read_json(padded, structured.score_schema(1, 5)).error
    assert structured.read_json(padded[:-1], structured.score_schema(1, 5)).error == "no JSON in the reply"
