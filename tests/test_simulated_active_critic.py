"""The simulated judge's Active-Critic criteria steps answer the planted criteria in the form asked for (named
with their definitions, or as statements "A good summary ..."), and a fitted judge's criteria are traced back
to them (the benchmark's criteria measure)."""

import re

import pytest

from judge_engine import structured as st
from judge_engine.bench.simulate import N_TEST, N_TRAIN, _aspect, make_llm, split
from judge_engine.bench.simulated_judge import (
    AC_DEFINITIONS,
    TASK,
    SimulatedBackend,
    World,
    ac_statement,
    recognise,
)
from judge_engine.llm import GenerationParams
from judge_engine.methods import FitContext
from judge_engine.methods import active_critic as ac
from judge_engine.methods.active_critic.criteria_definition import _listing
from judge_engine.rubric_checks import check_statement, statement_name

OPENER = "A good summary"


def test_the_criteria_step_answers_planted_statements_under_the_statement_schema():
    world = World(3)
    backend = SimulatedBackend(world)
    for schema in (ac.criteria_schema(OPENER, observations=True), ac.qualities_schema(OPENER)):
        key = next(iter(schema["properties"]))
        reply = backend.generate([{"role": "user", "content": "Which criteria?"}],
                                 GenerationParams(json_schema=st.as_param(schema))).text
        reading = st.read_json(reply, schema)
        assert reading.ok, (reply, reading.error)
        statements = reading.value[key]
        assert len(statements) == 5 and all(s.startswith("A good summary ") for s in statements)
        assert {world.ac_planted(s) for s in statements} <= set(world.ac_criteria)
        assert len({world.ac_planted(s) for s in statements}) == 5, "five different planted criteria"


def test_the_criteria_step_answers_the_planted_criteria_named_under_the_papers_schema():
    world = World(3)
    backend = SimulatedBackend(world)
    for schema in (ac.criteria_schema("", observations=True), ac.qualities_schema("")):
        key = next(iter(schema["properties"]))
        reply = backend.generate([{"role": "user", "content": "Which criteria?"}],
                                 GenerationParams(json_schema=st.as_param(schema))).text
        reading = st.read_json(reply, schema)
        assert reading.ok, (reply, reading.error)
        items = reading.value[key]
        assert len(items) == 5 and all(AC_DEFINITIONS[i["name"]] == i["definition"] for i in items)
        assert ("observations" in reading.value) == ("observations" in schema["properties"])
        criteria = ac.read_criteria(reply, schema)[0] if key == "criteria" else ac.read_qualities(reply, "")
        checked = ac.check_criteria(criteria, [s.output for s in world.samples[:20]],
                                    topics=(TASK.output_label, _aspect().name, _aspect().definition))
        assert checked.kept == criteria and not checked.refused, "the planted criteria pass the rubric checks"


def test_auto_is_the_papers_form_on_the_simulated_backend():
    world = World(3, n_samples=N_TRAIN + N_TEST, malformed=0.0)
    train, _ = split(world, N_TRAIN, N_TEST)
    llm, backend = make_llm(world)
    judge = ac.ActiveCritic(n_candidates=1).fit(train, _aspect(), FitContext(llm=llm, task=TASK))
    assert not llm.config.embedded and judge.state["criteria_form"] == "paper"
    assert set(judge.state["criteria"]) <= set(world.ac_criteria)


def test_planted_statements_pass_the_rubric_checks_and_their_names_lead_back():
    world = World(0)
    aspect = _aspect()
    accepted = []
    for name in AC_DEFINITIONS:
        statement = ac_statement(name, OPENER)
        assert re.match(st.statement_pattern(OPENER), statement), statement
        check = check_statement(statement, opener=OPENER, accepted=accepted,
                                topics=(TASK.output_label, aspect.name, aspect.definition))
        assert check.ok, (statement, check.rule, check.reason)
        accepted.append(statement)
        assert world.ac_planted(statement_name(statement, OPENER)) == name
    assert world.ac_planted("Made-up criterion") is None
    assert world.ac_noise("Made-up criterion") == max(world.ac_criteria.values())


@pytest.mark.parametrize("form, seed", [("sentence", 1), ("paper", 3)])
def test_a_fitted_judge_recovers_planted_criteria_and_refines_them(form, seed):
    world = World(seed, n_samples=N_TRAIN + N_TEST, malformed=0.0)
    train, _ = split(world, N_TRAIN, N_TEST)
    llm, backend = make_llm(world)
    events = []
    judge = ac.ActiveCritic(n_candidates=1, criteria_form=form).fit(train, _aspect(), FitContext(
        llm=llm, task=TASK, log=lambda k, p: events.append((k, p))))
    criteria = judge.state["criteria"]
    assert len(criteria) >= ac.MIN_CRITERIA and not judge.state["rejected"]
    assert all(world.ac_planted(n) for n in criteria), criteria
    if form == "sentence":
        assert all(d.startswith("A good summary ") for d in criteria.values())
    else:  # the planted criteria themselves: their names with their definitions
        assert criteria == {n: AC_DEFINITIONS[n] for n in criteria}
    steps = [p for k, p in events if k == "criteria"]
    assert steps[0]["read"] == "json" and any(p["action"] == "refine" for p in steps)
    assert backend.stats["steps"]["ac_criteria"] >= 2


def test_the_refine_step_finds_the_current_statements_in_its_prompt():
    world = World(2)
    current = sorted(world.ac_criteria)[:4]
    criteria = ac.statement_criteria([ac_statement(n, OPENER) for n in current], OPENER)
    prompt = ac.CRITERIA_REFINE_TEMPLATE.render(criteria=_listing(criteria, OPENER), observations="o",
                                                an_output="a summary", quality="coherence", opener=OPENER)
    step = recognise(world, [{"role": "user", "content": prompt}],
                     GenerationParams(json_schema=st.as_param(ac.criteria_schema(OPENER))))
    assert step.kind == "ac_criteria" and sorted(step.info["current"]) == current
    free = recognise(world, [{"role": "user", "content": prompt}], GenerationParams())
    assert free.info["opener"] == OPENER, "without a schema the opener is read from the prompt"
    reply = SimulatedBackend(world, structured=False).generate([{"role": "user", "content": prompt}],
                                                              GenerationParams()).text
    found, _, read = ac.read_criteria(reply, ac.criteria_schema(OPENER), OPENER)
    assert read == "text" and len(found) >= 4 and all(world.ac_planted(n) for n in found)


def test_the_refine_step_finds_the_current_named_criteria_in_its_prompt():
    world = World(2)
    current = sorted(world.ac_criteria)[:4]
    prompt = ac.CRITERIA_REFINE_NAMED_TEMPLATE.render(
        criteria=_listing({n: AC_DEFINITIONS[n] for n in current}, ""), observations="o",
        an_output="a summary", quality="coherence")
    step = recognise(world, [{"role": "user", "content": prompt}],
                     GenerationParams(json_schema=st.as_param(ac.criteria_schema(""))))
    assert step.kind == "ac_criteria" and sorted(step.info["current"]) == current and not step.info["opener"]

