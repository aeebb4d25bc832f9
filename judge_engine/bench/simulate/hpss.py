"""HPSS's rows in the simulated world: its strategy vs equal-budget searches, the base prompt and the plain baselines.

One module per method's rows, because each runner sets up its own arms (here the searches of
:func:`hpss_arm`, each given HPSS's number of strategy evaluations) and its own mutation for the controls
that must fail (tests/test_bench_controls.py); what the rows mean is in :mod:`judge_engine.bench.simulate`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..simulated_judge import TARGET, TASK, World
from .world import _aspect, _calls, _ceiling, _pearson, _plain_measures, make_llm, measure, plain_baselines


HPSS_ARMS = {"random": "random search", "greedy": "Greedy (restarts)",
             "stepwise_greedy": "Stepwise-Greedy (repeated passes)",
             "uniform": "HPSS without its heuristic (uniform proposals)"}
"""The searches the HPSS rows compare with, each given HPSS's number of strategy evaluations."""


def hpss_arm(train, llm, search: str, *, method, seed: int) -> dict[str, Any]:
    """One search of the HPSS rows with HPSS's evaluations (:meth:`~judge_engine.methods.hpss.HPSS.n_evaluations`).

    Uses HPSS's own validation set, fitness, auxiliaries and selection rule
    (:func:`judge_engine.methods.hpss.select_best`: coverage-aware, a
    correlation above zero), so only the search differs: ``random``
    (distinct strategies drawn uniformly), ``greedy`` (the paper's Greedy,
    restarting from a random strategy whenever every neighbour of its climb's
    best is evaluated), ``stepwise_greedy`` (the paper's Stepwise-Greedy, its
    pass repeated, restarting when a pass finds nothing new), ``uniform``
    (HPSS's own initialization and population search with proposals that
    ignore the advantages: the ablation of its heuristic). Returns the
    adopted strategy (None when none is selectable: HPSS's fit would refuse
    then), its validation fitness, and the evaluations made of the budget.
    """
    from ...methods.hpss import (Auxiliaries, ValidationFitness, all_strategies, base_strategy, search_value,
                                select_best, select_validation)
    from ...methods.hpss.method import greedy_search, initialize, iterative_search, stepwise_greedy_search
    level = "group" if method.fitness_level == "group" else "sample"  # "natural" is sample level here
    validation = select_validation(train, method.validation_size, method.seed, by_group=level == "group",
                                   shortest=method.validation_pick == "shortest", aspect=_aspect())
    aux = Auxiliaries(llm=llm, aspect=_aspect(), task=TASK, pool=validation, human_criteria=method.human_criteria,
                      max_tokens=method.aux_max_tokens, seed=method.seed)
    total = method.n_evaluations()
    evaluate = ValidationFitness(validation, aux, llm=llm, level=level, max_tokens=method.judge_max_tokens,
                                 total=total, retry=method.retry_unparsed, explanation_chars=method.explanation_chars)
    rng = np.random.default_rng(seed)
    base = base_strategy(_aspect(), method.base_scale)
    if search == "random":
        space = all_strategies()
        for i in rng.choice(len(space), size=total, replace=False):
            evaluate(space[i], "random")
    elif search == "greedy":
        greedy_search(base, evaluate, rng, budget=total - 1, restart=True)
    elif search == "stepwise_greedy":
        stepwise_greedy_search(base, evaluate, budget=total - 1, rng=rng)
    elif search == "uniform":
        iterative_search(initialize(base, evaluate), evaluate, rng, population=method.population,
                         mutations=method.mutations, rho=method.exploit_prob, tau=method.temperature,
                         lam=method.exploration_weight, budget=method.budget, proposals="uniform")
    else:
        raise ValueError(f"search={search!r}: choose from {', '.join(HPSS_ARMS)}")
    best = select_best(evaluate.selection)
    return {"strategy": best, "evaluations": len(evaluate.history), "budget": total,
            "validation_fitness": math.nan if best is None else search_value(evaluate.selection[best])}


def _stopped(arm: dict[str, Any]) -> str:
    return "" if arm["evaluations"] >= arm["budget"] else f"{arm['evaluations']} of {arm['budget']} evaluations"


def run_hpss(world: World, train, test, log: Callable[[str], None],
             params: dict[str, Any] | None = None, *, control: str | None = None) -> dict[str, Any]:
    """HPSS's strategy vs random search, Greedy, Stepwise-Greedy and HPSS without its heuristic, all with HPSS's
    evaluations; vs the MT-Bench base prompt; its test Pearson vs direct scoring and G-Eval.

    ``control="uniform_proposals"`` (a mutation for the controls that must
    fail, tests/test_bench_controls.py; no method option): the method's arm
    is HPSS with proposals that ignore its advantages.
    """
    from ...methods import FitContext
    from ...methods.hpss import HPSS, base_strategy, parse_strategy, strategy_name
    if control not in (None, "uniform_proposals"):
        raise ValueError(f"control={control!r}: the HPSS rows know only 'uniform_proposals'")
    table, optimum, opt_fit = world.hpss_landscape()
    method = HPSS(**(params or {}))
    arms: dict[str, dict[str, Any]] = {}
    stats: dict[str, Any] = {}
    llm, backend = make_llm(world)
    stats["hpss"] = backend.stats
    test_r = math.nan
    if control is None:
        judge = method.fit(train, _aspect(), FitContext(llm=llm, task=TASK))  # a refusal is the benchmark's finding
        arms["hpss"] = {"strategy": parse_strategy(judge.state["strategy"]), "validation_fitness": judge.state["fitness"],
                        "evaluations": len(judge.state["explored"]), "budget": method.n_evaluations(),
                        "calls": _calls(llm)}
        test_r = _pearson([s.human[TARGET] for s in test], [v.score for v in judge.score(test, llm=llm)])
    else:
        arms["hpss"] = hpss_arm(train, llm, "uniform", method=method, seed=method.seed) | {"calls": _calls(llm)}
        if arms["hpss"]["strategy"] is None:
            raise ValueError("HPSS with uniform proposals adopted no judge: no selectable strategy")
    for label in HPSS_ARMS:
        if label == "uniform" and control == "uniform_proposals":
            arms[label] = arms["hpss"]  # the mutated method is this ablation
            continue
        llm, backend = make_llm(world)
        stats[label] = backend.stats
        # random search keeps its own seed (the world's); the others search with HPSS's, as its fit does
        arms[label] = hpss_arm(train, llm, label, method=method, seed=world.seed if label == "random" else method.seed)
        arms[label]["calls"] = _calls(llm)
    for label, arm in arms.items():
        if arm["strategy"] is not None:
            log(f"hpss[{label}] {strategy_name(arm['strategy'])} true {table[arm['strategy']]:.1f} "
                f"({arm['evaluations']} evaluations, {arm['calls']} calls)")
    refused = {k: "no selectable strategy among those evaluated" for k, a in arms.items() if a["strategy"] is None}
    found = {k: a["strategy"] for k, a in arms.items() if a["strategy"] is not None}
    true = {k: table[v] for k, v in found.items()} | {k: math.nan for k in refused}
    base = base_strategy(_aspect(), method.base_scale)
    plain = plain_baselines(world, test) if control is None else {}
    ceiling = _ceiling(world, test)
    out = {"found": {k: strategy_name(v) for k, v in found.items()}, "true_fitness": true, "refused": refused,
           "validation_fitness": {k: a["validation_fitness"] for k, a in arms.items()},
           "evaluations": {k: a["evaluations"] for k, a in arms.items()}, "budget": method.n_evaluations(),
           "calls": {k: a["calls"] for k, a in arms.items()} | {k: p["calls"] for k, p in plain.items()},
           "test_pearson": {"hpss": test_r} | {k: p["test_pearson"] for k, p in plain.items()},
           "ceiling_pearson": ceiling, "control": control,
           "backend": stats, "baseline_backends": {k: p["backend"] for k, p in plain.items()},
           "base": strategy_name(base), "base_true_fitness": table[base],
           "optimum": strategy_name(optimum), "optimum_true_fitness": opt_fit,
           "factors_matching_optimum": {k: sum(a == b for a, b in zip(v, optimum)) for k, v in found.items()}}
    hp = arms["hpss"]
    measures = []
    for b, title in HPSS_ARMS.items():
        budget = {"calls": (hp["calls"], arms[b]["calls"]), "stopped": (_stopped(hp), _stopped(arms[b]))}
        measures.append(measure("true fitness (Pearson×100)", true["hpss"], title, true[b], opt_fit, True, **budget))
        if b != "uniform":
            measures.append(measure("regret to optimum", opt_fit - true["hpss"], title, opt_fit - true[b], 0.0,
                                    False, **budget))
    # the base prompt is chosen without a search: no calls
    measures.append(measure("true fitness (Pearson×100)", true["hpss"], "base (MT-Bench)", table[base], opt_fit,
                            True, calls=(hp["calls"], 0), stopped=(_stopped(hp), "")))
    measures += _plain_measures(plain, test_r, hp["calls"], ceiling)
    return {"detail": out, "measures": measures}
