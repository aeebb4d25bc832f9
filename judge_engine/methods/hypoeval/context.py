"""What every stage of one fit shares: the LLM, the aspect and task, the settings, the event sink, the counters."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from ... import structured as st
from ...criteria_scoring import ScoringSettings
from ...llm import LLM, GenerationParams, Request
from ...prompting import TaskInfo, judge_scale
from ...records import Aspect, Sample
from ..base import EventSink, judge_warning
from .replies import READ_SOURCES
from .reward import default_reward_b
from .settings import HypoEvalSettings

FORM_INSTRUCTIONS = {
    "paper": ("Write them as {n} different hypotheses of one to three sentences each, saying what earns the "
              "{output} a higher {aspect} score and what earns it a lower one; you may name score ranges."),
    "sentence": ("Write them as {n} different sentences, each saying one concrete thing that a good {output} does "
                 "for {aspect} and a poor one does not. Start each sentence with \"{opener}\"."),
}
"""What a generation or refinement prompt asks each hypothesis to look like, by form
(:data:`judge_engine.methods.base.CRITERIA_FORMS`). The output's label is never made plural or given "a"/"an":
"summarys" and "a utterance" were what a capable model read; "the {output}" and "a good {output}" hold for any
label a dataset or a person gives."""
SECOND_DRAW_TEMPERATURE = 0.7
"""Temperature of the second, sampled draw of a generation or refinement call whose first reply left fewer
usable hypotheses than asked (see :func:`_ask_for_hypotheses`): greedy decoding of the same prompt would give the
same sentences again, a sampled draw gives new ones."""


@dataclass
class Context:
    """What every stage needs: the LLM, the aspect and task, the settings, the event sink and a call counter."""

    llm: LLM
    aspect: Aspect
    task: TaskInfo
    settings: HypoEvalSettings
    log: EventSink
    progress: Callable[[str], None]
    """Called after each batch of calls with the stage name (the counter below is the progress)."""
    form: str = "sentence"
    """How hypotheses are asked for: ``paper`` or ``sentence`` (resolved, see
    :func:`judge_engine.methods.base.resolve_criteria_form`)."""
    calls: int = 0
    total: int = 1
    failures: int = 0
    replies: dict[str, int] | None = None
    """Generation and repetition-check replies by how they were read (:data:`READ_SOURCES`)."""
    score_sources: dict[str, int] | None = None
    """Per-hypothesis training scores by where they were read (``CriterionScore.source``)."""
    warnings: list[dict[str, Any]] | None = None
    """Fit-time warnings (:func:`~judge_engine.methods.base.judge_warning`) for ``Judge.state``."""
    rejected: list[dict[str, Any]] | None = None
    """Generated hypotheses the rubric checks refused, with the rule and reason (:mod:`judge_engine.rubric_checks`)."""
    flagged: list[dict[str, Any]] | None = None
    """Generated hypotheses used with rubric-check flags (shown beside them, counted in the run summary)."""
    unread_reasons: list[str] | None = None
    """Why each generation reply that gave no hypothesis gave none (:func:`why_unread`)."""
    scoring: ScoringSettings | None = None
    """How training samples are scored under each hypothesis: the judge's settings (:attr:`HypoEvalSettings.scoring`),
    one call per hypothesis (the rewards are per hypothesis)."""

    def __post_init__(self) -> None:
        if self.scoring is None:
            self.scoring = replace(self.settings.scoring, joint=False)
        self.replies = {k: 0 for k in READ_SOURCES} if self.replies is None else self.replies
        self.score_sources = {} if self.score_sources is None else self.score_sources
        self.warnings = [] if self.warnings is None else self.warnings
        self.rejected = [] if self.rejected is None else self.rejected
        self.flagged = [] if self.flagged is None else self.flagged
        self.unread_reasons = [] if self.unread_reasons is None else self.unread_reasons

    def warn(self, code: str, message: str, count: int | None = None) -> None:
        """Record a fit-time warning in the judge's state and as an event (the run keeps it even if fit fails)."""
        warning = judge_warning(code, message, count)
        self.warnings.append(warning)
        self.emit("warning", warning)

    def count_reply(self, stage: str, source: str) -> None:
        self.replies[source] += 1
        self.emit("reply_read", {"stage": stage, "source": source})

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.log(kind, payload)

    @property
    def scale(self) -> tuple[int, int]:
        return judge_scale(self.aspect)

    def human(self, sample: Sample) -> float:
        """The human score on the judge scale (the reward and theta are in judge-scale units)."""
        s = sample.human.get(self.aspect.name, math.nan)
        lo, hi = self.scale
        if (lo, hi) == (self.aspect.low, self.aspect.high) or self.aspect.high == self.aspect.low:
            return float(s)
        return lo + (float(s) - self.aspect.low) * (hi - lo) / (self.aspect.high - self.aspect.low)

    @property
    def opener(self) -> str:
        """How each generated hypothesis starts in the sentence form (:attr:`TaskInfo.statement_opener`); ""
        in the paper's form."""
        return self.task.statement_opener if self.form == "sentence" else ""

    def generation_fields(self, n: int) -> dict[str, Any]:
        """:meth:`common_fields` without the scale, with the form's instruction: the scoring prompt gives the
        scale; in a generation prompt a small model takes the numbers for the subject."""
        fields = self.common_fields()
        fields.pop("low"), fields.pop("high")
        instruction = FORM_INSTRUCTIONS[self.form].format(n=n, output=fields["output_label_lower"],
                                                          aspect=fields["aspect_name"], opener=self.opener)
        return {**fields, "form_instruction": instruction}

    def common_fields(self) -> dict[str, Any]:
        lo, hi = self.scale
        return {"aspect_name": self.aspect.name, "aspect_definition": self.aspect.definition or self.aspect.name,
                "task": self.task.task, "output_label_lower": self.task.output_label.lower(), "low": lo, "high": hi}

    @property
    def reward_b(self) -> float:
        """b of the reward: as given, or 1/(high - low)^2 on the judge scale (see :func:`exploitation`)."""
        if self.settings.reward_b is not None:
            return float(self.settings.reward_b)
        return default_reward_b(self.scale)

    def generation_params(self, schema: dict[str, Any] | None = None, draw: int = 0) -> GenerationParams:
        """Generation and refinement: the reply limit, the schema, and the rubric presence penalty
        (:data:`judge_engine.structured.RUBRIC_PRESENCE_PENALTY`: without it a small model repeats its first
        item); greedy for the first draw, :data:`SECOND_DRAW_TEMPERATURE` with ``sample_index=draw`` after.
        ``generation_max_tokens`` is the ceiling: no more is asked than the schema's longest reply
        (:func:`judge_engine.structured.sized_max_tokens`)."""
        params = GenerationParams(max_tokens=st.sized_max_tokens(self.settings.generation_max_tokens, schema),
                                  json_schema=st.as_param(schema), presence_penalty=st.RUBRIC_PRESENCE_PENALTY)
        return params.with_(temperature=SECOND_DRAW_TEMPERATURE, sample_index=draw) if draw else params

    def ask(self, prompts: Sequence[str], stage: str, max_tokens: int | None = None,
            schema: dict[str, Any] | None = None, draw: int = 0) -> list[str]:
        params = (self.generation_params(schema, draw) if max_tokens is None
                  else GenerationParams(max_tokens=st.sized_max_tokens(max_tokens, schema),
                                        json_schema=st.as_param(schema)))
        replies = self.llm.complete_many([Request(({"role": "user", "content": p},), params) for p in prompts])
        self.calls += len(prompts)
        self.progress(stage)
        return [r.text for r in replies]
