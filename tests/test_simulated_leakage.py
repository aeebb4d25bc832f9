"""The simulated judge sees leakage (issue 51 item 3): shown the judged item among its own in-context examples, it
reads the human score printed there, as a real model would, so a method that leaks gets a validation figure it
did not earn, and the benchmark's table shows it. The unmutated HPSS validation never leaks."""

from __future__ import annotations

import json

import numpy as np

from judge_engine.bench.simulate import _aspect, make_llm
from judge_engine.bench.simulated_judge import TASK, World
from judge_engine.methods.hpss import Auxiliaries, ValidationFitness, select_validation
from judge_engine.methods.hpss.auxiliaries import Auxiliaries as AuxClass
from judge_engine.methods.hpss.auxiliaries import select_examples
from judge_engine.methods.hpss.strategy import StrategyInputs, all_strategies, build_prompt, rating_schema
from judge_engine.llm.base import GenerationParams
from judge_engine import structured

def _strategy(world: World):
    # the first strategy with ten examples on the 1-100 scale (a copied rating keeps its order: few ties), no
    # criteria to generate and nothing per sample, so every auxiliary is at hand
    for st in all_strategies():
        f = dict(zip(("scale", "criteria", "cot", "autocot", "metrics", "example", "reference", "order"), st))
        if f["scale"] == "100" and f["example"] == "Example10" and f["criteria"] != "LLM" and f["autocot"] == "NoAutoCoT" \
                and f["metrics"] == "NoMetrics" and f["reference"] == "NoReference":
            return st
    raise AssertionError("no such strategy")


def _validation_fitness(seed: int, leaky: bool, monkeypatch) -> tuple[float, int]:
    """HPSS's own validation fitness (Spearman x 100 x coverage) of one ten-example strategy on 10 items (all of them examples), and
    the prompts the simulated judge saw leak; ``leaky`` mutates the method so validation keeps each item among
    its own examples."""
    world = World(seed, n_samples=40, malformed=0.0)
    llm, backend = make_llm(world)
    validation = select_validation(list(world.samples[:10]), 10, 0, by_group=False, aspect=_aspect())
    aux = Auxiliaries(llm=llm, aspect=_aspect(), task=TASK, pool=validation, seed=0)
    with monkeypatch.context() as m:
        if leaky:
            honest = AuxClass.inputs_for
            m.setattr(AuxClass, "inputs_for", lambda self, st, samples, *, leave_out:
                      honest(self, st, samples, leave_out=False))
        evaluate = ValidationFitness(validation, aux, llm=llm, level="sample", max_tokens=64, total=1)
        value = evaluate(_strategy(world), "leak test")
    return value, backend.stats["leaked"]


def test_a_leaky_validation_shows_and_the_honest_one_does_not_leak(monkeypatch):
    """Three worlds: the honest validation never shows an item among its own examples; the mutated one does for
    all ten, reads the answer and reaches a near-perfect Spearman (>= 99 of 100) that the honest figures
    (48-90 on worlds 1000-1009) never do."""
    honest, leaky = [], []
    for seed in (1000, 1001, 1002):
        value, leaks = _validation_fitness(seed, False, monkeypatch)
        assert leaks == 0, f"world {seed}: HPSS validation showed a judged item among its own examples"
        honest.append(value)
        value, leaks = _validation_fitness(seed, True, monkeypatch)
        assert leaks == 10, f"world {seed}: every validation item is one of the ten examples"
        leaky.append(value)
    assert min(leaky) >= 99 and max(honest) < 95, (honest, leaky)
    assert np.mean(np.subtract(leaky, honest)) > 20, (honest, leaky)


def test_the_judge_reads_the_shown_score_only_for_the_judged_item():
    """Unit level: the same prompt with the judged item among its examples gets the item's own human score
    (noise-free); shown another item, the judge's reading stays noisy and no leak is counted."""
    world = World(7, n_samples=30, malformed=0.0)
    _, backend = make_llm(world)
    aspect = _aspect()
    strategy = _strategy(world)
    examples = tuple(select_examples(world.samples[:10], aspect, 10, 0))
    errors = {"leak": [], "honest": []}
    for i in range(10):
        sample = world.samples[i]
        for kind, shown in (("leak", examples), ("honest", tuple(e for e in examples if e["id"] != sample.id))):
            prompt = build_prompt(strategy, sample, aspect, TASK, StrategyInputs(criteria=aspect.definition,
                                                                                  examples=shown))
            params = GenerationParams(json_schema=structured.as_param(rating_schema(strategy, aspect)))
            reply = backend.generate([{"role": "user", "content": prompt}], params).text
            score = json.loads(reply)["score"]
            expected = 1 + world.level(i) * (int(strategy[0]) - 1)
            errors[kind].append(abs(score - expected))
    assert backend.stats["leaked"] == 10
    assert max(errors["leak"]) <= 0.5  # the shown score, rounded to the scale
    assert np.mean(errors["honest"]) > np.mean(errors["leak"])


def test_active_critic_never_scores_an_item_with_itself_among_its_demonstrations():
    """Active-Critic's demonstration search scores each candidate set on the training items minus its own demos
    (cross-fitting): the simulated judge, which would read a shown item's score back, sees no leak, while the
    search did score sets that have demonstrations."""
    from judge_engine.bench.simulate import split
    from judge_engine.methods import FitContext
    from judge_engine.methods import active_critic as ac

    world = World(1000, n_samples=40, malformed=0.0)
    train, _ = split(world, 24, 16)
    llm, backend = make_llm(world)
    events = []
    ac.ActiveCritic(n_candidates=3).fit(train, _aspect(), FitContext(llm=llm, task=TASK,
                                                                      log=lambda k, p: events.append((k, p))))
    searched = [p for k, p in events if k == "demo_candidate"] or [p for k, p in events if "demo_ids" in p]
    assert any(p["demo_ids"] for p in searched), [k for k, _ in events][:40]
    assert backend.stats["leaked"] == 0
