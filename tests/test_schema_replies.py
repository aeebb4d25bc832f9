"""The rendering's replies: every schema the methods send is answered with JSON it accepts, whose text passes the
rubric checks (so a method takes its runs' path, not its path for a refused or unread reply)."""

from __future__ import annotations

import json

import pytest

from judge_engine import structured
from judge_engine.methods.active_critic.criteria_reading import criteria_schema
from judge_engine.methods.active_critic.task_description import TASK_SCHEMA
from judge_engine.methods.hd_eval.decomposition import decomposition_schema, statement_schema
from judge_engine.methods.hypoeval.replies import hypotheses_schema
from judge_engine.rubric_checks import check_criterion, check_entry, check_statement
from judge_engine.runs.schema_replies import reply_value

OPENER = "A good summary"

SCHEMAS = {
    "score": structured.score_schema(1, 5),
    "score with a reason": structured.score_schema(1, 5, explanation="before", explanation_max=600),
    "number score": structured.score_schema(0.0, 1.0, integer=False),
    "yes or no": structured.yes_no_schema(),
    "task description": TASK_SCHEMA,
    "named criteria": criteria_schema(""),
    "criteria as statements": criteria_schema(OPENER),
    "criteria with observations": criteria_schema(OPENER, observations=True),
    "children": decomposition_schema(5),
    "children as statements": statement_schema(4, OPENER),
    "hypotheses": hypotheses_schema("", 5),
    "hypotheses as statements": hypotheses_schema(OPENER, 5),
}


@pytest.mark.parametrize("name", SCHEMAS)
def test_each_reply_is_read_as_its_schema_asks(name):
    schema = SCHEMAS[name]
    for seed in ("a", "b", "c"):
        reading = structured.read_json(json.dumps(reply_value(schema, seed)), schema)
        assert reading.value is not None, (name, reading.error)


def test_the_same_seed_gives_the_same_reply_and_another_seed_another():
    schema = SCHEMAS["score with a reason"]
    assert reply_value(schema, "x") == reply_value(schema, "x")
    replies = {json.dumps(reply_value(schema, f"x{i}")) for i in range(20)}
    assert len(replies) == 20
    scores = {reply_value(schema, f"x{i}")["score"] for i in range(40)}
    assert scores == {1, 2, 3, 4, 5}, "scores spread over the scale, as a judge that agrees with nobody"


def test_generated_entries_pass_the_rubric_checks_and_do_not_look_alike():
    """A refused or near-duplicate entry would send a method down its path for bad rubric text (a retry, a
    smaller tree), which its runs on a working model do not take."""
    named = reply_value(SCHEMAS["named criteria"], "seed")["criteria"]
    statements = reply_value(SCHEMAS["criteria as statements"], "seed")["criteria"]
    hypotheses = reply_value(SCHEMAS["hypotheses"], "seed")["hypotheses"]
    assert len(named) >= 4 and len(statements) >= 4 and len(hypotheses) == 5
    accepted: list[str] = []
    for c in named:
        check = check_criterion(c["name"], c["definition"], accepted=accepted)
        assert check.ok, (c, check.reason)
        accepted.append(f"{c['name']}: {c['definition']}")
    for group, check_one in ((hypotheses, lambda text, seen: check_entry(text, kind="hypothesis", accepted=seen)),
                             (statements, lambda text, seen: check_statement(text, opener=OPENER, accepted=seen))):
        accepted = []
        for text in group:
            check = check_one(text, accepted)
            assert check.ok, (text, check.reason)
            accepted.append(text)


def test_a_list_takes_most_of_the_items_it_may_hold():
    children = reply_value(decomposition_schema(5), "s")["children"]
    assert 4 <= len(children) <= 5  # "about five" children, of the 2-5 the schema allows


def _texts_and_lists(value, texts: list[int], lists: list[int]) -> None:
    if isinstance(value, str):
        texts.append(len(value))
    elif isinstance(value, list):
        lists.append(len(value))
        for item in value:
            _texts_and_lists(item, texts, lists)
    elif isinstance(value, dict):
        for item in value.values():
            _texts_and_lists(item, texts, lists)


@pytest.mark.parametrize("name", ["score with a reason", "named criteria", "criteria as statements", "children",
                                  "hypotheses as statements"])
def test_a_methods_measured_text_length_and_list_fill_shape_the_reply_which_still_reads(name):
    """Issue 67 item 1: a rendering quotes text of the length the method's replies have (runs/reply_lengths.py),
    not a share of each field's bound; the reply still satisfies its schema."""
    schema = SCHEMAS[name]
    shaped = {}
    for chars, fill in ((40, 0.0), (150, 1.0)):
        value = reply_value(schema, "s", text_chars=chars, list_fill=fill)
        assert structured.read_json(json.dumps(value), schema).value is not None, (name, chars)
        texts, lists = [], []
        _texts_and_lists(value, texts, lists)
        shaped[chars] = (sum(texts) / len(texts), lists)
    (short, short_lists), (long, long_lists) = shaped[40], shaped[150]
    assert 30 <= short <= 60 and long > 2 * short  # about the length asked, where the bounds allow it
    assert all(a <= b for a, b in zip(short_lists, long_lists))
    if name == "children":  # 2 to 5 children: fill 0 holds minItems, fill 1 maxItems
        assert (short_lists[0], long_lists[0]) == (2, 5)


def test_without_a_measurement_a_text_field_writes_its_share_of_the_bound():
    from judge_engine.runs.schema_replies import TEXT_FILL

    reason = reply_value(SCHEMAS["score with a reason"], "s")["explanation"]
    assert abs(len(reason) - TEXT_FILL * 600) <= 15
