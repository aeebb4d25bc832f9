"""Direct scoring: the baseline every paper compares against.

One prompt per sample with the aspect's definition, a whole-number answer on
the aspect's scale, greedy decoding. Nothing is learned from the training
samples; ``fit`` only fixes the prompt. The reply is asked for as JSON
(``{"score": N}``, the scale's integers only); a server that cannot constrain
its reply is read by the free-text fallback.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from ..llm import LLM, GenerationParams, Request
from ..structured import as_param, read_score, score_schema
from ..prompting import TaskInfo, judge_scale, load_template, render_sample, to_aspect_range
from ..records import Aspect, Sample, Verdict
from .base import FitContext, Interval, Judge, Method, Progress, register

DIRECT_TEMPLATE = load_template("direct_score")


def direct_prompt(sample: Sample, aspect: Aspect, task: TaskInfo) -> str:
    low, high = judge_scale(aspect)
    return DIRECT_TEMPLATE.render(
        task=task.task, output_label_lower=task.output_label.lower(), aspect_name=aspect.name,
        aspect_definition=aspect.definition or aspect.name, low=low, high=high,
        sample_block=render_sample(sample, task))


@register
class DirectScoring(Method):
    """Ask the LLM for a 1-N score directly.

    Parameters
    ----------
    temperature : float, default=0.0
        Greedy decoding, as the baselines in the four papers.
    max_tokens : int, default=32
        The answer is a short ``{"score": N}``.
    """

    name = "direct"
    title = "Direct scoring"
    _parameter_constraints = {"temperature": Interval(float, 0, 2), "max_tokens": Interval(int, 1, 4096)}

    _parameter_labels = {"temperature": "Sampling temperature", "max_tokens": "Reply length limit (tokens)"}
    quick_params: ClassVar[dict[str, Any]] = {}
    def __init__(self, *, temperature: float = 0.0, max_tokens: int = 32):
        self.temperature = temperature
        self.max_tokens = max_tokens

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        self._validate_params()
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=context.task.to_dict(),
                     state={"template": DIRECT_TEMPLATE.text})

    def estimate_calls(self, n_train: int, n_test: int, *, backend: str | None = None) -> dict[str, int]:
        return {"fit": 0, "score": n_test}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        aspect, task = judge.aspect_record, judge.task_info
        scale = judge_scale(aspect)
        schema = score_schema(*scale)
        params = GenerationParams(temperature=judge.params["temperature"], max_tokens=judge.params["max_tokens"],
                                  json_schema=as_param(schema))
        requests = [Request(({"role": "user", "content": direct_prompt(s, aspect, task)},), params) for s in samples]
        replies = llm.complete_many(requests, progress=(lambda d, t: progress(d, t, "scoring")) if progress else None)
        verdicts = []
        for sample, reply in zip(samples, replies):
            reading = read_score(reply.text, *scale, schema=schema)
            meta = {"source": reading.source, **({"missing_reason": reading.reason} if reading.reason else {})}
            verdicts.append(Verdict(sample_id=sample.id, aspect=aspect.name,
                                    score=to_aspect_range(reading.score, scale, aspect), raw=reply.text, metadata=meta))
        return verdicts
