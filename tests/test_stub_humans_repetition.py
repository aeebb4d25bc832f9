"""The stub's judge that follows the humans, asked whether two of a method's own texts say the same (HypoEval's
repetition check: a yes/no question with no item to judge), says no; about a judged item it says yes or no by
the item's human level. Answered yes, every HypoEval bank fell to one hypothesis and its runs on the stub sent
about half the requests of a model that tells its hypotheses apart (issue 67 item 1)."""

from __future__ import annotations

import json

from judge_engine import data, structured
from judge_engine.bench.stub_humans import HumanFollower


def test_a_yes_no_question_about_the_methods_own_texts_is_answered_no_and_about_an_item_by_its_level(shared_data):
    dataset = data.load_benchmark("summeval", shared_data)
    follower = HumanFollower([dataset], noise=0.0)
    schema = structured.yes_no_schema()
    pair = ("Are these two hypotheses the same?\nA: The summary keeps the article's order of events.\n"
            "B: The summary names the people the article is about.")
    assert json.loads(follower.reply([{"role": "user", "content": pair}], schema)) == {"answer": "no"}
    by_level = {}
    for s in dataset.samples[:48]:
        text = f"Is this summary coherent?\n{s.input}\nSummary: {s.output}"
        by_level.setdefault(s.human["coherence"] >= 3.5, set()).add(
            json.loads(follower.reply([{"role": "user", "content": text}], schema))["answer"])
    assert "yes" in by_level.get(True, set()) and "no" in by_level.get(False, set())
