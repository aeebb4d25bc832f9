"""The ``simulate`` benchmark runs small: a row for every method and a JSON file (no figure is asserted)."""

from __future__ import annotations

import json

import pytest

from judge_engine.bench import __main__ as bench_main
from judge_engine.bench.simulate import METHODS, RUNNERS
from judge_engine.bench.simulated_judge import ASPECTS, SimulatedBackend, World, recognise
from judge_engine.bench.simulated_judge import TASK
from judge_engine.llm import GenerationParams
from judge_engine.methods.hpss.auxiliaries import select_examples
from judge_engine.methods.hpss.strategy import StrategyInputs, all_strategies, build_prompt, rating_schema


def test_simulate_smoke_two_seeds(tmp_path, capsys):
    methods = [m for m in METHODS if m in RUNNERS]
    code = bench_main.main(["--out", str(tmp_path), "simulate", "--seeds", "2", "--n-train", "24",
                            "--n-test", "24", "--methods", *methods])
    assert code == 0
    doc = json.loads((tmp_path / "simulate.json").read_text(encoding="utf-8"))
    rows = doc["rows"]
    assert not [r for r in rows if r["measure"] == "error"], [r.get("error") for r in rows]
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        assert mine, f"no row for {m}"
        assert all(r["seeds"] == 2 for r in mine)
    assert [w["seed"] for w in doc["worlds"]] == [0, 1]
    assert "hpss" in doc["worlds"][0] and doc["worlds"][0]["hypoeval_pool"]
    assert doc["summary"]["unrecognised_prompts"] == 0
    assert doc["summary"]["malformed_replies"] > 0, "the malformed-reply budget is exercised"
    # the config records the fraction asked for, not the count of malformed replies (it held the count until
    # 2026-11-29, so worlds run alone could not be pooled by their options)
    assert doc["config"]["malformed"] == pytest.approx(0.05)
    # no method shows a judged item among its own examples or demonstrations (the judge would read its score)
    assert doc["summary"]["leaked_prompts"] == 0
    assert "| method | measure |" in capsys.readouterr().out


def test_free_text_path_end_to_end():
    """A judge that honours no JSON schema: every method's free-text prompts are recognised and answered, and
    every method still produces its measures through its fallback parsers."""
    from judge_engine.bench import simulate

    doc = simulate.run(seeds=1, n_train=24, n_test=16, free_text=True)
    assert doc["summary"]["unrecognised_prompts"] == 0
    assert not [r for r in doc["rows"] if r["measure"] in ("error", "fit refused (ValueError)")], doc["notes"]
    assert {r["method"] for r in doc["rows"]} == set(METHODS)
    steps = {k for res in doc["per_seed"][0]["methods"].values()
             for stats in (res["detail"]["backend"].values() if "steps" not in res["detail"]["backend"]
                           else [res["detail"]["backend"]]) for k in stats["steps"]}
    assert {"hpss_judge", "hd_decompose", "hd_score", "hypo_generate", "hypo_score", "ac_mcse", "ac_ose",
            "ac_criteria", "ac_describe"} <= steps, steps


def test_a_refusing_fit_is_a_finding_row_not_a_crash(monkeypatch):
    from judge_engine.bench import simulate

    def refuse(world, train, test, log, params):
        raise ValueError("no hypothesis agrees with the human scores")

    monkeypatch.setitem(simulate.RUNNERS, "hypoeval", refuse)
    doc = simulate.run(seeds=1, methods=["hypoeval"], n_train=16, n_test=8)
    [row] = doc["rows"]
    assert row["measure"] == "fit refused (ValueError)" and row["value"] == "1 of 1 seeds"
    assert "no hypothesis agrees" in row["error"] and "no hypothesis agrees" in doc["notes"][0]


def test_pool_hypotheses_pass_the_rubric_checks():
    """HypoEval refuses copied, near-duplicate and quality-less hypotheses: none of the planted pool may be
    refused, or selection would be measured on what the checks let through instead of what was planted."""
    from judge_engine.rubric_checks import check_entries

    for seed in range(5):
        world = World(seed, n_samples=20)
        texts = [h.text for h in world.pool]
        shown = [t for s in world.samples for t in (s.input, s.output)]
        refused = [c for c in check_entries(texts, kind="hypothesis", shown=shown) if not c.ok]
        assert not refused, refused[:2]
        assert len({world.hypothesis_by_text(f"Criterion: {t} (end)").text for t in texts}) == len(texts)


def test_pool_statements_are_what_hypoeval_asks_for_and_pass_its_checks():
    """Asked for statements ("A good summary ..."), the simulated judge answers the planted rubrics as
    statements that satisfy HypoEval's schema, pass its rubric checks, and are found again by their text."""
    from judge_engine import structured as st
    from judge_engine.methods import hypoeval as he
    from judge_engine.bench.simulated_judge import OPENER, TARGET

    aspect = next(a for a in ASPECTS if a.name == TARGET)
    for seed in range(5):
        world = World(seed, n_samples=20, malformed=0.0)
        backend = SimulatedBackend(world)
        schema = he.hypotheses_schema(TASK.statement_opener, 5)
        prompt = f"Your job is to write exactly 5 hypotheses. Start each sentence with \"{OPENER}\"."
        reply = backend.generate([{"role": "user", "content": prompt}],
                                 GenerationParams(json_schema=st.as_param(schema))).text
        assert st.read_json(reply, schema).ok, reply
        statements = json.loads(reply)["hypotheses"]
        found = [world.hypothesis_by_text(f"Criterion to apply: Hypothesis\n{s}\n") for s in statements]
        assert all(h is not None and h.statement == s for h, s in zip(found, statements))
        ctx = he.Context(llm=None, aspect=aspect, task=TASK,
                         settings=he.HypoEvalSettings.from_params(he.HypoEval().get_params()),
                         log=lambda k, p: None, progress=lambda s: None)
        shown = [t for s in world.samples for t in (s.input, s.output)]
        kept, refused = he.check_statements([h.statement for h in world.pool], ctx, shown=shown)
        assert not refused, refused[:2]
        # without a schema (a server that honours none) the same statements come as a numbered list
        free = backend.generate([{"role": "user", "content": prompt}], GenerationParams()).text
        assert he.read_statements(free, 5, OPENER)[:2] == (statements, "text")


def test_every_strategy_prompt_is_recognised():
    """The simulated judge reads back the strategy of any prompt the HPSS template builder makes."""
    from judge_engine import structured as st
    world = World(3, n_samples=40)
    aspect = ASPECTS[0]
    examples = {n: select_examples(world.samples[:30], aspect, n, 0) for n in (3, 5, 10)}
    sample = world.samples[35]
    for i, strategy in enumerate(all_strategies()[::7]):
        n = {"NoExample": 0, "Example3": 3, "Example5": 5, "Example10": 10}[strategy[5]]
        shown = tuple(examples[n][i % 2:]) if n else ()  # the search leaves the judged sample out: one fewer
        criteria = {"NoCriteria": None, "Human": aspect.definition,
                    "LLM": f"{aspect.name} : (self-generated criteria) ordered points."}[strategy[1]]
        prompt = build_prompt(strategy, sample, aspect, TASK, StrategyInputs(
            criteria=criteria, steps="1. Read.", examples=shown, questions="1. Why?", reference="A reference."))
        params = GenerationParams(json_schema=st.as_param(rating_schema(strategy, aspect)))
        step = recognise(world, [{"role": "user", "content": prompt}], params)
        assert (step.kind, step.info["strategy"], step.info["index"]) == ("hpss_judge", strategy, 35)
        # a backend that honours no schema sends the same prompt as free text: still recognised
        step = recognise(world, [{"role": "user", "content": prompt}], GenerationParams())
        assert (step.kind, step.info["strategy"]) == ("hpss_judge", strategy)


def test_malformed_budget_and_unrecognised_prompts():
    world = World(1, n_samples=20, malformed=0.5)
    backend = SimulatedBackend(world)
    replies = [backend.generate([{"role": "user", "content": f"Tell me a joke number {i}."}], GenerationParams()).text
               for i in range(40)]
    assert 5 < backend.stats["malformed"] < 35
    assert backend.stats["unrecognised"], "an unknown prompt must be counted, not answered as a judge"
    assert len(set(replies)) <= 2


@pytest.mark.parametrize("bad, named", [
    (["--seeds", "0"], "--seeds 0"), (["--malformed", "1.5"], "--malformed 1.5"),
    (["--seed-offset", "-1"], "--seed-offset -1"), (["--seed-list", "3", "3"], "listed twice"),
    (["--seed-list", "3", "--seed-offset", "5"], "--seed-offset 5"), (["--dial", "hpss=1.5"], "hpss=1.5"),
    (["--dial", "-0.1"], "=-0.1"), (["--dial", "nan"], "=nan"), (["--dial", "hpss=high"], "'high'"),
    (["--dial", "speed=0.5"], "'speed' is not a dial"), (["--n-train", "0"], "--n-train 0"),
    (["--n-test", "-1"], "--n-test -1")])
def test_bad_options_end_in_one_message(tmp_path, bad, named, capsys):
    """Issue 51 "Bad input": 0 worlds, a negative offset, a dial outside [0, 1], an empty part: exit 2 with one
    line naming the option, no traceback, nothing written."""
    with pytest.raises(SystemExit) as exc:
        bench_main.main(["--out", str(tmp_path), "simulate", "--methods", "hpss", *bad])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m judge_engine.bench simulate: ") and named in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_structured_requests_get_valid_json_of_their_kind():
    """With ``params.json_schema`` set, every step is recognised by the schema's title and answered with JSON
    that satisfies the schema (the shape the methods will ask for once they request structured replies)."""
    from judge_engine import structured as st
    from judge_engine.criteria_scoring import CriterionText, ScoringSettings, criterion_prompt
    from judge_engine.methods.hpss import base_strategy
    from judge_engine.methods.hd_eval import DECOMPOSE_TEMPLATE, SCORE_TEMPLATE, statement_schema
    from judge_engine.methods.hypoeval import as_criterion, score_instructions

    world = World(2, n_samples=30, malformed=0.0)
    backend = SimulatedBackend(world)
    aspect, sample = ASPECTS[0], world.samples[7]
    child = world.decompose(aspect.name, 4)[0]
    hd_prompt = criterion_prompt(sample, CriterionText("c", child.name, "def"), instructions=SCORE_TEMPLATE.render(
        parent_name=aspect.name, output_label_lower="summary", task=TASK.task, guideline=""), aspect=aspect,
        task=TASK, settings=ScoringSettings(reasoning=False, structured=False))
    hyp = world.pool[0]
    hyp_prompt = criterion_prompt(sample, as_criterion(hyp.text), instructions=score_instructions(
        aspect, TASK, reasoning=True), aspect=aspect, task=TASK, settings=ScoringSettings(structured=False))
    hpss_prompt = build_prompt(base_strategy(aspect), sample, aspect, TASK, StrategyInputs(criteria=aspect.definition))
    decompose = DECOMPOSE_TEMPLATE.render(task=TASK.task, parent_name=aspect.name, parent_definition="d",
                                          guideline="", k=4, output_label_lower="summary", opener="A good summary")
    cases = [
        (hd_prompt, st.score_schema(1, 5), "hd_score"),
        (hyp_prompt, st.score_schema(1, 5, explanation="before"), "hypo_score"),
        (hpss_prompt, st.score_schema(1, 5, explanation="after"), "hpss_judge"),
        (decompose, statement_schema(4, "A good summary"), "hd_decompose"),
        (decompose, st.named_items_schema(st.DECOMPOSITION, "children", min_items=1, max_items=4), "hd_decompose"),
        ("Write hypotheses.", st.string_list_schema(st.HYPOTHESES, "hypotheses", min_items=5, max_items=5),
         "hypo_generate"),
        (f"hypothesis1. {world.pool[0].text}\nhypothesis2. {world.pool[1].text}", st.yes_no_schema(),
         "hypo_repetition"),
        ("Describe the task.", st.text_schema(st.TASK_DESCRIPTION, "task_description"), "ac_describe"),
        ("Which criteria?", st.named_items_schema(st.CRITERIA, "criteria", min_items=4, max_items=10), "ac_criteria"),
        ("Criteria please.", st.string_list_schema(st.HPSS_CRITERIA, "criteria", min_items=1, max_items=1),
         "hpss_criteria"),
        ("Questions please.", st.string_list_schema(st.HPSS_METRICS, "questions", min_items=1, max_items=3),
         "hpss_metrics"),
        ("A reference please.", st.text_schema(st.HPSS_REFERENCE, "reference"), "hpss_reference"),
        ("Steps please.", st.string_list_schema(st.GEVAL_STEPS, "steps", min_items=1, max_items=10), "hpss_steps"),
    ]
    for prompt, schema, kind in cases:
        reply = backend.generate([{"role": "user", "content": prompt}],
                                 GenerationParams(json_schema=st.as_param(schema))).text
        reading = st.read_json(reply, schema)
        assert reading.ok, (kind, reply, reading.error)
        assert backend.stats["steps"].get(kind), (kind, backend.stats["steps"])
    assert not backend.stats["unrecognised"]
    # a follow-up turn asks with its own (score-only) schema: answered with that JSON, not free text
    follow = [{"role": "user", "content": hd_prompt}, {"role": "assistant", "content": "?"},
              {"role": "user", "content": "Your reply did not contain a score I could read."}]
    schema = st.score_schema(1, 5)
    reply = backend.generate(follow, GenerationParams(json_schema=st.as_param(schema))).text
    assert st.read_json(reply, schema).ok, reply


def test_hypoeval_runs_in_both_forms_in_the_simulated_world(tmp_path):
    """The paper's form (free hypotheses) and the sentence form both find hypotheses the world planted and
    produce every row, with no prompt the simulated judge does not recognise."""
    for form in ("paper", "sentence"):
        out = tmp_path / form
        assert bench_main.main(["--out", str(out), "simulate", "--seeds", "2", "--methods", "hypoeval",
                                "--params", f'hypoeval={{"criteria_form": "{form}"}}']) == 0
        doc = json.loads((out / "simulate.json").read_text(encoding="utf-8"))
        assert doc["summary"]["unrecognised_prompts"] == 0
        rows = [r for r in doc["rows"] if r["method"] == "hypoeval"]
        assert rows and not [r for r in rows if r["measure"] == "error"], form


@pytest.mark.parametrize("method", ["hd_eval", "active_critic"])
def test_criteria_methods_run_in_both_forms_in_the_simulated_world(tmp_path, method):
    """HD-Eval's and Active-Critic's named criteria (the paper's form) and their sentence form both run in the
    simulated world: every row, no error, no prompt the simulated judge does not recognise."""
    quick = {"hd_eval": ', "max_layers": 2, "pi_repeats": 2', "active_critic": ', "n_candidates": 3'}[method]
    for form in ("paper", "sentence"):
        out = tmp_path / form
        assert bench_main.main(["--out", str(out), "simulate", "--seeds", "2", "--n-train", "30", "--n-test", "24",
                                "--methods", method,
                                "--params", f'{method}={{"criteria_form": "{form}"{quick}}}']) == 0
        doc = json.loads((out / "simulate.json").read_text(encoding="utf-8"))
        assert doc["summary"]["unrecognised_prompts"] == 0
        rows = [r for r in doc["rows"] if r["method"] == method]
        assert rows and not [r for r in rows if r["measure"] in ("error", "fit refused (ValueError)")], form
        steps = doc["per_seed"][0]["methods"][method]["detail"]["backend"]["steps"]
        assert steps.get("hd_decompose" if method == "hd_eval" else "ac_criteria"), steps


def test_direct_scoring_and_geval_get_a_reading_of_the_aspect():
    """The papers' external baselines are answered (not "I cannot help"): a noisy reading of the named aspect's
    human level, with a JSON schema and without one."""
    from judge_engine.bench.simulate import _aspect
    from judge_engine.llm import LLM, LLMConfig
    from judge_engine.methods import FitContext, get_method
    from judge_engine.metrics import correlations

    for structured in (True, False):
        world = World(4, n_samples=40, malformed=0.0, structured=structured)
        backend = SimulatedBackend(world)
        llm = LLM(LLMConfig(backend="simulated"), backend)
        for name in ("direct", "geval"):
            judge = get_method(name).fit([], _aspect(), FitContext(llm=llm, task=TASK))
            scores = [v.score for v in judge.score(list(world.samples), llm=llm)]
            assert all(1 <= x <= 5 for x in scores), (name, structured)
            assert correlations([s.human[_aspect().name] for s in world.samples], scores)["pearson"] > 0.3
        assert set(backend.stats["steps"]) == {"plain_score", "hpss_steps"} and not backend.stats["unrecognised"]


def test_seed_offset_and_list_name_the_worlds_and_rows_record_calls():
    """Held-out worlds: --seed-offset N runs worlds N..N+seeds-1, --seed-list the listed ones; the config says
    which; every row comparing two fitted arms records both arms' LLM calls."""
    from judge_engine.bench import simulate

    assert simulate.world_seeds_of(3) == [0, 1, 2]
    assert simulate.world_seeds_of(2, 1000) == [1000, 1001]
    assert simulate.world_seeds_of(20, 0, [7, 3]) == [7, 3]
    doc = simulate.run(seeds=2, seed_offset=1000, methods=["hypoeval"], n_train=24, n_test=16)
    assert doc["config"]["world_seeds"] == [1000, 1001] and doc["config"]["seed_offset"] == 1000
    assert [w["seed"] for w in doc["worlds"]] == [1000, 1001] == [e["seed"] for e in doc["per_seed"]]
    rows = [r for r in doc["rows"] if r["measure"] == "test Pearson"]
    assert {r["baseline"] for r in rows} >= {"direct scoring", "G-Eval", "all hypotheses with r > 0",
                                             "random 5 with r > 0 of its bank", "top 5 by reward",
                                             "generation without refinement (n_refine=0)"}
    assert all(" vs " in r["calls"] for r in rows), [r["calls"] for r in rows]
    assert "| LLM calls, method vs baseline (median) |" in simulate.markdown(doc)
