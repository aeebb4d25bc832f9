"""Active-Critic's learned state as a record: written by fit, read by scoring and the page, stored JSON unchanged."""

import json

import pytest

from judge_engine.methods import FitContext, Judge, get_method
from judge_engine.methods.active_critic import ActiveCriticState, edited_judge
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample
from tests.test_active_critic import llm_with, scripted

STORED_KEYS = ["variant", "task_description", "criteria", "criteria_form", "demos", "search",
               "task_description_versions", "criteria_parse_failures", "n_batches", "warnings", "reads", "rejected",
               "flagged"]
"""The keys of ``Judge.state`` a fit stores, in their stored order: runs saved with them must keep loading."""


@pytest.fixture
def fitted(store):
    samples = tuple(Sample(id=f"s{i}", input=f"source text {i}", output=f"output number {i}", group_id=f"g{i}",
                           human={"quality": 1 + 4 * (i % 10) / 9}) for i in range(20))
    aspect, task = Aspect("quality", 1, 5, "How good it is."), TaskInfo("news summarization")
    llm, _ = llm_with(store, scripted())
    judge = get_method("active_critic", {"n_candidates": 3}).fit(samples[:12], aspect, FitContext(llm=llm, task=task))
    return judge, samples, llm


def test_a_fit_stores_the_record_in_the_stored_shape_and_reads_it_back(fitted):
    judge, _, _ = fitted
    assert list(judge.state) == STORED_KEYS
    learned = ActiveCriticState.from_judge(judge)
    assert learned.to_dict() == judge.state
    assert json.dumps(learned.to_dict()) == json.dumps(judge.state), "same keys in the same order"
    assert learned.criteria == judge.state["criteria"] and learned.demos == judge.state["demos"]
    assert learned.prompt_state == {k: judge.state[k] for k in ("variant", "task_description", "criteria")}


def test_a_judge_stored_before_the_later_keys_loads_and_scores_as_it_did(fitted):
    judge, samples, llm = fitted
    # the first stored judges had the variant, the description, the criteria and the demos only
    old = {**judge.to_dict(), "state": {k: judge.state[k] for k in ("variant", "task_description", "criteria",
                                                                     "demos")}}
    loaded = Judge.from_dict(json.loads(json.dumps(old)))
    learned = ActiveCriticState.from_judge(loaded)
    assert learned.criteria_form == "" and learned.flagged == [] and learned.warnings == [] and learned.reads == {}
    before = [v.score for v in judge.score(samples[12:], llm=llm)]
    assert [v.score for v in loaded.score(samples[12:], llm=llm)] == pytest.approx(before, nan_ok=True)
    # a null where the page used to write `or {}` reads as empty too
    assert ActiveCriticState.from_dict({"variant": "fine", "criteria": None}).criteria == {}


def test_an_edited_judge_has_the_persons_text_and_keeps_every_other_stored_key(fitted):
    judge, _, _ = fitted
    params = {**judge.params, "task_description": "Judge summaries.", "criteria": {"Brevity": "Says it briefly."}}
    older = Judge(**{**judge.to_dict(), "state": {**judge.state, "from_an_older_version": 1}})
    edited = edited_judge(older, params=params, task_description="Judge summaries.",
                          criteria={"Brevity": "Says it briefly."})
    assert edited.params == params and edited.state["criteria"] == {"Brevity": "Says it briefly."}
    assert edited.state["task_description"] == "Judge summaries."
    assert {k: v for k, v in edited.state.items() if k not in ("task_description", "criteria")} \
        == {k: v for k, v in older.state.items() if k not in ("task_description", "criteria")}
    assert older.state["task_description"] != "Judge summaries.", "the fitted judge itself is left as it was"
