"""Simulated world: does each method find what was planted, against its paper's baselines?

Per seed a :class:`~.simulated_judge.World` is made (samples with latent
sub-criteria, human scores with planted weights, planted prompt effects and
a fraction of malformed replies) and every method runs at its paper
defaults (its default parameters) through the one LLM call path, answered by
the :class:`~.simulated_judge.SimulatedBackend`. Train and test parts are
group-disjoint (whole sources). Measures, each with its baselines at the
same call budget:

``hpss``
    true fitness (population Pearson × 100 of the planted noise model, known
    analytically for all 12,960 strategies) of the strategy found, and its
    regret to the global optimum, vs random search (71 distinct random
    strategies), Greedy (71 evaluations) and Stepwise-Greedy (21, constant
    by design) on the same validation fitness (paper Table 4 / §4.1).
``hypoeval``
    mean planted quality and test Pearson of the selected hypotheses vs a
    seeded random 5 of its own final bank, with the best 5 of the planted
    pool as the optimum.
``hd_eval``
    test Pearson of the aggregator vs the mean of the layer-1 scores (and
    the target aspect's layer-1 score alone), the optimum being the noise-free
    human formula; permutation importance's AUC of informative vs null
    sub-criteria (``sklearn.metrics.roc_auc_score``); the share of
    informative criteria among those the pruning chose to decompose vs the
    share among the candidates (a random choice).
``active_critic``
    test Pearson of the judge with its chosen demonstrations vs a seeded
    random labeled set of the same size, and vs no prompt optimisation
    (zero-shot); the planted noise multiplier of the chosen demonstrations
    and of the inferred criteria vs random ones (lower is better).

The table gives, per row, the mean over seeds with a 95% t-interval, the
baseline's, the optimum's mean, and the 95% t-interval of the paired
per-seed difference (method - baseline). Everything planted is written to
the JSON (``worlds``), with each seed's measures.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from . import method_params, progress_bar, result
from .simulated_judge import ASPECTS, TARGET, TASK, SimulatedBackend, World

METHODS = ("hpss", "hd_eval", "hypoeval", "active_critic")
N_TRAIN, N_TEST = 60, 100


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=int, default=20, help="simulated worlds (one per seed, 0..N-1)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--n-train", type=int, default=N_TRAIN, help="training (validation) samples per world")
    parser.add_argument("--n-test", type=int, default=N_TEST, help="held-out test samples per world")
    parser.add_argument("--malformed", type=float, default=0.05, help="fraction of unparsable replies")
    parser.add_argument("--free-text", action="store_true",
                        help="the simulated judge honours no JSON schema (exercises the free-text fallbacks)")
    parser.add_argument("--params", nargs="*", default=[], metavar="METHOD=JSON",
                        help="parameter overrides per method (default: the paper defaults), "
                             "e.g. hd_eval='{\"aggregator\": \"lr\"}'")


# --------------------------------------------------------------------------- worlds and the call path


def make_llm(world: World, concurrency: int = 2):
    """The one LLM call path over a simulated backend (no persistent cache: every call is answered)."""
    from ..llm import LLM, LLMConfig
    backend = SimulatedBackend(world, structured=world.structured)
    return LLM(LLMConfig(backend="simulated", concurrency=concurrency), backend), backend


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


# --------------------------------------------------------------------------- HPSS


def random_search(train, world: World, llm, *, evaluations: int, seed: int,
                  method=None) -> tuple[tuple | None, float]:
    """Random search baseline: ``evaluations`` distinct strategies drawn uniformly, adopted as HPSS adopts.

    Uses HPSS's own validation set, fitness, auxiliaries and selection rule
    (:func:`judge_engine.methods.hpss.select_best`: coverage-aware, a
    correlation above zero), so only the search differs. Returns (None, NaN)
    when no drawn strategy is selectable (HPSS's fit would refuse then).
    """
    from ..methods.hpss import (HPSS, Auxiliaries, ValidationFitness, all_strategies, search_value, select_best,
                                select_validation)
    m = method or HPSS()
    validation = select_validation(train, m.validation_size, m.seed)
    aux = Auxiliaries(llm=llm, aspect=_aspect(), task=TASK, pool=validation, human_criteria=m.human_criteria,
                      max_tokens=m.aux_max_tokens, seed=m.seed)
    evaluate = ValidationFitness(validation, aux, llm=llm, level="sample", max_tokens=m.judge_max_tokens,
                                 total=evaluations, retry=m.retry_unparsed)
    space = all_strategies()
    rng = np.random.default_rng(seed)
    for i in rng.choice(len(space), size=evaluations, replace=False):
        evaluate(space[i], "random")
    best = select_best(evaluate.selection)
    return (None, math.nan) if best is None else (best, search_value(evaluate.selection[best]))


def run_hpss(world: World, train, test, log: Callable[[str], None],
             params: dict[str, Any] | None = None) -> dict[str, Any]:
    from ..methods import FitContext
    from ..methods.hpss import HPSS, base_strategy, parse_strategy, strategy_name
    table, optimum, opt_fit = world.hpss_landscape()
    found: dict[str, tuple] = {}
    calls: dict[str, int] = {}
    measured: dict[str, float] = {}
    stats: dict[str, Any] = {}
    refused: dict[str, str] = {}
    for label, search in (("hpss", {}), ("greedy", {"search": "greedy"}),
                          ("stepwise_greedy", {"search": "stepwise_greedy"})):
        llm, backend = make_llm(world)
        stats[label] = backend.stats
        try:
            judge = HPSS(**{**(params or {}), **search}).fit(train, _aspect(), FitContext(llm=llm, task=TASK))
        except ValueError as exc:
            if label == "hpss":
                raise  # the method itself refused: a finding row of the benchmark
            refused[label] = str(exc)  # a baseline that adopts nothing: NaN, left out of its mean
            continue
        found[label] = parse_strategy(judge.state["strategy"])
        measured[label] = judge.state["fitness"]
        calls[label] = llm.ledger.snapshot()["calls"]
        log(f"hpss[{label}] {judge.state['strategy']} true {table[found[label]]:.1f}")
    llm, backend = make_llm(world)
    stats["random"] = backend.stats
    method = HPSS(**(params or {}))
    random_found, measured["random"] = random_search(train, world, llm, evaluations=method.n_evaluations(),
                                                     seed=world.seed, method=method)
    calls["random"] = llm.ledger.snapshot()["calls"]
    base = base_strategy(_aspect())
    # no drawn strategy selectable: random search adopts nothing in this world (NaN, left out of its mean)
    if random_found is not None:
        found["random"] = random_found
    else:
        refused["random"] = "no selectable strategy among those drawn"
    true = {k: table[v] for k, v in found.items()} | {k: math.nan for k in refused}
    out = {"found": {k: strategy_name(v) for k, v in found.items()}, "true_fitness": true, "refused": refused,
           "validation_fitness": measured, "calls": calls, "backend": stats,
           "base": strategy_name(base), "base_true_fitness": table[base],
           "optimum": strategy_name(optimum), "optimum_true_fitness": opt_fit,
           "factors_matching_optimum": {k: sum(a == b for a, b in zip(v, optimum)) for k, v in found.items()}}
    measures = []
    for b in ("random", "greedy", "stepwise_greedy"):
        measures.append(("true fitness (Pearson×100)", out["true_fitness"]["hpss"], b, out["true_fitness"][b],
                         opt_fit, True))
        measures.append(("regret to optimum", opt_fit - out["true_fitness"]["hpss"], b,
                         opt_fit - out["true_fitness"][b], 0.0, False))
    measures.append(("true fitness (Pearson×100)", out["true_fitness"]["hpss"], "base (MT-Bench)",
                     table[base], opt_fit, True))
    return {"detail": out, "measures": measures}


# --------------------------------------------------------------------------- HD-Eval


def run_hd_eval(world: World, train, test, log: Callable[[str], None],
                params: dict[str, Any] | None = None) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score
    from ..methods import FitContext
    from ..methods.hd_eval import HDEval, tree_index
    llm, backend = make_llm(world)
    events: list[tuple[str, dict]] = []
    judge = HDEval(**(params or {})).fit(train, _aspect(),
                                         FitContext(llm=llm, task=TASK, aspects=tuple(ASPECTS),
                                                    log=lambda kind, payload: events.append((kind, payload))))
    fit_calls = llm.ledger.snapshot()["calls"]
    verdicts = judge.score(test, llm=llm)
    human = [s.human[TARGET] for s in test]
    pred = [v.score for v in verdicts]
    aspect_names = [a.name for a in ASPECTS]
    layer1_mean = [np.nanmean([v.criteria.get(a, math.nan) for a in aspect_names])
                   if any(not math.isnan(v.criteria.get(a, math.nan)) for a in aspect_names) else math.nan
                   for v in verdicts]
    layer1_target = [v.criteria.get(TARGET, math.nan) for v in verdicts]
    z = np.array([[float(x) for x in s.metadata["latents"]] for s in test])
    ceiling = _pearson(human, world.human_level(z, TARGET).tolist())
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
    r_method, r_mean, r_target = _pearson(human, pred), _pearson(human, layer1_mean), _pearson(human, layer1_target)
    missing = sum(v.missing for v in verdicts)
    log(f"hd_eval r={r_method:.3f} layer1-mean r={r_mean:.3f} AUC={auc:.2f} kept {kept_share:.2f} vs {base_share:.2f}")
    detail = {"test_pearson": r_method, "layer1_mean_pearson": r_mean, "layer1_target_pearson": r_target,
              "ceiling_pearson": ceiling, "importance_auc": auc, "criteria_ranked": listing,
              "pruning": {"candidates": candidates, "chosen": chosen, "chosen_informative_share": kept_share,
                          "candidates_informative_share": base_share},
              "missing_test_scores": missing, "missing_train_scores": judge.state.get("missing_scores"),
              "calls": {"fit": fit_calls, "total": llm.ledger.snapshot()["calls"]},
              "backend": backend.stats}
    measures = [("test Pearson", r_method, "mean of layer-1 scores", r_mean, ceiling, True),
                ("test Pearson", r_method, "layer-1 target aspect alone", r_target, ceiling, True),
                ("importance AUC (informative vs null)", auc, "chance", 0.5, 1.0, True),
                ("informative share of decomposed (pruning)", kept_share, "random choice", base_share, best_share,
                 True)]
    return {"detail": detail, "measures": measures}


# --------------------------------------------------------------------------- HypoEval


def run_hypoeval(world: World, train, test, log: Callable[[str], None],
                 params: dict[str, Any] | None = None) -> dict[str, Any]:
    from ..methods import FitContext
    from ..methods.hypoeval import HypoEval, evaluate_with_hypotheses, scoring_settings
    llm, backend = make_llm(world)
    method = HypoEval(**(params or {}))
    judge = method.fit(train, _aspect(), FitContext(llm=llm, task=TASK))
    fit_calls = llm.ledger.snapshot()["calls"]

    def quality(entries: Sequence[dict]) -> float:
        found = [world.hypothesis_by_text(e["text"]) for e in entries]
        return float(np.mean([h.quality if h else 0.0 for h in found])) if found else math.nan

    def test_r(entries: Sequence[dict]) -> float:
        verdicts = evaluate_with_hypotheses(test, entries, aspect=_aspect(), task=TASK, llm=llm,
                                            settings=scoring_settings(method.get_params()))
        return _pearson([s.human[TARGET] for s in test], [v.score for v in verdicts])

    selected, bank = judge.state["selected"], judge.state["bank"]
    rng = np.random.default_rng(world.seed + 11)
    random5 = [bank[i] for i in rng.choice(len(bank), size=min(method.n_selected, len(bank)), replace=False)] \
        if bank else []
    best5 = [{"text": h.text} for h in sorted(world.pool, key=lambda h: -h.quality)[:method.n_selected]]
    kinds = {k: sum(1 for e in bank if (h := world.hypothesis_by_text(e["text"])) and h.kind == k)
             for k in ("helpful", "useless", "misleading")}
    q_sel, q_rand, q_best, q_bank = quality(selected), quality(random5), quality(best5), quality(bank)
    oracle = sorted(bank, key=lambda e: -(h.quality if (h := world.hypothesis_by_text(e["text"])) else 0.0))
    q_oracle = quality(oracle[:method.n_selected])
    r_sel, r_rand, r_best = test_r(selected), test_r(random5), test_r(best5)
    log(f"hypoeval quality {q_sel:.2f} vs random {q_rand:.2f} (best {q_best:.2f}); r {r_sel:.3f} vs {r_rand:.3f}")
    detail = {"selected": [e["text"][:60] for e in selected], "bank_size": len(bank), "bank_kinds": kinds,
              "quality": {"selected": q_sel, "random5": q_rand, "bank_mean": q_bank, "best5_of_bank": q_oracle,
                          "best5_of_pool": q_best},
              "test_pearson": {"selected": r_sel, "random5": r_rand, "best5": r_best},
              "calls": {"fit": fit_calls, "total": llm.ledger.snapshot()["calls"]},
              "backend": backend.stats}
    measures = [("mean planted quality of selected", q_sel, "random 5 of its bank", q_rand, q_best, True),
                ("mean planted quality of selected", q_sel, "mean of its bank", q_bank, q_best, True),
                ("test Pearson", r_sel, "random 5 of its bank", r_rand, r_best, True)]
    return {"detail": detail, "measures": measures}


# --------------------------------------------------------------------------- Active-Critic


def run_active_critic(world: World, train, test, log: Callable[[str], None],
                      params: dict[str, Any] | None = None) -> dict[str, Any]:
    from ..methods import FitContext
    from ..methods.active_critic import ActiveCritic, _demo, _example, run_pipeline, to_aspect_scale
    llm, backend = make_llm(world)
    method = ActiveCritic(**(params or {}))
    judge = method.fit(train, _aspect(), FitContext(llm=llm, task=TASK))
    fit_calls = llm.ledger.snapshot()["calls"]
    state = {k: judge.state[k] for k in ("variant", "task_description", "criteria")}
    chosen = judge.state["demos"]
    examples = [_example(s, _aspect()) for s in train]
    rng = np.random.default_rng(world.seed + 13)
    size = len(chosen) or 3
    random_set = [_demo(examples[i]) for i in rng.choice(len(examples), size=size, replace=False)]
    index = {s.id: i for i, s in enumerate(world.samples)}
    values = sorted(world.demo_value[index[s.id]] for s in train)
    params = ActiveCritic.scoring_params(judge.params)

    def test_r(demos: Sequence[dict]) -> float:
        rows = run_pipeline([{"sample_id": s.id, "input": s.input, "output": s.output, "context": s.context}
                             for s in test], state, demos, llm=llm, params=params,
                            source_chars=method.source_chars, retry=method.retry_unparsed, weighted=method.weighted)
        return _pearson([s.human[TARGET] for s in test], [to_aspect_scale(r["overall"], _aspect()) for r in rows])

    def multiplier(demos: Sequence[dict]) -> float:
        return world.demo_multiplier([index[d["sample_id"]] for d in demos])

    r_chosen, r_random, r_zero = test_r(chosen), test_r(random_set), test_r([])
    m_chosen, m_random = multiplier(chosen), multiplier(random_set)
    m_best = math.exp(sum(values[:size]))
    crit = list(state["criteria"])
    c_found = world.ac_multiplier(crit)
    c_pool = float(np.mean(list(world.ac_criteria.values())))
    c_best = world.ac_multiplier(sorted(world.ac_criteria, key=world.ac_criteria.get)[:max(1, len(crit))])
    log(f"active_critic r {r_chosen:.3f} vs random {r_random:.3f} vs zero-shot {r_zero:.3f}")
    detail = {"criteria": crit, "task_description": state["task_description"],
              "chosen_demos": [d["sample_id"] for d in chosen], "chosen_kinds": [d.get("kind") for d in chosen],
              "search": judge.state.get("search"),
              "test_pearson": {"chosen": r_chosen, "random": r_random, "zero_shot": r_zero},
              "demo_noise_multiplier": {"chosen": m_chosen, "random": m_random, "best": m_best},
              "criteria_noise_multiplier": {"inferred": c_found, "pool_mean": c_pool, "best": c_best},
              "calls": {"fit": fit_calls, "total": llm.ledger.snapshot()["calls"]},
              "backend": backend.stats}
    measures = [("test Pearson", r_chosen, "random demonstration set", r_random, math.nan, True),
                ("test Pearson", r_chosen, "no prompt optimisation (zero-shot)", r_zero, math.nan, True),
                ("planted noise multiplier of demos (lower is better)", m_chosen, "random demonstration set",
                 m_random, m_best, False),
                ("planted noise multiplier of criteria (lower is better)", c_found, "random criteria (pool mean)",
                 c_pool, c_best, False)]
    return {"detail": detail, "measures": measures}


RUNNERS = {"hpss": run_hpss, "hd_eval": run_hd_eval, "hypoeval": run_hypoeval, "active_critic": run_active_critic}


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


def summarise(per_seed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (method, measure, baseline): means, CIs and the paired difference over seeds."""
    cells: dict[tuple[str, str, str], dict[str, list]] = {}
    for entry in per_seed:
        for method, res in entry["methods"].items():
            for measure, value, baseline, base_value, optimum, higher in res.get("measures", []):
                c = cells.setdefault((method, measure, baseline), {"m": [], "b": [], "o": [], "higher": higher})
                c["m"].append(value)
                c["b"].append(base_value)
                c["o"].append(optimum)
    rows = []
    for (method, measure, baseline), c in cells.items():
        m, b = mean_ci(c["m"]), mean_ci(c["b"])
        diffs = [x - y for x, y in zip(c["m"], c["b"])
                 if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
        d = mean_ci(diffs)
        better = d[0] > 0 if c["higher"] else d[0] < 0
        sure = (d[1] > 0 if c["higher"] else d[2] < 0) if math.isfinite(d[1]) else False
        rows.append({"method": method, "measure": measure, "value": _fmt(*m), "baseline": baseline,
                     "baseline_value": _fmt(*b), "optimum": _fmt(*mean_ci(c["o"])[:1], math.nan, math.nan),
                     "difference": _fmt(*d), "beats_baseline": ("yes" if sure else "not shown") if better else "no",
                     "seeds": len(c["m"]),
                     "numbers": {"mean": m[0], "ci": [m[1], m[2]], "baseline_mean": b[0], "baseline_ci": [b[1], b[2]],
                                 "difference_mean": d[0], "difference_ci": [d[1], d[2]], "per_seed": c["m"],
                                 "baseline_per_seed": c["b"]}})
    return rows


def run(*, seeds: int = 20, methods: Sequence[str] = METHODS, n_train: int = N_TRAIN, n_test: int = N_TEST,
        malformed: float = 0.05, params: Sequence[str] = (), free_text: bool = False, **_: Any) -> dict[str, Any]:
    if seeds < 1:
        raise ValueError(f"--seeds {seeds}: at least one seed is needed")
    if not 0 <= malformed < 1:
        raise ValueError(f"--malformed {malformed}: a fraction in [0, 1) is needed")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"--methods: unknown {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    overrides = method_params(params)
    for name in overrides:
        if name not in METHODS:
            raise ValueError(f"--params: {name!r} is not one of {', '.join(METHODS)}")
    start = time.perf_counter()
    per_seed, worlds, notes = [], [], []
    bar = progress_bar(seeds * len(methods), "simulate")
    lines: list[str] = []
    for seed in range(seeds):
        world = World(seed, n_samples=n_train + n_test, malformed=malformed, structured=not free_text)
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
        for key, measure in (("refused", "fit refused (ValueError)"), ("error", "error")):
            found = {e["seed"]: e["methods"][m][key] for e in per_seed if key in e["methods"].get(m, {})}
            if not found:
                continue
            first = next(iter(found.values()))
            notes.append(f"{m}: {measure} on seeds {sorted(found)} (its measures are over the other seeds): "
                         f"{first}")
            rows.append({"method": m, "measure": measure, "value": f"{len(found)} of {seeds} seeds",
                         "baseline": "", "baseline_value": "", "optimum": "", "difference": "",
                         "beats_baseline": "", "seeds": len(found), "error": first})
    seconds = time.perf_counter() - start
    unrecognised, malformed = _backend_totals(per_seed)
    summary = {"seconds": round(seconds, 1), "seeds": seeds, "methods": list(methods),
               "unrecognised_prompts": unrecognised, "malformed_replies": malformed}
    return result("simulate", config={"seeds": seeds, "methods": list(methods), "params": overrides,
                                      "free_text": free_text,
                                      "n_train": n_train,
                                      "n_test": n_test, "malformed": malformed,
                                      "hpss_true_fitness": "analytic population Pearson x 100 of the planted noise "
                                                           "model (rounding as uniform noise, clipping ignored)"},
                  rows=rows, summary=summary, notes=notes) | {"numbers": numbers, "per_seed": per_seed,
                                                                          "worlds": worlds}


def _backend_totals(per_seed: list[dict[str, Any]]) -> tuple[int, int]:
    """Prompts the simulated judge did not recognise (should be 0) and malformed replies it sent, over all runs."""
    unrecognised = malformed = 0

    def add(stats: dict[str, Any]) -> None:
        nonlocal unrecognised, malformed
        unrecognised += stats["steps"].get("unknown", 0) + stats["steps"].get("unknown_criterion", 0)
        malformed += stats["malformed"]

    for entry in per_seed:
        for res in entry["methods"].values():
            backend = res.get("detail", {}).get("backend", {})
            for stats in (backend.values() if "steps" not in backend else [backend]):
                add(stats)
    return unrecognised, malformed


TABLE_COLUMNS = ("method", "measure", "value", "baseline", "baseline_value", "optimum", "difference",
                 "beats_baseline")


def markdown(doc: dict[str, Any]) -> str:
    """The rows as the README's Markdown table."""
    lines = ["| method | measure | method [95% CI] | baseline | baseline [95% CI] | optimum | paired difference "
             "[95% CI] | beats baseline |", "|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in TABLE_COLUMNS) + " |")
    return "\n".join(lines)
