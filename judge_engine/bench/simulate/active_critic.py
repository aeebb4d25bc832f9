"""Active-Critic's rows in the simulated world: its demonstrations and criteria vs equal-budget random sets.

One module per method's rows, because each runner sets up its own baselines (here the best of as many random
labelled sets as its search scores, zero-shot, and a fit with ``max_batches=1``) and its own mutation for the
controls that must fail (tests/test_bench_controls.py); what the rows mean is in
:mod:`judge_engine.bench.simulate`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..simulated_judge import TARGET, TASK, World
from .world import _aspect, _calls, _ceiling, _pearson, _plain_measures, make_llm, measure, plain_baselines


def best_of_random_sets(examples: Sequence[dict], state: dict[str, Any], *, llm, method, k: int, n_demos: int,
                        seed: int) -> tuple[list[dict], list[float]]:
    """Active-Critic's equal-budget baseline: the best of ``k`` random labelled demonstration sets.

    As many sets as the method's search scores (``n_candidates``, its
    zero-shot candidate included), each scored on the training examples
    minus its own demonstrations (on the method's ``eval_subsample`` when it
    has one), and chosen as the method chooses
    (:func:`~judge_engine.methods.active_critic.select_candidate` over the
    coverage-aware Q of :func:`~judge_engine.methods.active_critic.candidate_fitness`).
    Returns the chosen set (empty when none is selectable) and each set's
    fitness.
    """
    import random

    from ...methods.active_critic import ActiveCritic, candidate_fitness, q_objective, run_pipeline, select_candidate
    from ...methods.active_critic.prompt_optimization import _demo
    evaluation = list(examples)
    if method.eval_subsample is not None and method.eval_subsample < len(evaluation):
        evaluation = random.Random(method.seed).sample(evaluation, method.eval_subsample)
    rng = np.random.default_rng(seed)
    size = min(n_demos, len(examples) - 1)
    sets = [[_demo(examples[i]) for i in rng.choice(len(examples), size=size, replace=False)] for _ in range(k)]
    fitness = []
    for demos in sets:
        ids = {d["sample_id"] for d in demos}
        scored = [e for e in evaluation if e["sample_id"] not in ids]
        rows = run_pipeline(scored, state, demos, llm=llm, params=ActiveCritic.scoring_params(method.get_params()),
                            source_chars=method.source_chars, retry=method.retry_unparsed, weighted=method.weighted)
        pred = [row["overall"] for row in rows]
        q, _ = q_objective([e["human_100"] for e in scored], pred)
        fitness.append(candidate_fitness(q, sum(1 for p in pred if not math.isnan(p)), len(scored)))
    try:
        best, _ = select_candidate(fitness)
    except ValueError:
        return [], [f.value for f in fitness]
    return sets[best], [f.value for f in fitness]


SCORING_STEPS = ("ac_mcse", "ac_ose")
"""The simulated judge's step kinds of Active-Critic's scoring calls; every other step of its fit is stage 1."""


def run_active_critic(world: World, train, test, log: Callable[[str], None],
                      params: dict[str, Any] | None = None, *, control: str | None = None) -> dict[str, Any]:
    """Active-Critic's judge vs the best of as many random labelled demonstration sets (equal budget), zero-shot,
    the method without criteria refinement (``max_batches=1``: initial criteria only), direct scoring and G-Eval;
    planted noise multipliers of its demonstrations and criteria.

    ``control="random_demos"`` (a mutation for the controls that must fail;
    no method option): the method's demonstrations are replaced by one
    random labelled set of the same size.
    """
    from ...methods import FitContext
    from ...methods.active_critic import ActiveCritic, demo_count, run_pipeline, to_aspect_scale
    from ...methods.active_critic.examples import _example
    from ...methods.active_critic.prompt_optimization import _demo
    if control not in (None, "random_demos"):
        raise ValueError(f"control={control!r}: the Active-Critic rows know only 'random_demos'")
    llm, backend = make_llm(world)
    method = ActiveCritic(**(params or {}))
    judge = method.fit(train, _aspect(), FitContext(llm=llm, task=TASK))
    fit_calls = _calls(llm)
    stage1_calls = sum(v for k, v in backend.stats["steps"].items() if k not in SCORING_STEPS)
    state = {k: judge.state[k] for k in ("variant", "task_description", "criteria")}
    chosen = judge.state["demos"]
    examples = [_example(s, _aspect(), method.score_normalization) for s in train]
    n_demos = method.n_demos if method.n_demos is not None else demo_count(TASK)
    if control == "random_demos":
        rng = np.random.default_rng(world.seed + 17)
        chosen = [_demo(examples[i]) for i in rng.choice(len(examples), size=min(n_demos, len(examples) - 1),
                                                         replace=False)]
    # the baseline searches with the method's stage-1 result (task description, criteria): those calls count for it
    base_llm, base_backend = make_llm(world)
    random_best, random_fitness = best_of_random_sets(examples, state, llm=base_llm, method=method,
                                                      k=method.n_candidates, n_demos=n_demos, seed=world.seed + 13)
    base_calls = stage1_calls + _calls(base_llm)
    # the paper's ablation without criteria refinement: one mini-batch, so the initial criteria only
    init_llm, init_backend = make_llm(world)
    try:
        initial = ActiveCritic(**{**(params or {}), "max_batches": 1}).fit(train, _aspect(),
                                                                            FitContext(llm=init_llm, task=TASK))
        init_state: dict[str, Any] | None = {k: initial.state[k] for k in ("variant", "task_description", "criteria")}
        init_demos = initial.state["demos"]
    except ValueError:  # the ablation adopts no judge in this world: NaN
        init_state, init_demos = None, []
    init_calls = _calls(init_llm)
    index = {s.id: i for i, s in enumerate(world.samples)}
    values = sorted(world.demo_value[index[s.id]] for s in train)
    scoring = ActiveCritic.scoring_params(judge.params)

    def test_r(demos: Sequence[dict], with_state: dict[str, Any] = state) -> float:
        rows = run_pipeline([{"sample_id": s.id, "input": s.input, "output": s.output, "context": s.context}
                             for s in test], with_state, demos, llm=llm, params=scoring,
                            source_chars=method.source_chars, retry=method.retry_unparsed, weighted=method.weighted)
        return _pearson([s.human[TARGET] for s in test], [to_aspect_scale(r["overall"], _aspect()) for r in rows])

    def multiplier(demos: Sequence[dict]) -> float:
        return world.demo_multiplier([index[d["sample_id"]] for d in demos])

    r_chosen, r_zero = test_r(chosen), test_r([])
    r_random = test_r(random_best) if random_best else math.nan
    r_initial = math.nan if init_state is None else test_r(init_demos, init_state)
    m_chosen = multiplier(chosen)
    m_random = multiplier(random_best) if random_best else math.nan
    m_best = math.exp(sum(values[:len(chosen) or n_demos]))
    crit = list(state["criteria"])
    initial_criteria = [] if init_state is None else list(init_state["criteria"])
    c_found = world.ac_multiplier(crit)
    c_initial = math.nan if init_state is None else world.ac_multiplier(initial_criteria)
    c_pool = float(np.mean(list(world.ac_criteria.values())))
    c_best = world.ac_multiplier(sorted(world.ac_criteria, key=world.ac_criteria.get)[:max(1, len(crit))])
    plain = plain_baselines(world, test)
    ceiling = _ceiling(world, test)
    log(f"active_critic r {r_chosen:.3f} vs best of {method.n_candidates} random sets {r_random:.3f} vs zero-shot "
        f"{r_zero:.3f} vs initial criteria {r_initial:.3f}")
    detail = {"criteria": crit, "initial_criteria": initial_criteria,
              "task_description": state["task_description"], "control": control,
              "chosen_demos": [d["sample_id"] for d in chosen], "chosen_kinds": [d.get("kind") for d in chosen],
              "search": judge.state.get("search"),
              "random_sets": {"chosen": [d["sample_id"] for d in random_best], "fitness": random_fitness},
              "test_pearson": {"chosen": r_chosen, "best_random_set": r_random, "zero_shot": r_zero,
                               "initial_criteria": r_initial} | {k: p["test_pearson"] for k, p in plain.items()},
              "ceiling_pearson": ceiling,
              "demo_noise_multiplier": {"chosen": m_chosen, "best_random_set": m_random, "best": m_best},
              "criteria_noise_multiplier": {"inferred": c_found, "initial": c_initial, "pool_mean": c_pool,
                                            "best": c_best},
              "calls": {"fit": fit_calls, "stage1": stage1_calls, "total": _calls(llm), "best_random_set": base_calls,
                        "fit_initial_criteria": init_calls} | {k: p["calls"] for k, p in plain.items()},
              "backend": backend.stats,
              "baseline_backends": {"best_random_set": base_backend.stats, "initial_criteria": init_backend.stats}
              | {k: p["backend"] for k, p in plain.items()}}
    random_sets = f"best of {method.n_candidates} random labelled sets"
    measures = [measure("test Pearson", r_chosen, random_sets, r_random, ceiling, True, calls=(fit_calls, base_calls)),
                measure("test Pearson", r_chosen, "no prompt optimisation (zero-shot)", r_zero, ceiling, True,
                        calls=(fit_calls, stage1_calls)),
                measure("test Pearson", r_chosen, "without criteria refinement (max_batches=1)", r_initial, ceiling,
                        True, calls=(fit_calls, init_calls)),
                *_plain_measures(plain, r_chosen, fit_calls, ceiling),
                measure("planted noise multiplier of demos (lower is better)", m_chosen, random_sets, m_random,
                        m_best, False, calls=(fit_calls, base_calls)),
                measure("planted noise multiplier of criteria (lower is better)", c_found,
                        "random criteria (pool mean)", c_pool, c_best, False),
                measure("planted noise multiplier of criteria (lower is better)", c_found,
                        "without criteria refinement (max_batches=1)", c_initial, c_best, False,
                        calls=(fit_calls, init_calls))]
    return {"detail": detail, "measures": measures}
