"""G-Eval (Liu et al., 2023): auto chain-of-thought steps, probability-weighted score.

``fit`` asks the LLM once for evaluation steps from the aspect definition
(auto-CoT). Scoring puts the steps in a form-filling prompt and takes the
expectation of the score over the scale's tokens from the first score
token's top logprobs; when the reply chose no number (it began by echoing
the prompt, say), from the scale tokens among its first position's
alternatives, since the prompt ends with the score cue (source
``logprobs_first_position``). Where the backend returns no logprobs, the
score is the mean of ``n_samples`` sampled replies, as in the paper (n = 20).

References
----------
Liu, Y. et al. (2023). G-Eval: NLG Evaluation using GPT-4 with Better Human
Alignment. EMNLP.
"""

from __future__ import annotations

import math
from typing import Sequence

from ..llm import LLM, GenerationParams, Request
from ..parsing import mean_ignoring_missing, parse_score, weighted_score
from ..prompting import TaskInfo, judge_scale, load_template, render_sample, to_aspect_range
from ..records import Aspect, Sample, Verdict
from .base import EventSink, Interval, Judge, Method, Options, Progress, register

GEVAL_STEPS_TEMPLATE = load_template("geval_steps")
GEVAL_SCORE_TEMPLATE = load_template("geval_score")


def generate_steps(aspect: Aspect, task: TaskInfo, *, llm: LLM, max_tokens: int) -> str:
    """Auto-CoT: evaluation steps written by the LLM from the aspect definition (one cached call)."""
    low, high = judge_scale(aspect)
    prompt = GEVAL_STEPS_TEMPLATE.render(task=task.task, output_label_lower=task.output_label.lower(),
                                         aspect_name=aspect.name, aspect_definition=aspect.definition or aspect.name,
                                         low=low, high=high)
    return llm.complete([{"role": "user", "content": prompt}], GenerationParams(max_tokens=max_tokens)).text.strip()


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

    def __init__(self, *, scoring: str = "auto", n_samples: int = 20, temperature: float = 1.0,
                 top_logprobs: int = 20, steps_max_tokens: int = 256):
        self.scoring = scoring
        self.n_samples = n_samples
        self.temperature = temperature
        self.top_logprobs = top_logprobs
        self.steps_max_tokens = steps_max_tokens

    def fit(self, train: Sequence[Sample], aspect: Aspect, *, llm: LLM, task: TaskInfo,
            progress: Progress | None = None, log: EventSink | None = None) -> Judge:
        self._validate_params()
        if progress:
            progress(0, 1, "generating evaluation steps")
        steps = generate_steps(aspect, task, llm=llm, max_tokens=self.steps_max_tokens)
        if log:
            log("steps_generated", {"steps": steps})
        if progress:
            progress(1, 1, "generating evaluation steps")
        scoring = self.scoring
        if scoring == "auto":
            scoring = "logprobs" if llm.supports_logprobs else "sampling"
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state={"steps": steps, "scoring": scoring})

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        return {"fit": 1, "score": n_test}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        aspect, task, p = judge.aspect_record, judge.task_info, judge.params
        scale = judge_scale(aspect)
        use_logprobs = judge.state["scoring"] == "logprobs"
        if use_logprobs:
            params = GenerationParams(max_tokens=6, top_logprobs=p["top_logprobs"])
        else:
            params = GenerationParams(max_tokens=6, temperature=p["temperature"], n=p["n_samples"])
        requests = [Request(({"role": "user", "content": geval_prompt(s, aspect, task, judge.state["steps"])},),
                            params) for s in samples]
        replies = llm.complete_many(requests, progress=(lambda d, t: progress(d, t, "scoring")) if progress else None)
        verdicts = []
        for sample, reply in zip(samples, replies):
            meta: dict = {}
            if use_logprobs:
                positions = reply.logprobs[0] if reply.logprobs else ()
                # with no number chosen, the prompt's closing score cue makes the first position the score's
                score, dist = weighted_score(positions, *scale, first_position=True)
                chose_number = any((p.get("token") or "").strip().isdigit() for p in positions)
                source = "logprobs" if chose_number else "logprobs_first_position"
                if dist is not None:
                    meta = {"source": source, "distribution": {str(k): round(v, 6) for k, v in dist.items()}}
                else:  # no scale token among the alternatives either: read the text instead
                    score = parse_score(reply.text, *scale)
                    meta = {"source": "text" if not math.isnan(score) else "missing"}
                raw = reply.text
            else:
                values = [parse_score(t, *scale) for t in reply.texts]
                score = mean_ignoring_missing(values)
                meta = {"source": "sampling", "samples": [None if math.isnan(v) else v for v in values]}
                raw = "\n---\n".join(reply.texts)
            verdicts.append(Verdict(sample_id=sample.id, aspect=aspect.name,
                                    score=to_aspect_range(score, scale, aspect), raw=raw, metadata=meta))
        return verdicts
