import math

import pytest

from judge_engine.parsing import (mean_ignoring_missing, parse_json_object, parse_score, read_weighted, scale_distribution,
                                  weighted_score)


@pytest.mark.parametrize("text, expected", [
    ("[[4]]", 4.0),
    ("The summary is fine. [[3]]", 3.0),
    ("First I thought [[2]] but on reflection [[5]]", 5.0),
    ('{"score": 2, "explanation": "weak"}', 2.0),
    ('```json\n{"rating": "4"}\n```', 4.0),
    ("Score: 4", 4.0),
    ("Final score: 3/5", 3.0),
    ("rating = 2.5", 2.5),
    ("5", 5.0),
    ("4/5 because it reads well", 4.0),
    ("**3**", 3.0),
    ("4.", 4.0),
    ("4 - clear and well organised", 4.0),
])
def test_parse_score_formats(text, expected):
    assert parse_score(text, 1, 5) == expected


@pytest.mark.parametrize("text", [
    "", "I cannot judge this.", "[[9]]", '{"score": 7}', "Score: 0", "10", "The 3 little pigs",
    '{"score": true}', "1. Read the summary.\n2. Rate it.",
])
def test_unparseable_or_out_of_scale_is_missing(text):
    assert math.isnan(parse_score(text, 1, 5))


def test_json_key_preferred():
    assert parse_score('{"coherence": 2, "score": 5}', 1, 5, key="coherence") == 2.0


def test_parse_json_object_finds_embedded_object():
    assert parse_json_object('Sure! {"a": [1, 2]} done') == {"a": [1, 2]}
    assert parse_json_object("no json here") is None


def _pos(token, top):
    return {"token": token, "logprob": math.log(top.get(token, 0.5)), "top": {k: math.log(v) for k, v in top.items()}}


def test_weighted_score_hand_computed():
    # P(3)=0.5, P(4)=0.3, P(5)=0.1 and a non-scale token; renormalised over the scale: 3*5/9+4*3/9+5*1/9
    lp = [_pos("3", {"3": 0.5, "4": 0.3, "5": 0.1, "The": 0.1})]
    score, dist = weighted_score(lp, 1, 5)
    assert score == pytest.approx((3 * 0.5 + 4 * 0.3 + 5 * 0.1) / 0.9)
    assert sum(dist.values()) == pytest.approx(1.0)


def test_weighted_score_skips_leading_text_tokens():
    lp = [_pos("Score", {"Score": 0.9}), _pos(":", {":": 0.9}), _pos(" 2", {" 2": 0.6, " 1": 0.4})]
    score, _ = weighted_score(lp, 1, 5)
    assert score == pytest.approx(2 * 0.6 + 1 * 0.4)


def test_weighted_score_missing_without_number():
    assert math.isnan(weighted_score([_pos("Good", {"Good": 0.9})], 1, 5)[0])
    assert scale_distribution([_pos("7", {"7": 0.9})], 1, 5) is None


def test_first_position_fallback_reads_the_scale_among_the_first_alternatives():
    # the reply chose words, but where the score belongs "4" and "2" were the scale's alternatives
    words = [_pos("The", {"The": 0.6, "4": 0.3, "2": 0.1}), _pos(" task", {" task": 0.9})]
    assert math.isnan(weighted_score(words, 1, 5)[0])  # off by default (G-Eval reads a stated number only)
    score, dist = weighted_score(words, 1, 5, first_position=True, min_first_position_mass=0.4)
    assert score == pytest.approx(4 * 0.75 + 2 * 0.25) and dist == pytest.approx({2: 0.25, 4: 0.75})
    # a number chosen later still wins over the first position
    later = [_pos("The", {"The": 0.6, "4": 0.3}), _pos(" 2", {" 2": 1.0})]
    assert weighted_score(later, 1, 5, first_position=True)[0] == pytest.approx(2.0)
    # no scale token anywhere: still missing
    assert math.isnan(weighted_score([_pos("Good", {"Good": 0.9})], 1, 5, first_position=True)[0])


def test_mean_ignoring_missing():
    assert mean_ignoring_missing([1.0, math.nan, 3.0]) == 2.0
    assert math.isnan(mean_ignoring_missing([math.nan]))


def test_first_position_needs_a_minimum_probability_mass_on_the_scale():
    # 40% of the first position on scale tokens: below the default 50%, so no score, and the reading says why
    words = [_pos("The", {"The": 0.6, "4": 0.3, "2": 0.1}), _pos(" task", {" task": 0.9})]
    reading = read_weighted(words, 1, 5, first_position=True)
    assert math.isnan(reading.score) and reading.source == "low_mass"
    assert reading.mass == pytest.approx(0.4) and "40%" in reading.missing_reason
    assert math.isnan(weighted_score(words, 1, 5, first_position=True)[0])
    # 70% on the scale: read, and flagged as read from the alternatives
    confident = [_pos("The", {"The": 0.3, "4": 0.6, "2": 0.1})]
    reading = read_weighted(confident, 1, 5, first_position=True)
    assert reading.from_alternatives and reading.score == pytest.approx((4 * 0.6 + 2 * 0.1) / 0.7)
    # a chosen number is read whatever the mass (the model chose to state a score)
    chosen = read_weighted([_pos("3", {"3": 0.2, "x": 0.8})], 1, 5, first_position=True)
    assert chosen.source == "logprobs" and chosen.score == pytest.approx(3.0)


@pytest.mark.parametrize("text, expected", [
    ("Coherence score: 4\nOverall score: 3", 3.0),
    ("Overall score: 3. Fluency score: 5", 3.0),
    ("The score is 3.", 3.0),
    ("Final score: 4/5", 4.0),
])
def test_labelled_fallback_prefers_the_overall_score(text, expected):
    assert parse_score(text, 1, 5) == pytest.approx(expected)


@pytest.mark.parametrize("text", [
    "A score of 5 means the summary is perfect.",  # the rubric quoted back
    "Fluency score: 5",                            # a criterion's score, not the overall one
    "score 5 = excellent, score 1 = poor. The text is fine",
])
def test_labelled_fallback_does_not_read_quoted_or_criterion_scores(text):
    assert math.isnan(parse_score(text, 1, 5))
