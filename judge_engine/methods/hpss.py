"""HPSS: Heuristic Prompting Strategy Search for LLM evaluators (Wen et al., 2025).

The judge prompt is set by 8 factors (12,960 strategies,
:mod:`judge_engine.hpss_strategy`); HPSS searches them with a GA-like beam
search guided by per-value *advantages*, scoring each strategy by its
Spearman correlation with human scores on the validation split (the run's
train split). Map of this module to the paper (and ``specs/hpss.md``):

* :func:`evaluate_strategy` / :func:`fitness` / :class:`ValidationFitness` — r(𝒯):
  judge every validation sample with one strategy, Spearman × 100 at the
  dataset's level (§3.1, App. A; notes §7), each evaluation logged as an event.
* :func:`initialize` — Algorithm 1: the MT-Bench base plus every one-factor
  change (21 evaluations) and the initial advantages A_ij (Eq. 2; notes §8.2).
* :func:`exploration_scores` — Eq. 3 (advantage disparity + UCB term) and
  Eq. 4 (softmax with temperature τ).
* :func:`update_advantage` — Eq. 5 (moving average) and Eq. 6 (zero-centring).
* :func:`exploit` — Eq. 7: the unexplored strategy with the highest total advantage.
* :func:`iterative_search` — Algorithm 2: population k, g mutations per
  member per round, exploitation with probability ρ, budget m.
* :func:`greedy_search`, :func:`stepwise_greedy_search` — the paper's Greedy
  and Stepwise-Greedy baselines on the same machinery (App. F.2; notes §9).

Auxiliaries (criteria, AutoCoT steps, metrics questions, references,
in-context examples) are generated lazily by
:mod:`judge_engine.hpss_auxiliaries`. Paper vs authors' code, following the
notes' recommendations: ρ is the *exploitation* probability (notes §13.1);
A, B, τ and λ are in Spearman × 100 units (§13.3); t counts search-stage
evaluations only and M, N start at 1 (§13.4); explored neighbours stay in
the softmax and a draw of one is skipped at no cost (§13.5); exploitation
ties go to the first strategy in product order (§13.6); λ = 4 as in the
paper and README, not the code's argparse default 2 (§8.4).

Deviations, stated: a reply that does not parse is *missing* (NaN), never
the code's fallback 2.51 (§13.11), after one follow-up turn asking for
the number alone (``retry_unparsed``); a strategy whose fitness is undefined
(e.g. constant scores) is ranked last, contributes no advantage evidence
and gets advantage 0 at initialization; judge replies are capped at
``judge_max_tokens`` (512) instead of 4096 to bound CPU cost.

References
----------
Wen, B., Ke, P., Sun, Y., Wang, C., Gu, X., Zhou, J., Tang, J., Wang, H.,
Huang, M. (2025). HPSS: Heuristic Prompting Strategy Search for LLM
Evaluators. arXiv:2502.13031.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .. import metrics
from ..hpss_auxiliaries import Auxiliaries, complete_all, count_generations
from ..hpss_strategy import (FACTOR_NAMES, FACTORS, Strategy, all_strategies, as_dict, base_strategy,
                             build_prompt, describe, neighbours, parse_strategy, rating_range, replace_value,
                             strategy_name)
from ..llm import LLM, GenerationParams, Request
from ..parsing import parse_score, weighted_score
from ..prompting import TaskInfo, load_template, to_aspect_range
from ..records import Aspect, Sample, Verdict
from .base import EventSink, Interval, Judge, Method, Options, Progress, register

SYSTEM_MESSAGE = "You are a helpful assistant."
"""System turn of every judge call (the authors' code, notes §3.1 step 9)."""
RETRY_TEMPLATE = load_template("criterion_retry")
"""Follow-up turn for a reply with no readable rating (ours, not the paper's)."""
RETRY_MAX_TOKENS = 8

STEPWISE_ORDER = ("scale", "example", "criteria", "reference", "cot", "autocot", "metrics", "order")
"""Factor order of the Stepwise-Greedy baseline: paper Table 1 (notes §2)."""

Fitness = Callable[[Strategy, str], float]
"""``evaluate(strategy, stage) -> Spearman × 100`` (NaN when undefined)."""


# --------------------------------------------------------------------------- r(T): judging and fitness


@dataclass(frozen=True)
class StrategyScores:
    """One strategy's judgments of a list of samples."""

    scores: tuple[float, ...]
    """On the aspect's human range; NaN = missing."""
    raw: tuple[str, ...]
    judge_scores: tuple[float, ...]
    """As parsed, on the strategy's own scale."""
    prompts: tuple[str | None, ...]
    missing_aux: int
    """Samples left unscored because an auxiliary they needed is missing."""
    unparsed: int
    """Replies with no rating on the scale (or rejected by the backend)."""
    retried: int = 0
    """Replies that needed the follow-up turn (``retry_unparsed``)."""


def _follow_up(llm: LLM, requests: Sequence[Request], firsts: Sequence[str], low: int, high: int) -> list[tuple[float, str]]:
    """One more turn for replies without a rating: the number alone.

    On a scale of single-token numbers (3 and 5, not 10/50/100) and a backend
    with logprobs, the rating is probability-weighted over the scale's tokens
    at the position where the reply states it; otherwise the number as read.
    """
    weighted = llm.supports_logprobs and high <= 9
    params = GenerationParams(temperature=0.0, max_tokens=RETRY_MAX_TOKENS, top_logprobs=20 if weighted else 0)
    ask = RETRY_TEMPLATE.render(low=low, high=high)
    follow = [Request((*r.messages, {"role": "assistant", "content": first}, {"role": "user", "content": ask}),
                      params) for r, first in zip(requests, firsts)]
    out = []
    for first, reply in zip(firsts, complete_all(llm, follow)):
        text = reply.text if reply is not None else ""
        score = weighted_score(reply.logprobs[0], low, high, first_position=True)[0] if weighted and reply is not None and reply.logprobs \
            else math.nan
        if math.isnan(score):
            score = parse_score(text, low, high)
        out.append((score, f"{first}\n--- follow-up ---\n{text}"))
    return out


def evaluate_strategy(strategy: Strategy, samples: Sequence[Sample], aux: Auxiliaries, *, llm: LLM,
                      max_tokens: int, leave_out: bool, retry: bool = False,
                      progress: Callable[[int, int], None] | None = None) -> StrategyScores:
    """Judge ``samples`` with ``strategy`` (greedy, one generation each; notes §6).

    With ``retry`` a reply without a rating gets one follow-up turn asking
    for the number alone (:func:`_follow_up`); still none: missing.
    """
    aspect, task = aux.aspect, aux.task
    low, high = rating_range(strategy[0], aspect)
    inputs = aux.inputs_for(strategy, samples, leave_out=leave_out)
    prompts = [build_prompt(strategy, s, aspect, task, inp) if inp is not None else None
               for s, inp in zip(samples, inputs)]
    params = GenerationParams(temperature=0.0, max_tokens=max_tokens)
    idx = [i for i, p in enumerate(prompts) if p is not None]
    requests = [Request(({"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": prompts[i]}),
                        params) for i in idx]
    replies = complete_all(llm, requests, progress=progress) if requests else []
    judge = [math.nan] * len(samples)
    raw = [""] * len(samples)
    for i, reply in zip(idx, replies):
        raw[i] = reply.text if reply is not None else ""
        judge[i] = parse_score(raw[i], low, high) if reply is not None else math.nan
    todo = [(i, request) for i, request, reply in zip(idx, requests, replies)
            if retry and reply is not None and math.isnan(judge[i])]
    if todo:
        again = _follow_up(llm, [r for _, r in todo], [raw[i] for i, _ in todo], low, high)
        for (i, _), (score, text) in zip(todo, again):
            judge[i], raw[i] = score, text
    unparsed = sum(math.isnan(judge[i]) for i in idx)
    scores = tuple(math.nan if math.isnan(x) else to_aspect_range(x, (low, high), aspect) for x in judge)
    return StrategyScores(scores=scores, raw=tuple(raw), judge_scores=tuple(judge), prompts=tuple(prompts),
                          missing_aux=len(samples) - len(idx), unparsed=unparsed, retried=len(todo))


def fitness(samples: Sequence[Sample], aspect: str, scores: Sequence[float], *, level: str) -> float:
    """Spearman × 100 between the judge and the humans at ``level`` (notes §7); NaN when undefined."""
    human = [s.human.get(aspect, math.nan) for s in samples]
    values, _ = metrics.level_correlations(human, list(scores), level=level,
                                           groups=[s.group_id for s in samples],
                                           systems=[s.system_id for s in samples])
    rho = values["spearman"]
    return rho * 100 if not math.isnan(rho) else math.nan


# --------------------------------------------------------------------------- the search


def _rank_key(value: float) -> float:
    return -math.inf if value is None or math.isnan(value) else value


@dataclass
class SearchState:
    """Explored strategies with their fitness and the advantage statistics (notes §8.1)."""

    perf: dict[Strategy, float] = field(default_factory=dict)
    """T: every evaluated strategy → Spearman × 100."""
    A: dict[tuple[int, str], float] = field(default_factory=dict)
    """Advantage of each factor value (zero-mean per factor)."""
    N: dict[tuple[int, str], int] = field(default_factory=dict)
    """Exploration (update) count of each value, for the moving average."""
    M: dict[tuple[int, str], int] = field(default_factory=dict)
    """Appearance count of each value among evaluated strategies, for the UCB term."""
    cost: int = 0
    """Evaluations made in the iterative stage (initialization not counted)."""

    def best(self, k: int) -> list[Strategy]:
        return sorted(self.perf, key=lambda s: _rank_key(self.perf[s]), reverse=True)[:k]

    def advantages(self) -> dict[str, dict[str, float]]:
        return {name: {v: round(self.A[(i, v)], 4) for v in values} for i, (name, values) in enumerate(FACTORS)}


def initialize(base: Strategy, evaluate: Fitness) -> SearchState:
    """Algorithm 1: the base and its 20 one-factor variants; A_ij = s_ij − mean_j s_ij (Eq. 2).

    A value whose strategy has no defined fitness gets advantage 0 and the
    mean is taken over the others. N and M start at 1 for every value (notes §8.2).
    """
    state = SearchState()
    state.perf[base] = evaluate(base, "init")
    for i, (_, values) in enumerate(FACTORS):
        s = {}
        for v in values:
            st = replace_value(base, i, v)
            if st not in state.perf:
                state.perf[st] = evaluate(st, "init")
            s[v] = state.perf[st]
        defined = [x for x in s.values() if not math.isnan(x)]
        mean = sum(defined) / len(defined) if defined else 0.0
        for v in values:
            state.A[(i, v)] = 0.0 if math.isnan(s[v]) else s[v] - mean
            state.N[(i, v)] = 1
            state.M[(i, v)] = 1
    return state


def exploration_scores(state: SearchState, current: Strategy, *, tau: float,
                       lam: float) -> tuple[list[tuple[int, str]], np.ndarray]:
    """The one-factor neighbours of ``current`` and their sampling probabilities.

    B = (A_ij − A_ic) + λ·sqrt(ln t / M_ij) (Eq. 3) with t = cost + 1;
    P = softmax(B / τ) over all 20 neighbours, explored ones included (Eq. 4).
    """
    t = state.cost + 1
    neigh = neighbours(current)
    b = np.array([state.A[(i, v)] - state.A[(i, current[i])] + lam * math.sqrt(math.log(t) / state.M[(i, v)])
                  for i, v in neigh])
    z = b / tau
    p = np.exp(z - z.max())
    return neigh, p / p.sum()


def update_advantage(state: SearchState, parent: Strategy, factor: int, value: str, new_fitness: float) -> None:
    """Eq. 5 then Eq. 6 after an exploration step from ``parent`` changing ``factor`` to ``value``.

    The fresh sample of A_ij is r(new) − (r(parent) − A_ic): what the parent's
    context would score with a random value of the factor. Skipped (no
    evidence) when either fitness is undefined.
    """
    parent_fitness = state.perf[parent]
    if math.isnan(new_fitness) or math.isnan(parent_fitness):
        return
    key = (factor, value)
    old_ci = state.A[(factor, parent[factor])]
    state.A[key] = (state.A[key] * state.N[key] + (new_fitness - (parent_fitness - old_ci))) / (state.N[key] + 1)
    state.N[key] += 1
    values = FACTORS[factor][1]
    mu = sum(state.A[(factor, u)] for u in values) / len(values)
    for u in values:
        state.A[(factor, u)] -= mu


def exploit(state: SearchState, space: Sequence[Strategy] | None = None) -> Strategy | None:
    """Eq. 7: the unexplored strategy with the highest total advantage (first in product order on ties)."""
    best, best_value = None, -math.inf
    for st in space or all_strategies():
        if st in state.perf:
            continue
        value = sum(state.A[(i, v)] for i, v in enumerate(st))
        if value > best_value:
            best, best_value = st, value
    return best


def iterative_search(state: SearchState, evaluate: Fitness, rng: np.random.Generator, *, population: int,
                     mutations: int, rho: float, tau: float, lam: float, budget: int, max_rounds: int = 1000,
                     on_round: Callable[[int, list[Strategy]], None] | None = None,
                     on_update: Callable[[], None] | None = None) -> Strategy:
    """Algorithm 2 (notes §8.3): returns the best explored strategy.

    Each round every population member (best first) makes ``mutations``
    proposals from :func:`exploration_scores`; an explored proposal is skipped
    at no cost; otherwise with probability ρ it is replaced by :func:`exploit`.
    Exploration steps update the advantages at once; every evaluated
    strategy raises M of its values. The population keeps the top-k of the
    old members and this round's strategies; the search stops after
    ``budget`` evaluations (or ``max_rounds`` rounds).
    """
    space = all_strategies()
    pop = state.best(population)
    rounds = 0
    while state.cost < budget and rounds < max_rounds:
        new_pop = list(pop)
        for parent in pop:
            for _ in range(mutations):
                neigh, p = exploration_scores(state, parent, tau=tau, lam=lam)
                factor, value = neigh[int(rng.choice(len(neigh), p=p))]
                cand = replace_value(parent, factor, value)
                if cand in state.perf or state.cost >= budget:
                    continue
                exploited = bool(rng.random() <= rho)
                if exploited:
                    cand = exploit(state, space)
                    if cand is None:  # every strategy explored
                        return state.best(1)[0]
                state.perf[cand] = evaluate(cand, "exploit" if exploited else "explore")
                new_pop.append(cand)
                state.cost += 1
                if not exploited:
                    update_advantage(state, parent, factor, value, state.perf[cand])
                for i, v in enumerate(cand):
                    state.M[(i, v)] += 1
                if on_update:
                    on_update()
        pop = sorted(set(new_pop), key=lambda s: _rank_key(state.perf[s]), reverse=True)[:population]
        rounds += 1
        if on_round:
            on_round(rounds, pop)
    return state.best(1)[0]


def greedy_search(base: Strategy, evaluate: Fitness, rng: np.random.Generator, *, budget: int,
                  perturbations: int = 5) -> SearchState:
    """Greedy baseline: beam 1; each round perturbs the best ``perturbations`` times (one random factor
    to a random other value), evaluates the unexplored ones and keeps the best (notes §9).
    ``budget`` counts evaluations after the base."""
    state = SearchState()
    state.perf[base] = evaluate(base, "init")
    current, rounds = base, 0
    while state.cost < budget and rounds < 1000:
        for _ in range(perturbations):
            factor = int(rng.integers(len(FACTORS)))
            others = [v for v in FACTORS[factor][1] if v != current[factor]]
            cand = replace_value(current, factor, others[int(rng.integers(len(others)))])
            if cand in state.perf or state.cost >= budget:
                continue
            state.perf[cand] = evaluate(cand, "explore")
            state.cost += 1
        current = state.best(1)[0]
        rounds += 1
    return state


def stepwise_greedy_search(base: Strategy, evaluate: Fitness) -> SearchState:
    """Stepwise-Greedy baseline: fix the factors one by one in Table 1 order, each to its best value
    with the others held (1 + 20 = 21 evaluations; notes §9)."""
    state = SearchState()
    state.perf[base] = evaluate(base, "init")
    current = base
    for name in STEPWISE_ORDER:
        i = FACTOR_NAMES.index(name)
        for v in FACTORS[i][1]:
            cand = replace_value(current, i, v)
            if cand not in state.perf:
                state.perf[cand] = evaluate(cand, "explore")
                state.cost += 1
        options = [replace_value(current, i, v) for v in FACTORS[i][1]]
        current = max(options, key=lambda s: _rank_key(state.perf[s]))
    return state


def select_validation(train: Sequence[Sample], size: int | None, seed: int, *,
                      by_group: bool = False) -> tuple[Sample, ...]:
    """The validation set: the train split, or a seeded subset of about ``size`` samples (in split order).

    With ``by_group`` (group-level fitness) whole groups are taken in a seeded
    order until ``size`` is reached, so per-group correlations stay defined.
    """
    if size is None or size >= len(train):
        return tuple(train)
    rng = np.random.default_rng(seed)
    if by_group:
        groups = sorted({s.group_id for s in train})
        keep_groups: set[str] = set()
        count = 0
        for g in rng.permutation(len(groups)):
            if count >= size:
                break
            keep_groups.add(groups[g])
            count += sum(1 for s in train if s.group_id == groups[g])
        return tuple(s for s in train if s.group_id in keep_groups)
    keep = set(rng.choice(len(train), size=size, replace=False).tolist())
    return tuple(s for i, s in enumerate(train) if i in keep)


def search_trace(events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a run's events say about its search so far (for a live view).

    ``events`` are store rows (``kind``, ``payload``). Returns ``started``
    (payload of ``hpss_started`` or None), ``evaluated`` (payloads in order),
    the latest ``advantages`` and ``population``, ``aux_missing`` counts per
    kind, the ``best`` evaluated payload (None until one has a fitness) and
    any ``notes`` (stall / no fitness messages).
    """
    out: dict[str, Any] = {"started": None, "evaluated": [], "advantages": None, "population": None,
                           "aux_missing": {}, "best": None, "notes": []}
    for e in events:
        kind, payload = e["kind"], e["payload"]
        if kind == "hpss_started":
            out["started"] = payload
        elif kind == "hpss_evaluated":
            out["evaluated"].append(payload)
            if payload.get("fitness") is not None and (
                    out["best"] is None or payload["fitness"] > out["best"]["fitness"]):
                out["best"] = payload
        elif kind == "hpss_advantages":
            out["advantages"] = payload["advantages"]
        elif kind == "hpss_population":
            out["population"] = payload["members"]
        elif kind == "hpss_auxiliary_missing":
            out["aux_missing"][payload["kind"]] = out["aux_missing"].get(payload["kind"], 0) + 1
        elif kind in ("hpss_stalled", "hpss_no_fitness"):
            out["notes"].append(payload["message"])
    return out


def _round(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)


class ValidationFitness:
    """r(𝒯) on the validation set, recording every evaluation (the search's ``evaluate`` callback).

    Each call judges the validation samples with the strategy (the judged
    sample left out of its in-context examples), computes Spearman × 100 at
    ``level``, appends an entry to ``history`` and reports it as an
    ``hpss_evaluated`` event and as progress.
    """

    def __init__(self, validation: Sequence[Sample], aux: Auxiliaries, *, llm: LLM, level: str, max_tokens: int,
                 total: int, retry: bool = False, progress: Progress | None = None, log: EventSink | None = None):
        self.validation, self.aux, self.llm, self.level = tuple(validation), aux, llm, level
        self.max_tokens, self.total, self.progress, self.log = max_tokens, total, progress, log
        self.retry = retry
        self.history: list[dict[str, Any]] = []

    def __call__(self, strategy: Strategy, stage: str) -> float:
        done = len(self.history)
        label = f"strategy {done + 1} of {self.total} ({stage})"
        if self.progress:
            self.progress(done, self.total, label)
        result = evaluate_strategy(strategy, self.validation, self.aux, llm=self.llm, max_tokens=self.max_tokens,
                                   leave_out=True, retry=self.retry)
        value = fitness(self.validation, self.aux.aspect.name, result.scores, level=self.level)
        defined = [h["fitness"] for h in self.history if h["fitness"] is not None] + [_round(value)]
        best = max((x for x in defined if x is not None), default=None)
        entry = {"index": done + 1, "stage": stage, "strategy": strategy_name(strategy),
                 "factors": as_dict(strategy), "fitness": _round(value), "best_so_far": best,
                 "n": len(self.validation), "unparsed": result.unparsed, "retried": result.retried,
                 "missing_aux": result.missing_aux,
                 "calls": self.llm.ledger.snapshot()["calls"],
                 "scores": [None if math.isnan(x) else x for x in result.scores]}
        self.history.append(entry)
        if self.log:
            self.log("hpss_evaluated", entry)
        if self.progress:
            self.progress(done + 1, self.total, label)
        return value


# --------------------------------------------------------------------------- the Method


@register
class HPSS(Method):
    """Heuristic Prompting Strategy Search over 8 prompt factors.

    The run's train split is the validation set the search scores strategies
    on; the best strategy (with its auxiliaries) becomes the judge.

    Parameters
    ----------
    search : {"hpss", "greedy", "stepwise_greedy"}, default="hpss"
        ``hpss``: the paper's algorithm; ``greedy`` and ``stepwise_greedy``:
        the paper's search baselines on the same machinery (App. F.2).
    budget : int, default=50
        Strategy evaluations after the 21 of initialization (paper §4.1, App.
        F.3: 71 in total). Greedy gets the same total; Stepwise-Greedy always 21.
    population : int, default=5
        Population (beam) size k (App. F.3).
    mutations : int, default=2
        Mutations per population member per round g (App. F.3).
    exploit_prob : float, default=0.2
        Probability ρ of replacing an exploration proposal by the
        highest-advantage unexplored strategy (App. F.3, Algorithm 2).
    temperature : float, default=5.0
        Softmax temperature τ over the exploration scores, in Spearman × 100
        units (App. F.3; notes §13.3).
    exploration_weight : float, default=4.0
        Weight λ of the UCB exploration term (App. F.3 and the authors' README).
    validation_size : int or None, default=None
        Score strategies on a seeded subset of this many train samples (None:
        the whole train split). The paper's low-resource study used 10%.
    fitness_level : {"natural", "sample", "group"}, default="natural"
        Level of the validation Spearman: ``sample`` = over all items
        (the paper's dataset level), ``group`` = per source, averaged
        (SummEval's summary level, App. A); ``natural`` = the dataset's
        natural level as passed by the run (``group`` for group-level data,
        else ``sample``).
    base_scale : {None, "3", "5", "10", "50", "100"}, default=None
        Scale of the MT-Bench base strategy; None: 3 for a 3-point human
        scale, else 5 (notes §2).
    human_criteria : str or None, default=None
        Human-written criteria text; None: the aspect's definition.
    fixed_strategy : str or None, default=None
        A strategy name (e.g. ``5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI``)
        to use without searching: it is scored once on validation and becomes the judge.
    judge_max_tokens : int, default=512
        Reply length of a judge call (the authors' code allows 4096).
    aux_max_tokens : int, default=512
        Reply length of an auxiliary generation (notes §13.18 suggest 1024).
    retry_unparsed : bool, default=True
        A judge reply without a rating gets one follow-up turn asking for the
        number alone (probability-weighted from logprobs on 3- and 5-point
        scales). Not in the paper, whose code falls back to a fixed number;
        without it a small local model leaves most strategies unscored.
    seed : int, default=42
        Seeds the search and the example selection (the authors' README uses 42).
    """

    name = "hpss"
    title = "HPSS (prompting-strategy search)"
    _parameter_constraints = {
        "search": Options(("hpss", "greedy", "stepwise_greedy")),
        "budget": Interval(int, 0, 12960), "population": Interval(int, 1, 100),
        "mutations": Interval(int, 1, 20), "exploit_prob": Interval(float, 0, 1),
        "temperature": Interval(float, 1e-6, None), "exploration_weight": Interval(float, 0, None),
        "fitness_level": Options(("natural", "sample", "group")),
        "base_scale": Options((None, "3", "5", "10", "50", "100")),
        "judge_max_tokens": Interval(int, 8, 8192), "aux_max_tokens": Interval(int, 8, 8192),
        "retry_unparsed": Options((True, False)), "seed": Interval(int, 0, None)}

    def __init__(self, *, search: str = "hpss", budget: int = 50, population: int = 5, mutations: int = 2,
                 exploit_prob: float = 0.2, temperature: float = 5.0, exploration_weight: float = 4.0,
                 validation_size: int | None = None, fitness_level: str = "natural", base_scale: str | None = None,
                 human_criteria: str | None = None, fixed_strategy: str | None = None,
                 judge_max_tokens: int = 512, aux_max_tokens: int = 512, retry_unparsed: bool = True,
                 seed: int = 42):
        self.search = search
        self.budget = budget
        self.population = population
        self.mutations = mutations
        self.exploit_prob = exploit_prob
        self.temperature = temperature
        self.exploration_weight = exploration_weight
        self.validation_size = validation_size
        self.fitness_level = fitness_level
        self.base_scale = base_scale
        self.human_criteria = human_criteria
        self.fixed_strategy = fixed_strategy
        self.judge_max_tokens = judge_max_tokens
        self.aux_max_tokens = aux_max_tokens
        self.retry_unparsed = retry_unparsed
        self.seed = seed

    def _validate_params(self) -> None:
        constraints = dict(self._parameter_constraints)
        if self.validation_size is not None:
            constraints["validation_size"] = Interval(int, 2, None)
        for pname, constraint in constraints.items():
            constraint.check(pname, getattr(self, pname))
        if self.human_criteria is not None and not isinstance(self.human_criteria, str):
            raise ValueError(f"human_criteria={self.human_criteria!r} must be a string or None")
        if self.fixed_strategy is not None:
            try:
                parse_strategy(str(self.fixed_strategy))
            except ValueError as exc:
                raise ValueError(f"fixed_strategy: {exc}") from None

    def n_evaluations(self) -> int:
        """Strategy evaluations on the validation set."""
        if self.fixed_strategy:
            return 1
        if self.search == "stepwise_greedy":
            return 21
        return 21 + self.budget

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        """Judge calls ≈ (21 + budget) × validation size (notes §12) plus auxiliary generations."""
        n_val = min(n_train, self.validation_size) if self.validation_size else n_train
        aux = count_generations(n_val, 0)
        aux_test = count_generations(0, n_test)
        return {"fit": self.n_evaluations() * n_val + sum(aux.values()),
                "score": n_test + aux_test["questions"] + aux_test["references"]}

    def fit(self, train: Sequence[Sample], aspect: Aspect, *, llm: LLM, task: TaskInfo,
            progress: Progress | None = None, log: EventSink | None = None,
            natural_level: str | None = None) -> Judge:
        """``natural_level``: the dataset's meta-evaluation level, passed by ``execute_run``."""
        self._validate_params()
        level = self.fitness_level
        if level == "natural":
            level = "group" if natural_level == "group" else "sample"
        validation = select_validation(train, self.validation_size, self.seed, by_group=level == "group")
        aux = Auxiliaries(llm=llm, aspect=aspect, task=task, pool=validation, human_criteria=self.human_criteria,
                          max_tokens=self.aux_max_tokens, seed=self.seed, log=log)
        base = base_strategy(aspect, self.base_scale)
        evaluate = ValidationFitness(validation, aux, llm=llm, level=level,
                                     max_tokens=self.judge_max_tokens, total=self.n_evaluations(),
                                     retry=self.retry_unparsed, progress=progress, log=log)
        if log:
            log("hpss_started", {"search": "fixed" if self.fixed_strategy else self.search,
                                 "evaluations": self.n_evaluations(), "base": strategy_name(base),
                                 "validation_ids": [s.id for s in validation], "level": level})
        state, best = self._search(base, evaluate, log)
        if math.isnan(state.perf[best]) and base in state.perf:
            best = base
            if log:
                log("hpss_no_fitness", {"message": "no strategy had a defined validation Spearman (constant or "
                                                   f"missing scores); the judge keeps {strategy_name(best)}"})
        judge_state = {
            "strategy": strategy_name(best), "factors": as_dict(best), "readable": describe(best),
            **aux.globals_for(best), "fitness": _round(state.perf[best]),
            "base_strategy": strategy_name(base), "base_fitness": _round(state.perf.get(base, math.nan)),
            "explored": [{k: h[k] for k in ("index", "stage", "strategy", "fitness", "unparsed", "missing_aux")}
                         for h in evaluate.history],
            "advantages": state.advantages() if state.A else {}, "auxiliary_failures": dict(aux.failures),
            "validation_ids": [s.id for s in validation]}
        if log:
            log("hpss_best", {k: judge_state[k] for k in ("strategy", "fitness", "base_fitness")})
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state=judge_state)

    def _search(self, base: Strategy, evaluate: "ValidationFitness",
                log: EventSink | None) -> tuple[SearchState, Strategy]:
        """Run the configured search (or score the fixed strategy); returns the state and the best strategy."""
        rng = np.random.default_rng(self.seed)
        if self.fixed_strategy:
            state, best = SearchState(), parse_strategy(self.fixed_strategy)
            state.perf[best] = evaluate(best, "fixed")
            return state, best
        if self.search == "greedy":
            state = greedy_search(base, evaluate, rng, budget=20 + self.budget)
            return state, state.best(1)[0]
        if self.search == "stepwise_greedy":
            state = stepwise_greedy_search(base, evaluate)
            return state, state.best(1)[0]
        state = initialize(base, evaluate)
        shown: list[list[Strategy]] = [[]]

        def log_advantages() -> None:
            if log:
                log("hpss_advantages", {"after": len(evaluate.history), "advantages": state.advantages()})

        def log_population(round_no: int, pop: list[Strategy]) -> None:
            if log and pop != shown[0]:  # a round whose proposals were all explored changes nothing
                shown[0] = list(pop)
                log("hpss_population", {"round": round_no, "after": len(evaluate.history), "members": [
                    {"strategy": strategy_name(s), "fitness": _round(state.perf[s])} for s in pop]})

        log_advantages()
        log_population(0, state.best(self.population))
        best = iterative_search(state, evaluate, rng, population=self.population, mutations=self.mutations,
                                rho=self.exploit_prob, tau=self.temperature, lam=self.exploration_weight,
                                budget=self.budget, on_round=log_population, on_update=log_advantages)
        if state.cost < self.budget and log:
            log("hpss_stalled", {"evaluations": len(evaluate.history), "message": (
                f"the search stopped after {len(evaluate.history)} evaluations: for 1000 rounds every proposal "
                "was an already explored strategy (paper behaviour, notes §13.2)")})
        return state, best

    @classmethod
    def auxiliaries_for(cls, judge: Judge, llm: LLM) -> Auxiliaries:
        """The judge's auxiliaries: its criteria, steps and examples fixed; per-sample ones generated anew."""
        st = judge.state
        return Auxiliaries(llm=llm, aspect=judge.aspect_record, task=judge.task_info,
                           human_criteria=judge.params.get("human_criteria"),
                           max_tokens=judge.params.get("aux_max_tokens", 512), seed=judge.params.get("seed", 42),
                           fixed={"criteria": st.get("criteria"), "steps": st.get("steps"),
                                  "examples": st.get("examples") or []})

    @classmethod
    def render(cls, judge: Judge, sample: Sample, *, llm: LLM, strategy: str | None = None,
               pool: Sequence[Sample] = (), leave_out: bool = False) -> str | None:
        """The full prompt ``judge`` sends for ``sample``; None when an auxiliary it needs is missing.

        With ``strategy`` (any explored strategy name) its auxiliaries are
        rebuilt as during the search, examples drawn from ``pool`` (the
        validation samples) and, with ``leave_out``, without ``sample`` itself.
        Generations already made are answered by the cache.
        """
        st = parse_strategy(strategy or judge.state["strategy"])
        aux = cls.auxiliaries_for(judge, llm) if strategy is None else Auxiliaries(
            llm=llm, aspect=judge.aspect_record, task=judge.task_info, pool=tuple(pool),
            human_criteria=judge.params.get("human_criteria"), max_tokens=judge.params.get("aux_max_tokens", 512),
            seed=judge.params.get("seed", 42))
        [inputs] = aux.inputs_for(st, [sample], leave_out=leave_out)
        return None if inputs is None else build_prompt(st, sample, judge.aspect_record, judge.task_info, inputs)

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        strategy = parse_strategy(judge.state["strategy"])
        aux = cls.auxiliaries_for(judge, llm)
        result = evaluate_strategy(strategy, samples, aux, llm=llm,
                                   max_tokens=judge.params.get("judge_max_tokens", 512), leave_out=False,
                                   retry=judge.params.get("retry_unparsed", False),
                                   progress=(lambda d, t: progress(d, t, "scoring")) if progress else None)
        verdicts = []
        for s, score, judged, raw, prompt in zip(samples, result.scores, result.judge_scores, result.raw,
                                                 result.prompts):
            meta: dict[str, Any] = {"strategy": judge.state["strategy"]}
            if prompt is None:
                meta["missing"] = "auxiliary"
            elif math.isnan(judged):
                meta["missing"] = "unparsed"
            else:
                meta["judge_score"] = judged
            verdicts.append(Verdict(sample_id=s.id, aspect=judge.aspect["name"], score=score, explanation=raw,
                                    raw=raw, metadata=meta))
        return verdicts
