"""Active-Critic stage 2, prompt optimization (§4.2 "Prompt Optimization", App. D.2, Eqs. 4-5): a random
search over K demonstration sets, the best by coverage-aware Q on the training split."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from ...llm import LLM, GenerationParams
from ...metrics import MIN_SELECTION_COVERAGE, SelectionFitness, correlations, coverage_adjusted
from ...prompting import TaskInfo
from ..base import EventSink, Progress, judge_warning
from .examples import demo_count
from .explained_scoring import OVERALL_EXPLANATION_CHARS, run_pipelines
from .settings import ActiveCriticSettings

def q_objective(human: Sequence[float], pred: Sequence[float]) -> tuple[float, dict[str, float]]:
    """Eq. 4: Q = Pearson + Spearman + Kendall on the scored items (NaN when undefined, e.g. constant predictions)."""
    corr = correlations(human, pred)
    return corr["pearson"] + corr["spearman"] + corr["kendall"], corr


def candidate_fitness(q: float, n_scored: int, n: int) -> SelectionFitness:
    """A demonstration set's selection fitness: Eq. 4's Q made coverage-aware.

    Q is computed as the paper does, on the items the set scored; then
    :func:`judge_engine.metrics.coverage_adjusted` shrinks it by the share of
    items scored (``value = Q * n_scored / n``) and makes the set ineligible
    (NaN) below :data:`judge_engine.metrics.MIN_SELECTION_COVERAGE` (80%).
    The set is selectable on its own only when eligible and Q > 0. A set
    that scored 2 of 10 items therefore cannot beat one that scored all 10
    slightly less well.
    """
    return coverage_adjusted(q, n_scored, n)


NO_POSITIVE_SET = ("fail", "zero_shot")
"""What the fit does when no candidate is selectable: end with a ValueError, or keep zero-shot (a person's choice)."""


def select_candidate(fitness: Sequence[SelectionFitness], *, no_positive_set: str = "fail") -> tuple[int, str]:
    """The index of the candidate to keep and, when the choice is a fallback, why (else "").

    Ranks by coverage-adjusted Q (:func:`candidate_fitness`) among the
    selectable candidates; ties keep the earlier one (zero-shot first).
    Candidate 0 is zero-shot, so when every demonstration set is
    ineligible or at or below zero and zero-shot is selectable, zero-shot is
    kept and the reason says so. When nothing is selectable, ``"fail"``
    raises a ValueError naming each candidate's Q and coverage;
    ``"zero_shot"`` keeps zero-shot (a person accepted it) with a reason.
    """
    usable = [i for i, f in enumerate(fitness) if f.selectable]
    if usable:
        best = max(usable, key=lambda i: (fitness[i].value, -i))
        if best == 0 and len(fitness) > 1 and usable == [0]:
            return 0, ("every demonstration set scored too few training items or agreed with the humans at or "
                       f"below zero (Q <= 0); kept zero-shot (Q = {fitness[0].correlation:.3f} on "
                       f"{fitness[0].n_scored} of {fitness[0].n} items)")
        return best, ""
    listing = "; ".join(f"{'zero-shot' if i == 0 else f'set {i}'}: " + (
        f"Q = {f.correlation:.3f} on {f.n_scored} of {f.n} items" if math.isfinite(f.correlation) else
        f"no Q ({f.reason})") for i, f in enumerate(fitness))
    if no_positive_set == "zero_shot":
        return 0, ("no demonstration set, zero-shot included, agrees with the human scores on the training split "
                   f"with enough items scored ({listing}); kept zero-shot because no_positive_set='zero_shot'")
    raise ValueError("Active-Critic found no usable judge: no demonstration set, zero-shot included, agrees with the "
                     "human scores on the training split (Q > 0) with at least "
                     f"{MIN_SELECTION_COVERAGE:.0%} of its items scored ({listing}). Check the inferred task description "
                     "and criteria, use more training items, or set no_positive_set='zero_shot' to keep the "
                     "zero-shot judge anyway.")


def _demo(example: dict[str, Any], trace: dict[str, Any] | None = None) -> dict[str, Any]:
    demo = {k: example[k] for k in ("sample_id", "input", "output", "context", "human_100")}
    if trace is None:
        return {**demo, "kind": "labeled"}
    scores = {k: {"score": v["score"], "explanation": v["explanation"]} for k, v in trace["criteria_scores"].items()
              if not math.isnan(v["score"])}
    return {**demo, "kind": "bootstrapped", "criteria_scores": scores, "explanation": trace["explanation"],
            "overall": trace["overall"]}


def reads_traces(candidate: int, mode: str) -> bool:
    """Whether :func:`propose_candidates` builds this candidate from the zero-shot program's traces: the
    bootstrapped sets do; zero-shot and the labeled sets (candidate 1, every one in ``labeled`` mode) do not."""
    return candidate > 1 and mode != "labeled"


def propose_candidates(train: Sequence[dict[str, Any]], zero_shot: dict[str, dict[str, Any]], *, k: int,
                       n_demos: int, mode: str, threshold: float, seed: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """K candidate demonstration sets, DSPy ``BootstrapFewShotWithRandomSearch`` style (our implementation).

    Candidate 0 has no demos (zero-shot); candidate 1 is ``n_demos`` random
    labeled examples; each further candidate (``mode="bootstrap"``) takes a
    random number (1..n_demos) of the zero-shot program's own traces whose
    overall score is within ``threshold`` of the human score, and fills up
    with labeled examples. ``mode="labeled"``: every further candidate is a
    fresh random labeled set.
    """
    n_demos = min(n_demos, max(0, len(train) - 1))
    candidates: list[tuple[str, list[dict[str, Any]]]] = [("zero-shot", [])]
    for c in range(1, k):
        rng = random.Random(seed * 1000 + c)
        if n_demos == 0:
            break
        if not reads_traces(c, mode):
            candidates.append(("labeled", [_demo(e) for e in rng.sample(list(train), n_demos)]))
            continue
        pool = [e for e in train if e["sample_id"] in zero_shot]
        rng.shuffle(pool)
        size = rng.randint(1, n_demos)
        boot = []
        for e in pool:
            trace = zero_shot[e["sample_id"]]
            if len(boot) < size and not math.isnan(trace["overall"]) \
                    and abs(trace["overall"] - e["human_100"]) <= threshold:
                boot.append(_demo(e, trace))
        used = {d["sample_id"] for d in boot}
        rest = [e for e in train if e["sample_id"] not in used]
        fill = [_demo(e) for e in rng.sample(rest, min(len(rest), n_demos - len(boot)))]
        candidates.append(("bootstrap", boot + fill))
    return candidates


@dataclass(frozen=True)
class DemonstrationSearch:
    """What the demonstration search (:func:`optimize_demonstrations`) found."""

    demos: list[dict[str, Any]]
    """The winning set's demonstrations (empty: zero-shot won)."""
    search: list[dict[str, Any]]
    """One summary per candidate: Q, its correlations, coverage, how its replies were read."""
    warnings: list[dict[str, Any]]
    """``selection_fallback`` when the choice fell back to zero-shot
    (:func:`judge_engine.methods.base.judge_warning`)."""
    criterion_scores: dict[str, list[Any]] = field(default_factory=dict)
    """Criterion -> its score on each training item the zero-shot program scored (None: no score), the evidence
    of :mod:`judge_engine.rubric_evidence`."""

    @property
    def reads(self) -> dict[str, int]:
        """How the replies of the whole search were read, summed over the candidates (:func:`_count_reads`)."""
        total: dict[str, int] = {}
        for summary in self.search:
            for key, n in summary["reads"].items():
                total[key] = total.get(key, 0) + n
        return total


def optimize_demonstrations(train: Sequence[dict[str, Any]], state: dict[str, Any], *, llm: LLM, k: int,
                            n_demos: int, mode: str, threshold: float, eval_subsample: int | None, seed: int,
                            params: GenerationParams, source_chars: int, retry: bool = False,
                            weighted: bool = False, explanation_chars: int = OVERALL_EXPLANATION_CHARS,
                            no_positive_set: str = "fail", log: EventSink | None = None,
                            progress: Progress | None = None
                            ) -> DemonstrationSearch:
    """Eq. 5: pick the demonstration set that maximises Q on the training split (random search over K sets).

    Candidates are scored on the training examples minus their own demos
    (on a seeded subsample of ``eval_subsample`` examples when given, for
    slow backends). The choice is coverage-aware and never keeps a set with
    Q <= 0 on its own (:func:`select_candidate`, :func:`candidate_fitness`).
    Every candidate's summary records Q, its coverage and how many items it
    rests on; a ``warning`` event and the returned warnings say when the
    choice fell back to zero-shot.
    Returns the winning demos, one summary per candidate, and the warnings (:class:`DemonstrationSearch`).

    Raises
    ------
    ValueError
        When no candidate is selectable and ``no_positive_set`` is ``"fail"``.
    """
    evaluation = list(train)
    if eval_subsample is not None and eval_subsample < len(evaluation):
        evaluation = random.Random(seed).sample(evaluation, eval_subsample)
    summaries: list[dict[str, Any]] = []
    fitness: list[SelectionFitness] = []

    def scored_by(demos: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        ids = {d["sample_id"] for d in demos}
        return [e for e in evaluation if e["sample_id"] not in ids]

    def score(cands: Sequence[tuple[str, list[dict[str, Any]]]], first: int) -> list[list[dict[str, Any]]]:
        last = first + len(cands)
        label = f"demo search {first + 1}/{k}" if len(cands) == 1 else f"demo search {first + 1}-{last}/{k}"
        return run_pipelines([(scored_by(demos), demos) for _, demos in cands], state, llm=llm, params=params,
                             source_chars=source_chars, retry=retry, weighted=weighted,
                             explanation_chars=explanation_chars,
                             progress=(lambda d, t, s: progress(d, t, f"{label}: {s}")) if progress else None)

    # the zero-shot program's traces make the bootstrapped sets, so those are scored after it; the sets that
    # read no trace (zero-shot, the labeled ones) go out together first, then every bootstrapped set together
    # (issue 46); each set is recorded in order as before
    def propose(zero_shot: dict[str, dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
        return propose_candidates(train, zero_shot, k=k, n_demos=n_demos, mode=mode, threshold=threshold, seed=seed)

    first = [cand for c, cand in enumerate(propose({})) if not reads_traces(c, mode)]
    all_results = score(first, 0)
    zero_shot = {e["sample_id"]: r for e, r in zip(scored_by([]), all_results[0])}
    candidates = propose(zero_shot)
    if len(candidates) > len(first):
        all_results += score(candidates[len(first):], len(first))
    for c, ((kind, demos), results) in enumerate(zip(candidates, all_results)):
        scored = scored_by(demos)
        pred = [r["overall"] for r in results]
        q, corr = q_objective([e["human_100"] for e in scored], pred)
        n_read = sum(1 for p in pred if not math.isnan(p))
        fit = candidate_fitness(q, n_read, len(scored))
        fitness.append(fit)
        summary = {"candidate": c, "kind": kind, "demo_ids": [d["sample_id"] for d in demos],
                   "demo_kinds": [d["kind"] for d in demos], "n_items": len(scored), "n_scored": n_read,
                   "n_missing": len(scored) - n_read, "coverage": round(fit.coverage, 4),
                   "n_retried": sum(1 for r in results if r["retried"]),
                   "q": None if math.isnan(q) else q,
                   **{m: (None if math.isnan(v) else v) for m, v in corr.items()},
                   "fitness": None if math.isnan(fit.value) else fit.value, "selectable": fit.selectable,
                   "not_selectable_because": "" if fit.selectable else (fit.reason or "Q <= 0"),
                   "reads": _count_reads(results)}
        summaries.append(summary)
        if log:
            log("candidate", summary)
    try:
        best, note = select_candidate(fitness, no_positive_set=no_positive_set)
    except ValueError as exc:
        if log:
            log("demos_selected", {"candidate": None, "q": None, "demo_ids": [], "note": str(exc)})
        raise
    warnings = [judge_warning("selection_fallback", note)] if note else []
    winner = candidates[best][1]
    if log:
        log("demos_selected", {"candidate": best, "q": summaries[best]["q"], "fitness": summaries[best]["fitness"],
                               "coverage": summaries[best]["coverage"], "n_scored": summaries[best]["n_scored"],
                               "n_items": summaries[best]["n_items"],
                               "demo_ids": [d["sample_id"] for d in winner], "note": note})
        for w in warnings:
            log("warning", w)
    return DemonstrationSearch(winner, summaries, warnings, zero_shot_criterion_scores(zero_shot.values()))


def zero_shot_criterion_scores(traces: Any) -> dict[str, list[Any]]:
    """Criterion -> its score on each trace (None where the reply gave none); AC-Coarse traces have none."""
    out: dict[str, list[Any]] = {}
    for trace in traces:
        for name, cell in (trace.get("criteria_scores") or {}).items():
            out.setdefault(name, []).append((cell or {}).get("score"))
    return out


def _count_reads(results: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How the replies of a pipeline run were read: JSON, free-text fallback, missing, and from logprobs."""
    out = {"json": 0, "fallback": 0, "missing": 0, "logprobs": 0, "logprobs_first_position": 0}
    for r in results:
        for read in (r.get("mcse_read"), r.get("ose_read")):
            if read == "json":
                out["json"] += 1
            elif read == "text":
                out["fallback"] += 1
            elif read == "missing":
                out["missing"] += 1
        if r.get("source") in ("logprobs", "logprobs_first_position"):
            out[r["source"]] += 1
    return out


def prompt_optimization_step(examples: Sequence[dict[str, Any]], state: dict[str, Any], *,
                             settings: ActiveCriticSettings, task: TaskInfo, llm: LLM, log: EventSink | None = None,
                             progress: Progress | None = None) -> DemonstrationSearch:
    """§4.2 "Prompt Optimization": the demonstration search (:func:`optimize_demonstrations`) with the method's
    settings, ``n_demos`` by the dataset's task when it is not set (App. D.2, :func:`demo_count`)."""
    n_demos = settings.n_demos if settings.n_demos is not None else demo_count(task)
    return optimize_demonstrations(
        examples, state, llm=llm, k=settings.n_candidates, n_demos=n_demos, mode=settings.demo_mode,
        threshold=float(settings.bootstrap_threshold), eval_subsample=settings.eval_subsample, seed=settings.seed,
        params=settings.scoring, source_chars=settings.source_chars, retry=settings.retry_unparsed,
        explanation_chars=settings.explanation_chars,
        weighted=settings.weighted, no_positive_set=settings.no_positive_set, log=log, progress=progress)
