"""Simulated world: does each method find what was planted, against its paper's baselines?

Per seed a :class:`~.simulated_judge.World` is made (samples with latent
sub-criteria, human scores with planted weights, planted prompt effects and
a fraction of malformed replies) and every method runs at its paper
defaults (its default parameters) through the one LLM call path, answered by
the :class:`~.simulated_judge.SimulatedBackend`. Train and test parts are
group-disjoint (whole sources). The worlds are seeds 0..N-1 unless
``--seed-offset`` or ``--seed-list`` names others (1000 and up were not used
to tune the code); the seeds are in the JSON config (``world_seeds``).

Every method's rows include the papers' external baselines, direct scoring
and G-Eval, by test Pearson on the same test items (their prompts get a
noisy reading of the aspect's human level from the simulated judge; they
learn nothing from the training items). The rows per method:

``hpss``
    true fitness (population Pearson × 100 of the planted noise model, known
    analytically for all 12,960 strategies) of the strategy found, and its
    regret to the global optimum, vs random search (distinct random
    strategies), Greedy (restarting from a random strategy whenever its climb
    has evaluated every neighbour of its best), Stepwise-Greedy (its pass
    repeated, restarting when a pass finds nothing new) and HPSS without its
    heuristic (its initialization and population search with proposals that
    ignore the advantages), each with HPSS's number of evaluations (71) on
    HPSS's validation set, fitness and selection rule (paper Table 4 / §4.1;
    the paper's Greedy stalls short of 71 and its Stepwise-Greedy makes 21);
    vs the MT-Bench base prompt; and the test Pearson of HPSS's judge.
``hypoeval``
    mean planted quality and test Pearson of the selected hypotheses vs the
    paper's ablations of selection on its own final bank (all hypotheses
    with r > 0, a seeded random 5 with r > 0, the top 5 by stage-1 reward),
    a seeded random 5 of the whole bank, and generation without refinement
    (a fit with ``n_refine=0``); the best 5 of the planted pool is the
    optimum. "r > 0" is the method's own qualification (a positive training
    Pearson at enough coverage).
``hd_eval``
    test Pearson of the aggregator vs the same aggregator fitted on layer 1
    only (the paper's "w/o layers 2, 3": ``max_layers=1`` on the same split,
    what the hierarchy adds), the mean of the layer-1 scores and the target
    aspect's layer-1 score alone; the layer-1 aggregator vs the layer-1 mean
    (what the aggregator adds); the optimum being the noise-free human
    formula; permutation importance's AUC of informative vs null
    sub-criteria (``sklearn.metrics.roc_auc_score``); the share of
    informative criteria among those the pruning chose to decompose vs the
    share among the candidates (a random choice).
``active_critic``
    test Pearson of the judge with its chosen demonstrations vs the best of
    as many random labelled sets as its search scores (``n_candidates``),
    chosen by the method's own rule on the training split, vs no prompt
    optimisation (zero-shot) and vs the method without criteria refinement
    (``max_batches=1``: the initial criteria only); the planted noise
    multiplier of the chosen demonstrations and of the inferred criteria vs
    those baselines' and random criteria (lower is better).

Budgets: every row records the LLM calls (the ledger's ``calls``) each arm
made to build its judge, median over seeds, method vs baseline; the table
shows them. The search baselines of HPSS and Active-Critic get the method's
number of strategy evaluations or candidate sets, so their calls differ only
by retries and auxiliaries; the Active-Critic baselines share the method's
stage-1 calls (they use its task description and criteria), the HypoEval
baselines drawn from its bank share its fit. Direct scoring, G-Eval, the
base prompt, zero-shot and the layer-1 mean learn nothing: their few or zero
calls are the point of those rows. An arm that stops short of its budget
(an HPSS search that runs out of unexplored proposals) is named in the
row's note.

The table gives, per row, the mean over seeds with a 95% t-interval, the
baseline's, the optimum's mean, and the 95% t-interval of the paired
per-seed difference (method - baseline). Everything planted is written to
the JSON (``worlds``), with each seed's measures. The runners take a
``control`` argument that mutates the method (HPSS proposing without its
advantages, HypoEval keeping its worst or a random five, HD-Eval not
decomposing, Active-Critic with a random demonstration set): the controls
that must fail, tests/test_bench_controls.py; the command line never sets it.

Dials (``--dial``, :class:`~.simulated_judge.Dials`): the default world
plants each method's structure in the method's own terms (per-factor noise
for HPSS, sharper children for HD-Eval, anti-correlated misleading
hypotheses for HypoEval, demonstrations and criteria that matter for
Active-Critic, refinements scripted to improve). Each dial runs from 1 (that
world) to 0 (a world without the structure), so a row can be read along
it: where a method's margin vanishes. The dials are in the JSON config and
in every world.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import asdict, fields, replace
from typing import Any, Callable, Sequence

import numpy as np

from . import method_params, progress_bar, result
from .simulated_judge import ASPECTS, TARGET, TASK, Dials, SimulatedBackend, World

METHODS = ("hpss", "hd_eval", "hypoeval", "active_critic")
N_TRAIN, N_TEST = 60, 100


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=int, default=20,
                        help="simulated worlds (one per seed: OFFSET..OFFSET+N-1, by default 0..N-1)")
    parser.add_argument("--seed-offset", type=int, default=0,
                        help="seed of the first world, e.g. 1000 for worlds the code was not tuned on")
    parser.add_argument("--seed-list", type=int, nargs="+", default=None, metavar="SEED",
                        help="the worlds' seeds, listed (instead of --seeds and --seed-offset)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--n-train", type=int, default=N_TRAIN, help="training (validation) samples per world")
    parser.add_argument("--n-test", type=int, default=N_TEST, help="held-out test samples per world")
    parser.add_argument("--malformed", type=float, default=0.05, help="fraction of unparsable replies")
    parser.add_argument("--free-text", action="store_true",
                        help="the simulated judge honours no JSON schema (exercises the free-text fallbacks)")
    parser.add_argument("--params", nargs="*", default=[], metavar="METHOD=JSON",
                        help="parameter overrides per method (default: the paper defaults), "
                             "e.g. hd_eval='{\"aggregator\": \"lr\"}'")
    parser.add_argument("--dial", nargs="*", default=[], metavar="NAME=VALUE",
                        help="how much of each planted structure the worlds have, from 1 (the default world) to 0 "
                             "(none of it): hpss (share of the log-noise variance that is per-factor; the rest "
                             "higher-order interaction of the same spread), hd_eval (how much of a child "
                             "criterion's reading is its own rather than its parent's restated), hypoeval "
                             "(misleading hypotheses anti-correlated at 1, merely unrelated at 0), active_critic "
                             "(spread of the demonstrations' and criteria's planted effects), refinement (share "
                             "of refinements scripted to improve; the rest follow the items and scores their "
                             "prompt shows). A bare VALUE sets every dial, e.g. --dial 0 or --dial hpss=0.5 "
                             "refinement=0")


# --------------------------------------------------------------------------- worlds and the call path


def make_llm(world: World, concurrency: int = 2):
    """The one LLM call path over a simulated backend (no persistent cache: every call is answered)."""
    from ..llm import LLM, LLMConfig
    backend = SimulatedBackend(world, structured=world.structured)
    return LLM(LLMConfig(backend="simulated", concurrency=concurrency), backend), backend


def parse_dials(items: Sequence[str]) -> Dials:
    """``--dial`` values as :class:`~.simulated_judge.Dials`: ``NAME=VALUE`` sets one dial, a bare ``VALUE`` every
    dial (later items win); each value in [0, 1], 1 = the default world."""
    names = [f.name for f in fields(Dials)]
    dials = Dials()
    for item in items:
        name, _, text = item.rpartition("=")
        if name and name not in names:
            raise ValueError(f"--dial {item}: {name!r} is not a dial; choose from {', '.join(names)}")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"--dial {item}: {text!r} is not a number in [0, 1]") from None
        dials = replace(dials, **({name: value} if name else {n: value for n in names}))
    try:
        dials.check()
    except ValueError as exc:
        raise ValueError(f"--{exc}") from None
    return dials


def split(world: World, n_train: int, n_test: int) -> tuple[list, list]:
    """Group-disjoint train and test parts: whole sources, in a seeded order."""
    rng = np.random.default_rng(world.seed + 7)
    groups: dict[str, list] = {}
    for s in world.samples:
        groups.setdefault(s.group_id, []).append(s)
    order = [list(groups)[i] for i in rng.permutation(len(groups))]
    train, test = [], []
    for g in order:
        if len(train) < n_train:
            train.extend(groups[g])
        elif len(test) < n_test:
            test.extend(groups[g])
    return train, test


def _aspect():
    return next(a for a in ASPECTS if a.name == TARGET)


def _pearson(human: Sequence[float], pred: Sequence[float]) -> float:
    from ..metrics import correlations
    return correlations(list(human), list(pred))["pearson"]


def measure(name: str, value: float, baseline: str, base_value: float, optimum: float, higher: bool, *,
            calls: tuple[int | None, int | None] = (None, None),
            stopped: tuple[str, str] = ("", "")) -> tuple:
    """One row's numbers in one world: ``(measure, value, baseline, baseline value, optimum, higher is better,
    budget)``.

    ``budget["calls"]`` holds the LLM calls (the ledger's ``calls``) each arm
    made to build its judge, method first (None where the row compares no
    arms that call the model); ``budget["stopped_early"]`` says, per arm, why
    it stopped short of its budget ("" when it did not).
    """
    return (name, value, baseline, base_value, optimum, higher,
            {"calls": list(calls), "stopped_early": list(stopped)})


def _calls(llm) -> int:
    return llm.ledger.snapshot().calls


def _ceiling(world: World, test) -> float:
    """Test Pearson of the noise-free human formula: what a perfect reader of the latents reaches."""
    z = np.array([[float(x) for x in s.metadata["latents"]] for s in test])
    return _pearson([s.human[TARGET] for s in test], world.human_level(z, TARGET).tolist())


PLAIN_BASELINES = {"direct": "direct scoring", "geval": "G-Eval"}
"""The papers' external baselines, by registered method name: rows of every method."""


def plain_baselines(world: World, test) -> dict[str, dict[str, Any]]:
    """Test Pearson of direct scoring and G-Eval on ``test`` (fitted as :mod:`.hostile` fits them), with their
    fit calls (0 and 1: nothing is learned from the training items) and the backend's counts."""
    from ..methods import FitContext, get_method
    human = [s.human[TARGET] for s in test]
    out = {}
    for name, label in PLAIN_BASELINES.items():
        llm, backend = make_llm(world)
        judge = get_method(name).fit([], _aspect(), FitContext(llm=llm, task=TASK))
        calls = _calls(llm)
        out[label] = {"test_pearson": _pearson(human, [v.score for v in judge.score(test, llm=llm)]),
                      "calls": calls, "backend": backend.stats}
    return out


def _plain_measures(plain: dict[str, dict[str, Any]], value: float, method_calls: int, ceiling: float) -> list:
    return [measure("test Pearson", value, label, p["test_pearson"], ceiling, True, calls=(method_calls, p["calls"]))
            for label, p in plain.items()]


# --------------------------------------------------------------------------- HPSS


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
    from ..methods.hpss import (Auxiliaries, ValidationFitness, all_strategies, base_strategy, search_value,
                                select_best, select_validation)
    from ..methods.hpss.method import greedy_search, initialize, iterative_search, stepwise_greedy_search
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
    from ..methods import FitContext
    from ..methods.hpss import HPSS, base_strategy, parse_strategy, strategy_name
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


# --------------------------------------------------------------------------- HD-Eval


def run_hd_eval(world: World, train, test, log: Callable[[str], None],
                params: dict[str, Any] | None = None, *, control: str | None = None) -> dict[str, Any]:
    """HD-Eval's test Pearson vs its aggregator on layer 1 only (the paper's "w/o layers 2, 3"), the mean of the
    layer-1 scores, the target's layer-1 score, direct scoring and G-Eval; importance AUC; pruning's choice.

    ``control`` (a mutation for the controls that must fail; no method option): ``"no_decomposition"`` fits
    the method's arm with ``max_layers=1``; ``"least_important"`` makes attribution pruning decompose the
    least important criteria instead of the most important (Eq. 3 turned upside down).
    """
    from unittest import mock

    from sklearn.metrics import roc_auc_score
    from ..methods import FitContext
    from ..methods.hd_eval import HDEval, pruning, tree_index
    if control not in (None, "no_decomposition", "least_important"):
        raise ValueError(f"control={control!r}: the HD-Eval rows know only 'no_decomposition' and "
                         "'least_important'")
    own = {**(params or {}), **({"max_layers": 1} if control == "no_decomposition" else {})}

    most_important = pruning.prune_by_attribution

    def least_important(candidates, importance, k_expand):
        return most_important(candidates, {c: {"importance": -v["importance"]}
                                                         for c, v in importance.items()}, k_expand)

    llm, backend = make_llm(world)
    events: list[tuple[str, dict]] = []
    mutated = mock.patch.object(pruning, "prune_by_attribution", least_important) \
        if control == "least_important" else contextlib.nullcontext()
    with mutated:
        judge = HDEval(**own).fit(train, _aspect(),
                                  FitContext(llm=llm, task=TASK, aspects=tuple(ASPECTS),
                                             log=lambda kind, payload: events.append((kind, payload))))
    fit_calls = _calls(llm)
    verdicts = judge.score(test, llm=llm)
    human = [s.human[TARGET] for s in test]
    pred = [v.score for v in verdicts]
    aspect_names = [a.name for a in ASPECTS]

    def layer1_mean(found) -> list[float]:
        return [np.nanmean([v.criteria.get(a, math.nan) for a in aspect_names])
                if any(not math.isnan(v.criteria.get(a, math.nan)) for a in aspect_names) else math.nan
                for v in found]

    layer1_target = [v.criteria.get(TARGET, math.nan) for v in verdicts]
    ceiling = _ceiling(world, test)
    # the paper's ablation "w/o layers 2, 3": the same aggregator fitted on the layer-1 scores alone, same split
    flat_llm, flat_backend = make_llm(world)
    flat = HDEval(**{**(params or {}), "max_layers": 1}).fit(
        train, _aspect(), FitContext(llm=flat_llm, task=TASK, aspects=tuple(ASPECTS)))
    flat_calls = _calls(flat_llm)
    flat_verdicts = flat.score(test, llm=flat_llm)
    r_flat, r_flat_mean = _pearson(human, [v.score for v in flat_verdicts]), _pearson(human, layer1_mean(flat_verdicts))
    plain = plain_baselines(world, test)
    nodes = tree_index(judge.state["tree"])
    importance = judge.state["importance"]
    labels, values, listing = [], [], []
    for nid, n in nodes.items():
        if n["layer"] < 2 or nid not in importance:
            continue
        planted = world.node(n["name"])
        informative = planted is not None and world.node_informative(planted)
        labels.append(int(informative))
        values.append(importance[nid]["importance"])
        listing.append({"id": nid, "layer": n["layer"], "informative": informative,
                        "latent": None if planted is None else planted.latent,
                        "importance": importance[nid]["importance"]})
    auc = roc_auc_score(labels, values) if 0 < sum(labels) < len(labels) else math.nan
    chosen = next((p["chosen"] for k, p in events if k == "expansion_chosen" and p["layer"] == 3), [])
    candidates = [nid for nid, n in nodes.items() if n["layer"] == 2]

    def informative(nid: str) -> bool:
        planted = world.node(nodes[nid]["name"])
        return planted is not None and world.node_informative(planted)

    kept_share = float(np.mean([informative(c) for c in chosen])) if chosen else math.nan
    base_share = float(np.mean([informative(c) for c in candidates])) if candidates else math.nan
    n_inf = sum(informative(c) for c in candidates)
    best_share = min(len(chosen), n_inf) / len(chosen) if chosen else math.nan
    r_method, r_mean, r_target = _pearson(human, pred), _pearson(human, layer1_mean(verdicts)), _pearson(human,
                                                                                                       layer1_target)
    missing = sum(v.missing for v in verdicts)
    log(f"hd_eval r={r_method:.3f} layer-1 aggregator r={r_flat:.3f} layer1-mean r={r_mean:.3f} AUC={auc:.2f} "
        f"kept {kept_share:.2f} vs {base_share:.2f}")
    detail = {"test_pearson": r_method, "layer1_aggregator_pearson": r_flat, "layer1_mean_pearson": r_mean,
              "layer1_target_pearson": r_target,
              **{f"{k}_pearson": p["test_pearson"] for k, p in plain.items()},
              "ceiling_pearson": ceiling, "importance_auc": auc, "criteria_ranked": listing,
              "pruning": {"candidates": candidates, "chosen": chosen, "chosen_informative_share": kept_share,
                          "candidates_informative_share": base_share},
              "missing_test_scores": missing, "missing_train_scores": judge.state.get("missing_scores"),
              "calls": {"fit": fit_calls, "total": _calls(llm), "layer1_aggregator_fit": flat_calls}
              | {k: p["calls"] for k, p in plain.items()}, "control": control,
              "backend": backend.stats,
              "baseline_backends": {"layer1_aggregator": flat_backend.stats}
              | {k: p["backend"] for k, p in plain.items()}}
    # "mean of layer-1 scores" and "target alone" learn nothing: their layer-1 readings need no fit calls
    measures = [measure("test Pearson", r_method, "aggregator on layer 1 only (w/o layers 2, 3)", r_flat, ceiling,
                        True, calls=(fit_calls, flat_calls)),
                measure("test Pearson", r_method, "mean of layer-1 scores", r_mean, ceiling, True,
                        calls=(fit_calls, 0)),
                measure("test Pearson", r_method, "layer-1 target aspect alone", r_target, ceiling, True,
                        calls=(fit_calls, 0)),
                *_plain_measures(plain, r_method, fit_calls, ceiling),
                measure("test Pearson of the layer-1 aggregator (ablation)", r_flat, "mean of layer-1 scores",
                        r_flat_mean, ceiling, True, calls=(flat_calls, 0)),
                measure("importance AUC (informative vs null)", auc, "chance", 0.5, 1.0, True),
                measure("informative share of decomposed (pruning)", kept_share, "random choice", base_share,
                        best_share, True)]
    return {"detail": detail, "measures": measures}


# --------------------------------------------------------------------------- HypoEval


def run_hypoeval(world: World, train, test, log: Callable[[str], None],
                 params: dict[str, Any] | None = None, *, control: str | None = None) -> dict[str, Any]:
    """HypoEval's selected hypotheses vs the paper's ablations of selection on its own final bank (all with
    r > 0, a random 5 with r > 0, the top 5 by reward), a random 5 of the bank, generation without refinement,
    direct scoring and G-Eval.

    ``control`` (a mutation for the controls that must fail; no method
    option): ``"worst5"`` keeps the five hypotheses with r > 0 of lowest
    fitness instead of the highest, ``"random5"`` a random five with r > 0
    (a draw other than the baseline's).
    """
    from ..methods import FitContext
    from ..methods.hypoeval import HypoEval, HypoEvalSettings, by_reward, evaluate_with_hypotheses
    if control not in (None, "worst5", "random5"):
        raise ValueError(f"control={control!r}: the HypoEval rows know 'worst5' and 'random5'")
    llm, backend = make_llm(world)
    method = HypoEval(**(params or {}))
    judge = method.fit(train, _aspect(), FitContext(llm=llm, task=TASK))
    fit_calls = _calls(llm)
    n = method.n_selected

    def quality(entries: Sequence[dict]) -> float:
        found = [world.hypothesis_by_text(e["text"]) for e in entries]
        return float(np.mean([h.quality if h else 0.0 for h in found])) if found else math.nan

    def test_r(entries: Sequence[dict]) -> float:
        verdicts = evaluate_with_hypotheses(test, entries, aspect=_aspect(), task=TASK, llm=llm,
                                            settings=HypoEvalSettings.from_params(method.get_params()).scoring)
        return _pearson([s.human[TARGET] for s in test], [v.score for v in verdicts])

    def draw(entries: Sequence[dict], seed: int) -> list[dict]:
        rng = np.random.default_rng(seed)
        return [entries[i] for i in rng.choice(len(entries), size=min(n, len(entries)), replace=False)] \
            if entries else []

    selected, bank = judge.state["selected"], judge.state["bank"]
    positive = [e for e in bank if e.get("selectable")]  # r > 0 at enough coverage: what selection may keep
    if control == "worst5":
        selected = sorted(positive, key=lambda e: e["fitness"])[:n]
    elif control == "random5":
        selected = draw(positive, world.seed + 19)
    random5, random5_positive = draw(bank, world.seed + 11), draw(positive, world.seed + 12)
    top_reward = by_reward(bank)[:n]
    # generation without refinement: the same fit with n_refine=0, its own selection (NaN when it adopts nothing)
    plain_llm, plain_backend = make_llm(world)
    try:
        unrefined = HypoEval(**{**(params or {}), "n_refine": 0}).fit(train, _aspect(),
                                                                      FitContext(llm=plain_llm, task=TASK))
        unrefined_selected = unrefined.state["selected"]
    except ValueError:
        unrefined_selected = None
    unrefined_calls = _calls(plain_llm)
    best5 = [{"text": h.text} for h in sorted(world.pool, key=lambda h: -h.quality)[:n]]
    kinds = {k: sum(1 for e in bank if (h := world.hypothesis_by_text(e["text"])) and h.kind == k)
             for k in ("helpful", "useless", "misleading")}
    q_sel, q_rand, q_pos, q_best, q_bank = (quality(selected), quality(random5), quality(random5_positive),
                                            quality(best5), quality(bank))
    oracle = sorted(bank, key=lambda e: -(h.quality if (h := world.hypothesis_by_text(e["text"])) else 0.0))
    q_oracle = quality(oracle[:n])
    r = {"selected": test_r(selected), "random5": test_r(random5), "random5_positive": test_r(random5_positive),
         "all_positive": test_r(positive), "top5_reward": test_r(top_reward),
         "no_refinement": math.nan if unrefined_selected is None else test_r(unrefined_selected),
         "best5": test_r(best5)}
    plain = plain_baselines(world, test)
    ceiling = _ceiling(world, test)
    log(f"hypoeval quality {q_sel:.2f} vs random {q_rand:.2f} (best {q_best:.2f}); r {r['selected']:.3f} vs "
        f"random 5 with r > 0 {r['random5_positive']:.3f}")
    detail = {"selected": [e["text"][:60] for e in selected], "bank_size": len(bank), "bank_kinds": kinds,
              "positive_in_bank": len(positive), "control": control,
              "quality": {"selected": q_sel, "random5": q_rand, "random5_positive": q_pos, "bank_mean": q_bank,
                          "best5_of_bank": q_oracle, "best5_of_pool": q_best},
              "test_pearson": r | {k: p["test_pearson"] for k, p in plain.items()}, "ceiling_pearson": ceiling,
              "calls": {"fit": fit_calls, "total": _calls(llm), "fit_without_refinement": unrefined_calls}
              | {k: p["calls"] for k, p in plain.items()},
              "backend": backend.stats,
              "baseline_backends": {"without_refinement": plain_backend.stats}
              | {k: p["backend"] for k, p in plain.items()}}
    # the baselines drawn from the method's final bank need the bank, scored on the training items: its fit's calls
    same = {"calls": (fit_calls, fit_calls)}
    measures = [measure("mean planted quality of selected", q_sel, "random 5 with r > 0 of its bank", q_pos, q_best,
                        True, **same),
                measure("mean planted quality of selected", q_sel, "random 5 of its bank", q_rand, q_best, True,
                        **same),
                measure("mean planted quality of selected", q_sel, "mean of its bank", q_bank, q_best, True, **same),
                measure("test Pearson", r["selected"], "random 5 with r > 0 of its bank", r["random5_positive"],
                        r["best5"], True, **same),
                measure("test Pearson", r["selected"], "all hypotheses with r > 0", r["all_positive"], r["best5"],
                        True, **same),
                measure("test Pearson", r["selected"], "top 5 by reward", r["top5_reward"], r["best5"], True, **same),
                measure("test Pearson", r["selected"], "random 5 of its bank", r["random5"], r["best5"], True, **same),
                measure("test Pearson", r["selected"], "generation without refinement (n_refine=0)",
                        r["no_refinement"], r["best5"], True, calls=(fit_calls, unrefined_calls)),
                *_plain_measures(plain, r["selected"], fit_calls, r["best5"])]
    return {"detail": detail, "measures": measures}


# --------------------------------------------------------------------------- Active-Critic


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

    from ..methods.active_critic import ActiveCritic, candidate_fitness, q_objective, run_pipeline, select_candidate
    from ..methods.active_critic.prompt_optimization import _demo
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
    from ..methods import FitContext
    from ..methods.active_critic import ActiveCritic, demo_count, run_pipeline, to_aspect_scale
    from ..methods.active_critic.examples import _example
    from ..methods.active_critic.prompt_optimization import _demo
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


RUNNERS = {"hpss": run_hpss, "hd_eval": run_hd_eval, "hypoeval": run_hypoeval, "active_critic": run_active_critic}
"""Each runner: ``(world, train, test, log, params, *, control=None) -> {"detail", "measures"}``; ``control``
names a mutation of the method for tests/test_bench_controls.py (never set by the command line)."""


# --------------------------------------------------------------------------- aggregation over seeds


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (NaNs dropped; no interval from one value)."""
    from scipy import stats
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def _fmt(m: float, lo: float, hi: float) -> str:
    if not math.isfinite(m):
        return "n/a"
    return f"{m:.3g}" if not math.isfinite(lo) else f"{m:.3g} [{lo:.3g}, {hi:.3g}]"


def _median(values: Sequence[Any]) -> float:
    x = [float(v) for v in values if v is not None and math.isfinite(v)]
    return float(np.median(x)) if x else math.nan


def _early_note(stopped: list[list[tuple[int, str]]]) -> str:
    """Which arm stopped short of its budget on which seeds (the first seed's reason), or ""."""
    parts = []
    for arm, found in zip(("method", "baseline"), stopped):
        if found:
            seed, why = found[0]
            parts.append(f"{arm} stopped early on {len(found)} seed(s) {sorted(s for s, _ in found)} "
                         f"(seed {seed}: {why})")
    return "; ".join(parts)


def summarise(per_seed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (method, measure, baseline): means, CIs and the paired difference over seeds, and each arm's
    LLM calls (medians over seeds) with a note when an arm stopped short of its budget."""
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    for entry in per_seed:
        for method, res in entry["methods"].items():
            for row in res.get("measures", []):
                measure_name, value, baseline, base_value, optimum, higher = row[:6]
                budget = row[6] if len(row) > 6 else {}
                c = cells.setdefault((method, measure_name, baseline),
                                     {"m": [], "b": [], "o": [], "higher": higher, "calls": ([], []),
                                      "stopped": ([], [])})
                c["m"].append(value)
                c["b"].append(base_value)
                c["o"].append(optimum)
                for k, n in enumerate(budget.get("calls") or (None, None)):
                    c["calls"][k].append(n)
                for k, why in enumerate(budget.get("stopped_early") or ("", "")):
                    if why:
                        c["stopped"][k].append((entry["seed"], why))
    rows = []
    for (method, measure_name, baseline), c in cells.items():
        m, b = mean_ci(c["m"]), mean_ci(c["b"])
        diffs = [x - y for x, y in zip(c["m"], c["b"])
                 if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
        d = mean_ci(diffs)
        better = d[0] > 0 if c["higher"] else d[0] < 0
        sure = (d[1] > 0 if c["higher"] else d[2] < 0) if math.isfinite(d[1]) else False
        calls = [_median(x) for x in c["calls"]]
        rows.append({"method": method, "measure": measure_name, "value": _fmt(*m), "baseline": baseline,
                     "baseline_value": _fmt(*b), "optimum": _fmt(*mean_ci(c["o"])[:1], math.nan, math.nan),
                     "difference": _fmt(*d), "beats_baseline": ("yes" if sure else "not shown") if better else "no",
                     "calls": " vs ".join(f"{x:,.0f}" for x in calls) if all(map(math.isfinite, calls)) else "",
                     "note": _early_note(list(c["stopped"])), "seeds": len(c["m"]),
                     "numbers": {"mean": m[0], "ci": [m[1], m[2]], "baseline_mean": b[0], "baseline_ci": [b[1], b[2]],
                                 "difference_mean": d[0], "difference_ci": [d[1], d[2]], "per_seed": c["m"],
                                 "baseline_per_seed": c["b"], "calls_per_seed": c["calls"][0],
                                 "baseline_calls_per_seed": c["calls"][1]}})
    return rows


def world_seeds_of(seeds: int, seed_offset: int = 0, seed_list: Sequence[int] | None = None) -> list[int]:
    """The worlds' seeds: ``seed_list`` as given, else ``seed_offset .. seed_offset + seeds - 1`` (default 0..N-1)."""
    if seed_list is not None and len(seed_list) > 0:
        if seed_offset:
            raise ValueError(f"--seed-list names the worlds itself: drop --seed-offset {seed_offset}")
        bad = [s for s in seed_list if not isinstance(s, int) or s < 0]
        if bad:
            raise ValueError(f"--seed-list: {bad[0]!r} is not a seed (a whole number from 0)")
        if len(set(seed_list)) < len(seed_list):
            raise ValueError(f"--seed-list {' '.join(map(str, seed_list))}: a seed is listed twice")
        return list(seed_list)
    if seeds < 1:
        raise ValueError(f"--seeds {seeds}: at least one seed is needed")
    if seed_offset < 0:
        raise ValueError(f"--seed-offset {seed_offset}: seeds start at 0")
    return list(range(seed_offset, seed_offset + seeds))


def run(*, seeds: int = 20, methods: Sequence[str] = METHODS, n_train: int = N_TRAIN, n_test: int = N_TEST,
        malformed: float = 0.05, params: Sequence[str] = (), free_text: bool = False, dial: Sequence[str] = (),
        seed_offset: int = 0, seed_list: Sequence[int] | None = None, **_: Any) -> dict[str, Any]:
    world_seeds = world_seeds_of(seeds, seed_offset, seed_list)
    seeds = len(world_seeds)
    if not 0 <= malformed < 1:
        raise ValueError(f"--malformed {malformed}: a fraction in [0, 1) is needed")
    for flag, size in (("--n-train", n_train), ("--n-test", n_test)):
        if size < 1:  # an empty part would refuse every fit (train) or loop for a test item forever (test)
            raise ValueError(f"{flag} {size}: at least one sample is needed")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"--methods: unknown {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    overrides = method_params(params)
    for name in overrides:
        if name not in METHODS:
            raise ValueError(f"--params: {name!r} is not one of {', '.join(METHODS)}")
    dials = parse_dials(dial)
    start = time.perf_counter()
    per_seed, worlds, notes = [], [], []
    bar = progress_bar(seeds * len(methods), "simulate")
    lines: list[str] = []
    for seed in world_seeds:
        world = World(seed, n_samples=n_train + n_test, malformed=malformed, structured=not free_text, dials=dials)
        train, test = split(world, n_train, n_test)
        entry: dict[str, Any] = {"seed": seed, "methods": {}, "seconds": {}}
        for m in methods:
            t0 = time.perf_counter()
            if m not in RUNNERS:
                entry["methods"][m] = {"error": "not implemented in this benchmark yet"}
            else:
                try:
                    entry["methods"][m] = RUNNERS[m](world, train, test, lines.append, overrides.get(m))
                except ValueError as exc:
                    # a fit that refuses (no hypothesis / strategy agrees with the humans at enough coverage)
                    # is the method's documented answer in this world: a finding, not a crash
                    entry["methods"][m] = {"refused": str(exc)}
                except Exception as exc:  # one failing method must not hide the others' results
                    entry["methods"][m] = {"error": f"{type(exc).__name__}: {exc}"}
            entry["seconds"][m] = round(time.perf_counter() - t0, 2)
            bar.update(1)
        worlds.append(world.draws())
        per_seed.append(entry)
    bar.close()
    rows = summarise(per_seed)
    numbers = [{"method": r["method"], "measure": r["measure"], "baseline": r["baseline"], **r.pop("numbers")}
               for r in rows]
    for m in methods:
        for key, label in (("refused", "fit refused (ValueError)"), ("error", "error")):
            found = {e["seed"]: e["methods"][m][key] for e in per_seed if key in e["methods"].get(m, {})}
            if not found:
                continue
            first = next(iter(found.values()))
            notes.append(f"{m}: {label} on seeds {sorted(found)} (its measures are over the other seeds): "
                         f"{first}")
            rows.append({"method": m, "measure": label, "value": f"{len(found)} of {seeds} seeds",
                         "baseline": "", "baseline_value": "", "optimum": "", "difference": "",
                         "beats_baseline": "", "seeds": len(found), "error": first})
    seconds = time.perf_counter() - start
    unrecognised, malformed_replies, leaked = _backend_totals(per_seed)
    if leaked:
        notes.append(f"{leaked} score prompts showed the judged item among their own examples: the simulated "
                     "judge read its score there (a leak, never by design)")
    summary = {"seconds": round(seconds, 1), "seeds": seeds, "methods": list(methods),
               "unrecognised_prompts": unrecognised, "malformed_replies": malformed_replies, "leaked_prompts": leaked}
    return result("simulate", config={"seeds": seeds, "world_seeds": world_seeds, "seed_offset": seed_offset,
                                      "seed_list": None if seed_list is None else list(seed_list),
                                      "methods": list(methods), "params": overrides,
                                      "free_text": free_text, "dials": asdict(dials),
                                      "n_train": n_train,
                                      "n_test": n_test, "malformed": malformed,
                                      "hpss_true_fitness": "analytic population Pearson x 100 of the planted noise "
                                                           "model (rounding as uniform noise, clipping ignored)"},
                  rows=rows, summary=summary, notes=notes) | {"numbers": numbers, "per_seed": per_seed,
                                                                          "worlds": worlds}


def _backend_totals(per_seed: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Prompts the simulated judge did not recognise (should be 0), malformed replies it sent, and score prompts
    that showed the judged item among their own examples (a leak, should be 0), over all runs."""
    unrecognised = malformed = leaked = 0

    def add(stats: dict[str, Any]) -> None:
        nonlocal unrecognised, malformed, leaked
        unrecognised += stats["steps"].get("unknown", 0) + stats["steps"].get("unknown_criterion", 0)
        malformed += stats["malformed"]
        leaked += stats.get("leaked", 0)

    for entry in per_seed:
        for res in entry["methods"].values():
            backend = res.get("detail", {}).get("backend", {})
            for stats in (backend.values() if "steps" not in backend else [backend]):
                add(stats)
            for stats in res.get("detail", {}).get("baseline_backends", {}).values():
                add(stats)
    return unrecognised, malformed, leaked


TABLE_COLUMNS = ("method", "measure", "value", "baseline", "baseline_value", "optimum", "difference",
                 "beats_baseline", "calls", "note")


def markdown(doc: dict[str, Any]) -> str:
    """The rows as docs/benchmarks.md's Markdown table."""
    lines = ["| method | measure | method [95% CI] | baseline | baseline [95% CI] | optimum | paired difference "
             "[95% CI] | beats baseline | LLM calls, method vs baseline (median) | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in TABLE_COLUMNS) + " |")
    return "\n".join(lines)
