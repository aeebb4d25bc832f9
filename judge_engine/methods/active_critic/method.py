"""The registered Active-Critic method: stage 1 (task description, criteria), then the demonstration
search, and scoring with the fitted judge."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar, Sequence

from ...llm import LLM, GenerationParams
from ...records import Aspect, Sample, Verdict
from ..base import (
    CRITERIA_FORM_LABELS,
    CRITERIA_FORMS,
    EventSink,
    FitContext,
    Interval,
    OptionalInterval,
    OptionalType,
    Judge,
    Method,
    Options,
    Progress,
    judge_warning,
    register,
)
from ...rubric_evidence import refusal_record, same_score
from ...rubric_model_check import estimate_calls as model_check_calls
from .criteria_reading import MAX_CRITERIA
from .criteria_definition import criteria_definition_step
from .examples import NORMALIZATIONS, scored_examples, shown_texts, to_aspect_scale, training_batches
from .explained_scoring import check_explanation, run_pipeline
from .prompt_optimization import NO_POSITIVE_SET, prompt_optimization_step
from .settings import ActiveCriticSettings
from .state import ActiveCriticState
from .task_description import task_description_step

MADE_SHARE = 0.6
"""Calls a fit makes over those :meth:`ActiveCritic.estimate_calls` counts (an upper bound: every follow-up
turn, every batch of stage 1, every candidate's items), measured against the count a run's estimate makes
(2026-11-29): 680 of 1,118 in issue 46's paper-default SummEval run, 47 of 78 for SmolLM2 on 4 SummEval items,
230 of 431 on simulated world 0 at `bench estimate-waves`' sizes (0.53)."""


@register
class ActiveCritic(Method):
    """Active-Critic: task, criteria and demonstrations inferred from human-scored examples.

    Parameters
    ----------
    variant : {"fine", "coarse"}, default="fine"
        AC-Fine scores every criterion (McS-E) and then the overall score
        (OS-E): 2 calls per item; AC-Coarse gives the overall score with the
        criteria listed: 1 call (paper §5).
    n_candidates : int, default=11
        K candidate demonstration sets in the random search (App. D.2: 11 epochs).
    n_demos : int or None, default=None
        Demonstrations per candidate; None = 3 for summarization/dialogue,
        8 for data-to-text and stories (App. D.2).
    demo_mode : {"bootstrap", "labeled"}, default="bootstrap"
        ``bootstrap``: DSPy BootstrapFewShotWithRandomSearch-style candidates
        (the paper's optimizer); ``labeled``: random labeled demos only.
    bootstrap_threshold : float, default=15.0
        A zero-shot trace becomes a demo when its overall score is within this
        many points (0-100) of the human score (our choice; not in the paper).
    eval_subsample : int or None, default=None
        Score candidates on at most this many training items (None = the
        whole training split, as in the paper; set it for slow backends).
    batch_size : int, default=5
        Examples per mini-batch in task inference (§4.1).
    max_batches : int, default=25
        At most this many mini-batches / iterations (§4.1).
    complete_streak : int, default=5
        Consecutive COMPLETE answers that stop an inference loop (§4.1).
    task_temperature : float, default=1.0
        Sampling temperature of task inference (not reported in the paper;
        DSPy's default for data observation). Scoring is greedy.
    max_tokens : int, default=768
        Reply budget of every call (a McS-E reply on 8 criteria takes 400-800 tokens).
    source_chars : int, default=2000
        Sources in task-inference batches and demonstrations are cut to this
        many characters to fit small contexts (App. D.2 uses fewer demonstrations
        on long-input datasets for the same reason); the judged item is never cut.
    explanation_chars : int, default=1200
        Longest explanation and error analysis an overall-score reply may
        give (the reply's schema bounds it; the paper's replies are free
        text). A small model under a grammar writes up to the bound, so a
        short one makes scoring with explanations faster (the quick look's
        smallest size).
    seed : int, default=0
        Seeds the mini-batch order, the candidate draws and task-inference sampling.
    task_description : str or None, default=None
        A person's task description; None = inferred (stage 1).
    criteria : dict or None, default=None
        A person's criteria ``{name: definition}``; None = inferred (stage 1).
    criteria_form : {"auto", "paper", "sentence"}, default="auto"
        How stage 1 asks for criteria: ``paper``, named criteria with
        definitions (§4.1, Table 15); ``sentence``, for small models, each
        criterion one sentence that starts "A good <output>" under a grammar,
        named from its sentence (ours); ``auto``, the sentence form on the
        embedded model and the paper's on every other backend
        (:func:`~judge_engine.methods.base.resolve_criteria_form`). The form
        used is ``judge.state["criteria_form"]``.
    retry_unparsed : bool, default=True
        One follow-up turn asking for the overall score alone when an OS-E
        reply has none (not in the paper, whose parser falls back to a
        default number; here a second failure is recorded as missing).
    weighted : bool, default=False
        Read the overall score probability-weighted (not in the paper): after
        each OS-E reply, a follow-up turn asks for a 1-9 digit, and the
        expectation over the digits' probabilities is mapped to 0-100. On
        backends without logprobs this has no effect. Meant for small local
        models, which rarely state a usable 0-100 number.
    ensemble_task : bool, default=True
        After the per-batch task descriptions, one more call merges all of
        them into the final one (§4.1's ensemble).
    criteria_fallback : bool, default=True
        When the first criteria reply and its JSON retry give fewer than 4
        usable criteria, ask a short stand-alone structured prompt (the
        dataset's task and the aspect, :func:`criteria_qualities_prompt`),
        then a free-text one (one example) for ``Name: definition`` lines
        (neither is in the paper; the last is the fallback for backends that
        honour no JSON schema).
    score_normalization : {"ratio", "minmax"}, default="ratio"
        How human scores go onto 0-100 (§2.2): ``100 * r / r_max``, which the
        paper's examples follow, or min-max over the aspect's range.
    no_positive_set : {"fail", "zero_shot"}, default="fail"
        When no candidate, zero-shot included, scores at least 80% of its
        training items with Q > 0: ``"fail"`` ends the fit with a
        ValueError naming each candidate's Q and coverage (no judge);
        ``"zero_shot"`` is a person's choice to keep the zero-shot judge
        anyway, recorded as a ``selection_fallback`` warning.
    """

    name = "active_critic"
    ordered_state = ("demos", "criteria")
    title = "Active-Critic"
    made_share = MADE_SHARE
    _parameter_constraints = {
        "variant": Options(("fine", "coarse")),
        "n_candidates": Interval(int, 1, 100),
        "n_demos": OptionalInterval(int, 0, 16),
        "demo_mode": Options(("bootstrap", "labeled")),
        "bootstrap_threshold": Interval(float, 0, 100),
        "eval_subsample": OptionalInterval(int, 2, None),
        "batch_size": Interval(int, 1, 50),
        "max_batches": Interval(int, 1, 100),
        "complete_streak": Interval(int, 1, 100),
        "task_temperature": Interval(float, 0, 2),
        "max_tokens": Interval(int, 16, 8192),
        "source_chars": Interval(int, 100, None),
        "explanation_chars": Interval(int, 40, 20000),
        "seed": Interval(int, 0, None),
        "task_description": OptionalType(str),
        "criteria": OptionalType(dict),
        "criteria_form": Options(CRITERIA_FORMS),
        "retry_unparsed": Options((True, False)),
        "weighted": Options((True, False)),
        "criteria_fallback": Options((True, False)),
        "ensemble_task": Options((True, False)),
        "score_normalization": Options(NORMALIZATIONS),
        "no_positive_set": Options(NO_POSITIVE_SET),
    }

    _parameter_labels = {
        "variant": "Score form", "n_candidates": "Candidate prompts", "n_demos": "Demonstrations per prompt",
        "demo_mode": "Where demonstrations come from", "bootstrap_threshold": "Bootstrap error threshold",
        "eval_subsample": "Items to rate each candidate on", "batch_size": "Examples per inference batch",
        "max_batches": "Most inference batches", "complete_streak": "Stop after complete batches",
        "task_temperature": "Temperature of task inference", "max_tokens": "Reply length limit (tokens)",
        "source_chars": "Characters of each text shown", "seed": "Random seed of the method",
        "explanation_chars": "Explanation limit (characters)",
        "task_description": "Task description (fixed)", "criteria": "Criteria (fixed)",
        "criteria_form": "How criteria are asked for",
        "retry_unparsed": "Ask again after an unreadable reply", "weighted": "Probability-weighted scores",
        "criteria_fallback": "Dataset criteria if none inferred", "ensemble_task": "Merge several task guesses",
        "score_normalization": "Human score on 0-100 by", "no_positive_set": "If no demonstration set helps"}
    _choice_labels = {"variant": {"fine": "fine (criteria scores and overall)", "coarse": "coarse (overall only)"},
                      "demo_mode": {"bootstrap": "the model's own rated examples (paper)",
                                    "labeled": "human-scored examples"},
                      "score_normalization": {"ratio": "ratio to the top (paper)", "minmax": "min-max"},
                      "no_positive_set": {"fail": "stop with a message", "zero_shot": "score without demos"},
                      "criteria_form": CRITERIA_FORM_LABELS}
    quick_params: ClassVar[dict[str, Any]] = {"n_candidates": 3, "max_batches": 3, "batch_size": 4,
                                              "complete_streak": 2}
    smaller_looks: ClassVar[tuple[dict[str, Any], ...]] = (
        {"n_candidates": 2, "max_batches": 2, "batch_size": 3, "complete_streak": 1, "eval_subsample": 6},
        {"n_candidates": 2, "max_batches": 1, "batch_size": 3, "complete_streak": 1, "eval_subsample": 4,
         "source_chars": 800, "variant": "coarse", "max_tokens": 256, "no_positive_set": "zero_shot",
         "explanation_chars": 400})
    def __init__(self, *, variant: str = "fine", n_candidates: int = 11, n_demos: int | None = None,
                 demo_mode: str = "bootstrap", bootstrap_threshold: float = 15.0, eval_subsample: int | None = None,
                 batch_size: int = 5, max_batches: int = 25, complete_streak: int = 5, task_temperature: float = 1.0,
                 max_tokens: int = 768, source_chars: int = 2000, explanation_chars: int = 1200, seed: int = 0,
                 task_description: str | None = None, criteria: dict | None = None, criteria_form: str = "auto",
                 retry_unparsed: bool = True, weighted: bool = False, criteria_fallback: bool = True,
                 ensemble_task: bool = True, score_normalization: str = "ratio", no_positive_set: str = "fail"):
        self.variant = variant
        self.n_candidates = n_candidates
        self.n_demos = n_demos
        self.demo_mode = demo_mode
        self.bootstrap_threshold = bootstrap_threshold
        self.eval_subsample = eval_subsample
        self.batch_size = batch_size
        self.max_batches = max_batches
        self.complete_streak = complete_streak
        self.task_temperature = task_temperature
        self.max_tokens = max_tokens
        self.source_chars = source_chars
        self.explanation_chars = explanation_chars
        self.seed = seed
        self.task_description = task_description
        self.criteria = criteria
        self.criteria_form = criteria_form
        self.retry_unparsed = retry_unparsed
        self.weighted = weighted
        self.criteria_fallback = criteria_fallback
        self.ensemble_task = ensemble_task
        self.score_normalization = score_normalization
        self.no_positive_set = no_positive_set

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        """Stage 1 (unless a person gave the task description / criteria), then the demonstration search.

        ``Judge.state["warnings"]`` holds ``no_task_description``,
        ``no_criteria`` and ``selection_fallback`` when they apply;
        ``state["reads"]`` counts per stage how replies were read (JSON,
        free-text fallback, missing). Raises ValueError when no demonstration
        set is selectable and ``no_positive_set`` is ``"fail"``.
        """
        self._validate_params()
        settings = ActiveCriticSettings.from_params(self.get_params())
        llm, task, progress = context.llm, context.task, context.progress
        # §2.2 / §4.1: the training split as scored examples (0-100) and as shuffled mini-batches
        examples = scored_examples(train, aspect, settings.score_normalization)
        batches = training_batches(train, aspect, mode=settings.score_normalization, batch_size=settings.batch_size,
                                   max_batches=settings.max_batches, seed=settings.seed)
        shown = shown_texts(examples)
        reads: dict[str, dict[str, int]] = {}
        log = _counting_reads(context.log, reads)
        # §4.1 Task Inference: the task description, then the criteria definition
        described = task_description_step(batches, shown, settings=settings, task=task, llm=llm, log=log,
                                          progress=progress)
        defined = criteria_definition_step(batches, shown, described.description, settings=settings, task=task,
                                           aspect=aspect, llm=llm, log=log, progress=progress)
        for w in described.warnings + defined.warnings:
            log("warning", w)
        # §4.2 Scoring Alignment: McS-E / OS-E with the demonstrations that Prompt Optimization picks
        inferred = ActiveCriticState(variant=settings.variant, task_description=described.description,
                                     criteria=defined.criteria)
        # the search's events go straight to the run's log: its reads are counted per candidate (found.reads)
        found = prompt_optimization_step(examples, inferred.prompt_state, settings=settings, task=task, llm=llm,
                                         log=context.log, progress=progress)
        reads["search"] = found.reads
        criteria, demos, refused, refusal_warnings = refuse_same_score(inferred.criteria, found, log)
        learned = replace(inferred, criteria=criteria, criteria_form=defined.form, demos=demos, search=found.search,
                          task_description_versions=described.versions,
                          criteria_parse_failures=defined.parse_failures, n_batches=len(batches),
                          warnings=described.warnings + defined.warnings + found.warnings + refusal_warnings,
                          reads=reads, rejected=described.rejected + defined.rejected + refused,
                          flagged=described.flagged + defined.flagged)
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state=learned.to_dict())

    @staticmethod
    def scoring_params(params: dict[str, Any]) -> GenerationParams:
        """Greedy decoding for every scoring call (:attr:`ActiveCriticSettings.scoring`) of a parameter dict."""
        return ActiveCriticSettings.from_params(params).scoring

    def estimate_waves(self, n_train: int, n_test: int) -> dict[str, int]:
        """Stage 1's calls one after another (each reads the last one's answer; its JSON retries counted, so
        this errs high), except that a task description goes out with the next batch's observation; then the
        search: zero-shot with the labeled set, then every bootstrapped set, each item's criterion scores
        then its overall score (AC-Fine) or the overall score alone."""
        settings = ActiveCriticSettings.from_params(self.get_params())
        per_item = 2 if settings.variant == "fine" else 1
        stage1 = self.estimate_calls(n_train, 0)["fit"] - settings.n_candidates * (
            n_train if settings.eval_subsample is None else min(settings.eval_subsample, n_train)) * (
            per_item + (1 if settings.weighted or settings.retry_unparsed else 0))
        if settings.task_description is None and n_train:
            n_batches = min(settings.max_batches, math.ceil(n_train / settings.batch_size))
            stage1 -= max(0, n_batches - 1)  # description n and observation n + 1: one wave
        return {"fit": stage1 + 2 * per_item, "score": per_item}

    def estimate_calls(self, n_train: int, n_test: int, *, backend: str | None = None) -> dict[str, int]:
        """An upper bound of the backend calls of fit and of scoring (cache hits make it lower).

        Stage 1, task: one observation and one description per mini-batch,
        plus the ensemble call when there is more than one batch. Criteria:
        init (its JSON retry, and with ``criteria_fallback`` the qualities
        prompt and the list prompt), then per further batch an observation
        and a refine with its JSON retry; the same calls in either
        ``criteria_form``. Search: K candidates, each scoring at most
        the evaluated training items. Per item: McS-E (AC-Fine), OS-E, and at
        most one follow-up turn (the weighted digit, or the retry of an
        unreadable score). On a ``backend`` where the judge's own model checks
        generated text (:mod:`judge_engine.rubric_model_check`), one request
        for the inferred task description and one per final criterion (at
        most :data:`~.criteria_reading.MAX_CRITERIA`).
        """
        settings = ActiveCriticSettings.from_params(self.get_params())
        n_batches = min(settings.max_batches, math.ceil(n_train / settings.batch_size)) if n_train else 0
        stage1 = read = 0
        if settings.task_description is None:
            stage1 += 2 * n_batches + (1 if settings.ensemble_task and n_batches > 1 else 0)
            read += 1 if n_batches else 0
        if settings.criteria is None:
            init = 2 + (2 if settings.criteria_fallback else 0)  # the structured qualities prompt, then the list
            stage1 += init + 3 * max(0, n_batches - 1)
            read += MAX_CRITERIA
        stage1 += model_check_calls(read, backend)
        per_item = ((2 if settings.variant == "fine" else 1)
                    + (1 if settings.weighted or settings.retry_unparsed else 0))
        n_eval = n_train if settings.eval_subsample is None else min(settings.eval_subsample, n_train)
        return {"fit": stage1 + settings.n_candidates * n_eval * per_item, "score": n_test * per_item}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        aspect, state = judge.aspect_record, ActiveCriticState.from_judge(judge)
        settings = ActiveCriticSettings.from_stored(judge.params, cls.default_params())
        mode = settings.score_normalization
        examples = [{"sample_id": s.id, "input": s.input, "output": s.output, "context": s.context} for s in samples]
        results = run_pipeline(examples, state.prompt_state, state.demos, llm=llm, params=settings.scoring,
                               source_chars=settings.source_chars, retry=settings.retry_unparsed,
                               weighted=settings.weighted, explanation_chars=settings.explanation_chars,
                               progress=progress)
        verdicts = []
        for sample, r in zip(samples, results):
            crit = r["criteria_scores"]
            missing = [k for k, v in crit.items() if math.isnan(v["score"])]
            metadata = {"variant": state.variant, "source": r["source"], "read": r["ose_read"],
                        "criteria_read": r["mcse_read"],
                        "overall_100": None if math.isnan(r["overall"]) else r["overall"],
                        "criteria_100": {k: (None if math.isnan(v["score"]) else v["score"]) for k, v in crit.items()},
                        "criteria_explanations": {k: v["explanation"] for k, v in crit.items()},
                        "missing_criteria": missing, "retried": r["retried"]}
            if r["missing_reason"]:
                metadata["missing_reason"] = r["missing_reason"]
            explanation = r["explanation"]
            # a reply there was: its explanation must say something (no reply at all is the missing score's story)
            refused = check_explanation(explanation) if (r["ose_raw"] or "").strip() else None
            if refused:
                metadata["explanation_rejected"] = refused
                explanation = ""  # not shown as the judge's reason; the reply stays in raw
            verdicts.append(Verdict(
                sample_id=sample.id, aspect=aspect.name, score=to_aspect_scale(r["overall"], aspect, mode),
                criteria={k: to_aspect_scale(v["score"], aspect, mode) for k, v in crit.items()},
                explanation=explanation,
                raw=r["ose_raw"] if not r["mcse_raw"] else f"{r['mcse_raw']}\n---\n{r['ose_raw']}",
                metadata=metadata))
        return verdicts


def refuse_same_score(criteria: dict[str, str], found: Any, log: EventSink | None
                      ) -> tuple[dict[str, str], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Evidence in any language (issue 65): a criterion that gave every training item the same score in the
    zero-shot program's replies leaves the judge (criteria, demonstrations' criterion scores), kept in ``rejected``
    with that reason. Returns the criteria, the demonstrations, the refusals and a warning (the search's Q was
    measured with the refused criteria in the prompt)."""
    refused = []
    for name, scores in found.criterion_scores.items():
        reason = same_score(scores)
        if reason and name in criteria:
            refused.append(refusal_record(f"{name}: {criteria[name]}", reason,
                                          stage="scores on the training items (zero-shot program)", name=name))
    if not refused:
        return criteria, found.demos, [], []
    gone = {r["name"] for r in refused}
    kept = {n: d for n, d in criteria.items() if n not in gone}
    demos = [{**d, "criteria_scores": {k: v for k, v in d["criteria_scores"].items() if k not in gone}}
             if d.get("criteria_scores") else d for d in found.demos]
    warning = judge_warning("criteria_refused_on_evidence",
                            f"{len(refused)} criteria gave every training item the same score and were removed "
                            "from the judge; the demonstration search measured Q with them in the prompt",
                            count=len(refused))
    if log:
        for r in refused:
            log("criterion_refused", r)
        log("warning", warning)
    return kept, demos, refused, [warning]


def _counting_reads(log: EventSink | None, reads: dict[str, dict[str, int]]) -> EventSink:
    """The fit's event sink for stage 1: counts in ``reads`` how each reply was read (per event kind, then
    ``json``, ``text`` or ``missing``), then passes the event on to ``log``."""

    def sink(kind: str, payload: dict[str, Any]) -> None:
        if payload.get("read"):
            stage = reads.setdefault(kind, {})
            stage[payload["read"]] = stage.get(payload["read"], 0) + 1
        if log:
            log(kind, payload)

    return sink
