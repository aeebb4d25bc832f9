"""G-Eval (Liu et al., 2023): auto chain-of-thought steps, probability-weighted score.

``fit`` asks the LLM once for evaluation steps from the aspect definition
(auto-CoT), as a JSON list. Scoring puts the steps in a form-filling prompt
whose reply is constrained to ``{"score": N}``, and takes the expectation of
the score over the scale's tokens from the score token's top logprobs. When
the reply chose no number (a server that cannot constrain replies, a reply
that began by echoing the prompt), the scale tokens among its first
position's alternatives are read instead, since the prompt ends with the
score cue (source ``logprobs_first_position``), but only when they hold
enough of the probability there (:data:`judge_engine.parsing.MIN_FIRST_POSITION_MASS`).
Where the backend returns no logprobs, the score is the mean of
``n_samples`` sampled replies, as in the paper (n = 20).

References
----------
Liu, Y. et al. (2023). G-Eval: NLG Evaluation using GPT-4 with Better Human
Alignment. EMNLP.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Sequence

from ..llm import LLM, GenerationParams, Request
from ..parsing import mean_ignoring_missing, read_weighted
from ..structured import (GEVAL_STEPS, as_param, read_json, read_score, score_schema, sized_max_tokens,
                          string_list_schema)
from ..prompting import TaskInfo, judge_scale, load_template, render_sample, to_aspect_range
from ..records import Aspect, Sample, Verdict
from .base import FitContext, Interval, Judge, Method, Options, Progress, register

GEVAL_STEPS_TEMPLATE = load_template("geval_steps")
GEVAL_SCORE_TEMPLATE = load_template("geval_score")


STEPS_SCHEMA = string_list_schema(GEVAL_STEPS, "steps", min_items=3, max_items=5, min_length=3, max_length=240)
"""3 to 5 evaluation steps, as the steps prompt asks."""

LOGPROB_BACKENDS = ("llamacpp", "vllm", "openai")
"""Backends that return logprobs (an OpenAI-compatible server may refuse them; the run then samples)."""

SCORE_MAX_TOKENS = 12
"""Room for ``{"score": N}`` (about six tokens) and a little slack."""


def generate_steps(aspect: Aspect, task: TaskInfo, *, llm: LLM, max_tokens: int) -> tuple[str, str]:
    """Auto-CoT: evaluation steps written by the LLM from the aspect definition (one cached call).

    ``max_tokens`` is the ceiling; the request asks for no more than the longest reply the steps' schema
    admits (:func:`judge_engine.structured.sized_max_tokens`).

    Returns the steps as a numbered list and how they were read (``json``, or
    ``text`` when the reply was not the JSON asked for and is used as written).
    """
    low, high = judge_scale(aspect)
    prompt = GEVAL_STEPS_TEMPLATE.render(task=task.task, output_label_lower=task.output_label.lower(),
                                         aspect_name=aspect.name, aspect_definition=aspect.definition or aspect.name,
                                         low=low, high=high)
    reply = llm.complete([{"role": "user", "content": prompt}],
                         GenerationParams(max_tokens=sized_max_tokens(max_tokens, STEPS_SCHEMA),
                                          json_schema=as_param(STEPS_SCHEMA))).text
    reading = read_json(reply, STEPS_SCHEMA)
    if reading.ok:
        return "\n".join(f"{i}. {step.strip()}" for i, step in enumerate(reading.value["steps"], 1)), "json"
    return reply.strip(), "text"


def geval_prompt(sample: Sample, aspect: Aspect, task: TaskInfo, steps: str) -> str:
    low, high = judge_scale(aspect)
    return GEVAL_SCORE_TEMPLATE.render(
        task=task.task, output_label_lower=task.output_label.lower(), aspect_name=aspect.name,
        aspect_definition=aspect.definition or aspect.name, low=low, high=high, steps=steps,
        sample_block=render_sample(sample, task))


@register
class GEval(Method):
    """G-Eval with probability-weighted scores.

    Parameters
    ----------
    scoring : {"auto", "logprobs", "sampling"}, default="auto"
        ``logprobs``: expectation over the scale tokens' probabilities;
        ``sampling``: mean of ``n_samples`` replies at ``temperature``;
        ``auto``: logprobs when the backend offers them, else sampling.
    n_samples : int, default=20
        Replies averaged without logprobs (paper: n = 20).
    temperature : float, default=1.0
        Sampling temperature for the sampled variant (paper: 1.0).
    top_logprobs : int, default=20
        Alternatives requested per position (the OpenAI API caps it at 20).
    steps_max_tokens : int, default=256
        Length budget of the generated evaluation steps.
    """

    name = "geval"
    title = "G-Eval"
    _parameter_constraints = {
        "scoring": Options(("auto", "logprobs", "sampling")),
        "n_samples": Interval(int, 1, 100), "temperature": Interval(float, 0, 2),
        "top_logprobs": Interval(int, 1, 20), "steps_max_tokens": Interval(int, 16, 4096)}

    _parameter_labels = {"scoring": "How the score is read", "n_samples": "Samples per item (sampling)",
                         "temperature": "Sampling temperature", "top_logprobs": "Alternatives read per token",
                         "steps_max_tokens": "Length limit of the steps (tokens)"}
    _choice_labels = {"scoring": {"auto": "automatic (logprobs when available)",
                                  "logprobs": "probability-weighted (logprobs)", "sampling": "mean of sampled scores"}}
    quick_params: ClassVar[dict[str, Any]] = {"n_samples": 5}
    def __init__(self, *, scoring: str = "auto", n_samples: int = 20, temperature: float = 1.0,
                 top_logprobs: int = 20, steps_max_tokens: int = 256):
        self.scoring = scoring
        self.n_samples = n_samples
        self.temperature = temperature
        self.top_logprobs = top_logprobs
        self.steps_max_tokens = steps_max_tokens

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        llm, task, progress, log = context.llm, context.task, context.progress, context.log
        self._validate_params()
        if progress:
            progress(0, 1, "generating evaluation steps")
        steps, read_as = generate_steps(aspect, task, llm=llm, max_tokens=self.steps_max_tokens)
        if log:
            log("steps_generated", {"steps": steps, "read_as": read_as})
        if progress:
            progress(1, 1, "generating evaluation steps")
        scoring = self.scoring
        if scoring == "auto":
            scoring = "logprobs" if llm.supports_logprobs else "sampling"
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state={"steps": steps, "scoring": scoring})

    @classmethod
    def params_on(cls, params: dict[str, Any], llm: Any) -> dict[str, Any]:
        """``auto`` scoring is ``logprobs`` on the backends that return them (every real one, until a server
        refuses them); a scripted backend without logprobs keeps ``auto`` and its bound counts the samples."""
        if params.get("scoring", "auto") == "auto" and getattr(llm, "backend", "") in LOGPROB_BACKENDS:
            return {**params, "scoring": "logprobs"}
        return params

    def estimate_waves(self, n_train: int, n_test: int) -> dict[str, int]:
        return {"fit": 1, "score": 1}  # the steps, then the items

    def estimate_calls(self, n_train: int, n_test: int, *, backend: str | None = None) -> dict[str, int]:
        """Completions asked for: one for the steps, then one per item, or ``n_samples`` per item when scores
        are sampled (``auto`` samples on a backend without logprobs, so its bound counts the samples)."""
        per_item = 1 if self.scoring == "logprobs" else self.n_samples
        return {"fit": 1, "score": n_test * per_item}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        aspect, task, p = judge.aspect_record, judge.task_info, judge.params
        scale = judge_scale(aspect)
        use_logprobs = judge.state["scoring"] == "logprobs"
        schema = score_schema(*scale)
        if use_logprobs:
            params = GenerationParams(max_tokens=SCORE_MAX_TOKENS, top_logprobs=p["top_logprobs"],
                                      json_schema=as_param(schema))
        else:
            params = GenerationParams(max_tokens=SCORE_MAX_TOKENS, temperature=p["temperature"], n=p["n_samples"],
                                      json_schema=as_param(schema))
        requests = [Request(({"role": "user", "content": geval_prompt(s, aspect, task, judge.state["steps"])},),
                            params) for s in samples]
        replies = llm.complete_many(requests, progress=(lambda d, t: progress(d, t, "scoring")) if progress else None)
        verdicts = []
        for sample, reply in zip(samples, replies):
            if use_logprobs:
                score, meta = _read_logprobs_reply(reply.text, reply.logprobs[0] if reply.logprobs else (), scale)
                raw = reply.text
            else:
                readings = [read_score(t, *scale, schema=schema) for t in reply.texts]
                values = [r.score for r in readings]
                score = mean_ignoring_missing(values)
                meta = {"source": "sampling", "samples": [None if math.isnan(v) else v for v in values]}
                if math.isnan(score):
                    meta["missing_reason"] = f"none of the {len(values)} sampled replies gave a score"
                raw = "\n---\n".join(reply.texts)
            verdicts.append(Verdict(sample_id=sample.id, aspect=aspect.name,
                                    score=to_aspect_range(score, scale, aspect), raw=raw, metadata=meta))
        return verdicts


def _read_logprobs_reply(text: str, positions, scale: tuple[int, int]) -> tuple[float, dict]:
    """The weighted score of one reply, where it was read, and why it is missing when it is."""
    # with no number chosen, the prompt's closing score cue makes the first position the score's
    reading = read_weighted(positions, *scale, first_position=True)
    if reading.distribution is not None:
        return reading.score, {"source": reading.source,
                               "distribution": {str(k): round(v, 6) for k, v in reading.distribution.items()}}
    stated = read_score(text, *scale)  # no usable distribution: the number the reply states, if any
    if not math.isnan(stated.score):
        return stated.score, {"source": stated.source}
    return math.nan, {"source": "missing", "missing_reason": reading.missing_reason or stated.reason}
