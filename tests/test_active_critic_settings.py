"""Active-Critic's typed settings: one value built from the parameters, read one way by fit and by scoring."""

import dataclasses
import json

import pytest

from judge_engine.methods import Judge, get_method
from judge_engine.methods.active_critic import ActiveCritic, ActiveCriticSettings
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample
from tests.test_active_critic import llm_with


def test_the_settings_hold_every_parameter_of_the_method_and_nothing_else():
    # a parameter added to the constructor but not to the settings would never reach a stage
    assert [f.name for f in dataclasses.fields(ActiveCriticSettings)] == list(ActiveCritic.default_params())


def test_settings_from_the_parameters_are_the_parameters_as_given():
    params = get_method("active_critic", {"weighted": True, "n_demos": 2, "criteria": {"A": "b"}}).get_params()
    settings = ActiveCriticSettings.from_params(params)
    assert dataclasses.asdict(settings) == params
    assert settings.scoring.temperature == 0.0 and settings.scoring.max_tokens == params["max_tokens"]
    assert settings.inference.seed == params["seed"]
    assert settings.inference.temperature == pytest.approx(params["task_temperature"])


def test_a_stored_judge_without_a_parameter_gets_what_it_meant_when_it_was_fitted():
    defaults = ActiveCritic.default_params()
    old = {k: v for k, v in defaults.items() if k not in ("score_normalization", "weighted")}
    settings = ActiveCriticSettings.from_stored(old, defaults)
    # before the paper's ratio became the default, judges were fitted with min-max; weighted was off
    assert settings.score_normalization == "minmax" and settings.weighted is False
    given = ActiveCriticSettings.from_stored({**old, "score_normalization": "ratio", "weighted": True}, defaults)
    assert given.score_normalization == "ratio" and given.weighted is True


def test_an_old_stored_judge_scores_on_min_max_and_a_new_one_on_the_ratio(store):
    aspect, task = Aspect("quality", 1, 5, "How good it is."), TaskInfo("news summarization")
    sample = Sample(id="s1", input="source", output="output", group_id="g1", human={"quality": 3})
    llm, _ = llm_with(store, lambda messages, params: json.dumps({"explanation": "fine", "overall": 50}))
    state = {"variant": "coarse", "task_description": "t", "criteria": {"A": "b"}, "demos": []}
    params = ActiveCritic(variant="coarse").get_params()
    stored_before = {k: v for k, v in params.items() if k != "score_normalization"}
    [old] = Judge(method="active_critic", params=stored_before, aspect=aspect.to_dict(), task=task.to_dict(),
                  state=state).score([sample], llm=llm)
    [new] = Judge(method="active_critic", params=params, aspect=aspect.to_dict(), task=task.to_dict(),
                  state=state).score([sample], llm=llm)
    assert old.score == pytest.approx(3.0)  # 1 + 50% of the 1-5 range
    assert new.score == pytest.approx(2.5)  # 50% of the top of the scale
