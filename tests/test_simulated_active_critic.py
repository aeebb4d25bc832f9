"""The simulated judge's Active-Critic criteria steps answer statements ("A good summary ...") built from the
planted criteria, and a fitted judge's criteria are traced back to them (the benchmark's criteria measure)."""

import re

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
    named = st.named_items_schema(st.CRITERIA, "criteria", min_items=4, max_items=10)
    reply = backend.generate([{"role": "user", "content": "Which criteria?"}],
                             GenerationParams(json_schema=st.as_param(named))).text
    assert st.read_json(reply, named).ok, "an older named schema is still answered in its own shape"


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


def test_a_fitted_judge_recovers_planted_criteria_and_refines_them():
    world = World(1, n_samples=N_TRAIN + N_TEST, malformed=0.0)
    train, _ = split(world, N_TRAIN, N_TEST)
    llm, backend = make_llm(world)
    events = []
    judge = ac.ActiveCritic(n_candidates=1).fit(train, _aspect(), FitContext(
        llm=llm, task=TASK, log=lambda k, p: events.append((k, p))))
    criteria = judge.state["criteria"]
    assert len(criteria) >= ac.MIN_CRITERIA and not judge.state["rejected"]
    assert all(world.ac_planted(n) for n in criteria), criteria
    assert all(d.startswith("A good summary ") for d in criteria.values())
    steps = [p for k, p in events if k == "criteria"]
    assert steps[0]["read"] == "json" and any(p["action"] == "refine" for p in steps)
    assert backend.stats["steps"]["ac_criteria"] >= 2


def test_the_refine_step_finds_the_current_statements_in_its_prompt():
    world = World(2)
    current = sorted(world.ac_criteria)[:4]
    criteria = ac.statement_criteria([ac_statement(n, OPENER) for n in current], OPENER)
    prompt = ac.CRITERIA_REFINE_TEMPLATE.render(criteria=ac._listing(criteria, OPENER), observations="o",
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
