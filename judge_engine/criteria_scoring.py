"""Score samples against many criteria: one call per (sample, criterion), or one per sample.

HypoEval scores each sample with each selected hypothesis, HD-Eval with each
node of its criteria tree; both go through :func:`score_criteria`. The
method supplies its own ``instructions`` (what the judge does with a
criterion); this module adds the fenced sample, the criterion, the scale and
the answer format, sends the calls through the one LLM path (cached, bounded
concurrency) and reads the scores.

Layouts
-------
``paper``
    instructions and criterion first, then the sample (the papers' order).
``sample_first``
    the sample block before the criterion, so a backend with prefix caching
    (llama.cpp, vLLM) evaluates the sample once per sample instead of once
    per criterion. The prompt opens with what every call shares
    (instructions, aspect, the scale written out one point a line), then the
    sample, then only the criterion and the answer cue (``Score:`` when
    scoring first): everything before the criterion is the same for every
    criterion of a sample. The scale written out before the sample is what
    makes a small model's reply start with a number (an answer sentence
    after the criterion invites prose, and a follow-up turn per cell), and
    keeping the sample next to the criterion and cue keeps the scores'
    correlation with humans near the paper layout's (benchmark ``layout``).

How a method scores is one :class:`ScoringSettings` record (layout, joint,
reasoning, reply budget, weighted reading, structured replies), built once
from the method's parameters and handed to :func:`score_criteria`, which
hands it on to :func:`criterion_prompt`.

With ``joint=True`` a single call per sample scores every criterion and the
reply is a JSON object ``{key: score}``.

Structured replies (``structured=True``, the default): every request carries
a JSON schema (:mod:`judge_engine.structured`): ``{"score": N}`` score first
(``reasoning=False``; the digit is then within the reply's first few tokens,
where a probability-weighted reading takes its alternatives),
``{"explanation", "score"}`` reasoning first (``reasoning=True``), and an
object of every criterion's score for ``joint``. The prompts ask for that
JSON. A reply is read with :func:`judge_engine.structured.read_json`; the
free-text parser is only the fallback (a server that ignores schemas), and
each :class:`CriterionScore` says which one read it (``source``).

A reply without a readable score gets one follow-up turn asking for the
score alone; if that fails too the score is missing (NaN), never a default.
:func:`estimate_criteria_calls` counts that turn in its upper bound.

On the embedded SmolLM2-135M, reasoning replies almost never end in a
score; ``reasoning=False, weighted=True`` (score first, probability-weighted
over the scale's tokens from logprobs) with the ``paper`` layout is what
yields usable scores (checked on SummEval: every cell scored). Methods
should expose these as parameters rather than hard-code either choice.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from . import structured as st
from .llm import LLM, Completion, GenerationParams, Request
from .parsing import MIN_FIRST_POSITION_MASS, WeightedReading, parse_json_object, parse_score, read_weighted
from .prompting import TaskInfo, judge_scale, load_template, render_sample
from .records import Aspect, Sample

LAYOUTS = ("paper", "sample_first")
LAYOUT_LABELS = {"paper": "the paper's (faithful)", "sample_first": "sample first (faster with prefix reuse)"}
"""The layouts in words, for forms."""
"""Prompt layouts for per-criterion scoring."""

CRITERION_TEMPLATES = {layout: load_template(f"criterion_{layout}") for layout in LAYOUTS}
JOINT_TEMPLATE = load_template("criterion_joint")
RETRY_TEMPLATE = load_template("criterion_retry")

REASONING_FORMAT = ("Think it through in a few short sentences, then give your score on the {low}-{high} scale "
                    "as the last thing in your reply, written as [[N]].")
SCORE_FIRST_FORMAT = "Rating form: reply with a single whole number from {low} to {high} and nothing else.\nScore:"
SAMPLE_FIRST_SCALE = {False: "Rate on this scale, replying with a single whole number and nothing else:\n{scale}",
                      True: "Rate on this scale:\n{scale}"}
"""The ``sample_first`` layout's answer wording before the criterion (by ``reasoning``)."""
SAMPLE_FIRST_CUE = {False: "Score:", True: REASONING_FORMAT}
"""The ``sample_first`` layout's last line, after the criterion (by ``reasoning``)."""
SCORE_FIRST_JSON_FORMAT = ('Reply with a JSON object of the form {{"score": N}}, where N is a single whole number '
                           'from {low} to {high}, and nothing else.')
REASONING_JSON_FORMAT = ('Reply with a JSON object of the form {{"explanation": "...", "score": N}}: first a few '
                         'short sentences of reasoning, then N, a single whole number from {low} to {high}.')
SAMPLE_FIRST_JSON_SCALE = "Rate on this scale:\n{scale}"
"""The ``sample_first`` layout's wording before the criterion when the reply is JSON."""
RETRY_JSON = ('Your reply did not contain a score I could read. Reply with the JSON object {{"score": N}} only, '
              'N a single whole number from {low} to {high}.')
JOINT_RETRY = "Your reply was not the JSON object I asked for. Reply with that JSON object only."
RETRY_MAX_TOKENS = 8
WEIGHTED_MAX_TOKENS = 8
JSON_SCORE_MAX_TOKENS = 16
"""Reply budget of a score-first JSON reply (``{"score": 4}`` plus spacing): the digit comes within it, so
within the first 16 tokens, where the backends return its top alternatives."""
SOURCES = ("json", "text", "logprobs", "logprobs_first_position", "missing")
"""Where a :class:`CriterionScore` was read (see :attr:`CriterionScore.source`)."""


@dataclass(frozen=True)
class ScoringSettings:
    """How :func:`score_criteria` asks for and reads scores; a method builds one from its parameters.

    Defaults are the papers' (reasoning before the score, the paper layout,
    one call per criterion) with structured replies. See the module
    docstring for what each choice does on a small local model.
    """

    layout: str = "paper"
    """Order of the prompt parts, one of :data:`LAYOUTS` (ignored with ``joint``)."""
    joint: bool = False
    """One call per sample scoring all criteria (JSON reply) instead of one call per criterion."""
    reasoning: bool = True
    """Ask for short reasoning before the score (``True``) or the score first (``False``, short replies)."""
    max_tokens: int = 256
    """Length budget of each reply: the ceiling, since a structured request asks for no more than its schema's
    longest reply needs (:func:`judge_engine.structured.sized_max_tokens`)."""
    weighted: bool = False
    """With ``reasoning=False`` on a backend that returns logprobs: the probability-weighted score over the
    scale's tokens (as G-Eval does) instead of the sampled number, read at the position of the chosen digit.
    Free-text prompts end with a score cue, so when the reply chose no number the first position's
    alternatives count if they hold ``min_mass`` of the probability (flagged:
    ``source="logprobs_first_position"``). The follow-up turn is read the same way."""
    structured: bool = True
    """Ask for JSON (a schema on every request, prompts asking for it) and read it first; ``False`` = the
    free-text prompts and parser only. A backend set to ``structured="off"``
    (:class:`~judge_engine.llm.LLMConfig`) never constrains a reply, so there the free-text prompts (ending
    with the score cue) are used as if ``structured=False``."""
    min_mass: float = MIN_FIRST_POSITION_MASS
    """Least probability the scale's tokens must hold at the first position for a first-position reading
    (:data:`~judge_engine.parsing.MIN_FIRST_POSITION_MASS`)."""

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout={self.layout!r} is not allowed; choose one of {list(LAYOUTS)}")

    def for_backend(self, llm: LLM) -> "ScoringSettings":
        """These settings as ``llm`` can honour them: no structured replies from a backend set to ``off``."""
        off = getattr(getattr(llm, "config", None), "structured", "auto") == "off"
        return replace(self, structured=False) if self.structured and off else self


@dataclass(frozen=True)
class CriterionText:
    """One hypothesis, criterion or tree node as the judge sees it."""

    key: str
    """Stable identifier (used in JSON replies and result dicts)."""
    name: str
    """Short name."""
    definition: str
    """What the criterion asks; may be several sentences (a rubric)."""


@dataclass(frozen=True)
class CriterionScore:
    """The judge's score of one sample on one criterion."""

    score: float
    """On the judge scale (:func:`~judge_engine.prompting.judge_scale`); NaN when missing."""
    raw: str
    """The reply (and the follow-up reply, if one was needed)."""
    explanation: str = ""
    """The reasoning before the score, when the judge was asked to reason."""
    source: str = ""
    """Where the score was read: ``json`` (the structured reply), ``text`` (the free-text fallback parser),
    ``logprobs`` (probability-weighted at the chosen digit), ``logprobs_first_position`` (weighted from the
    first position's alternatives of a reply that chose no number: flagged, see
    :func:`judge_engine.parsing.read_weighted`) or ``missing``."""
    missing_reason: str = ""
    """Why the score is missing ("" when it is not)."""
    follow_up: bool = False
    """True when the score (or its absence) comes from the follow-up turn."""

    @property
    def missing(self) -> bool:
        return math.isnan(self.score)

    @property
    def from_alternatives(self) -> bool:
        """True when the score was read from alternatives of a position where the reply chose no number."""
        return self.source == "logprobs_first_position"


def _json_format(reasoning: bool, scale: tuple[int, int]) -> str:
    return (REASONING_JSON_FORMAT if reasoning else SCORE_FIRST_JSON_FORMAT).format(low=scale[0], high=scale[1])


def _answer_format(reasoning: bool, scale: tuple[int, int], structured: bool = False) -> str:
    if structured:
        return _json_format(reasoning, scale)
    return (REASONING_FORMAT if reasoning else SCORE_FIRST_FORMAT).format(low=scale[0], high=scale[1])


def _sample_first_answer(reasoning: bool, scale: tuple[int, int], structured: bool = False) -> dict[str, str]:
    low, high = scale
    points = "\n".join(f"{k} (worst)" if k == low else f"{k} (best)" if k == high else str(k)
                       for k in range(low, high + 1))
    if structured:
        return {"answer_format": SAMPLE_FIRST_JSON_SCALE.format(scale=points),
                "answer_cue": _json_format(reasoning, scale)}
    return {"answer_format": SAMPLE_FIRST_SCALE[reasoning].format(scale=points),
            "answer_cue": SAMPLE_FIRST_CUE[reasoning].format(low=low, high=high)}


def criterion_schema(aspect: Aspect, *, reasoning: bool) -> dict:
    """The reply schema of one criterion's score: score first, or reasoning before the score."""
    low, high = judge_scale(aspect)
    return st.score_schema(low, high, explanation="before" if reasoning else None)


def joint_schema(criteria: Sequence[CriterionText], aspect: Aspect) -> dict:
    """The reply schema of joint scoring: an object holding every criterion's score (all required)."""
    low, high = judge_scale(aspect)
    return st.object_schema(st.SCORE, {c.key: st.score_value(low, high) for c in criteria})


def criterion_prompt(sample: Sample, criterion: CriterionText, *, instructions: str, aspect: Aspect,
                     task: TaskInfo, settings: ScoringSettings) -> str:
    """The prompt scoring ``sample`` on one criterion in ``settings.layout`` (asking for the JSON of
    :func:`criterion_schema` when ``settings.structured``, reasoning first when ``settings.reasoning``)."""
    scale, reasoning, structured = judge_scale(aspect), settings.reasoning, settings.structured
    answer = (_sample_first_answer(reasoning, scale, structured) if settings.layout == "sample_first"
              else {"answer_format": _answer_format(reasoning, scale, structured)})
    return CRITERION_TEMPLATES[settings.layout].render(
        instructions=instructions, task=task.task, aspect_name=aspect.name,
        aspect_definition=aspect.definition or aspect.name, criterion_name=criterion.name,
        criterion_definition=criterion.definition, sample_block=render_sample(sample, task), **answer)


def joint_prompt(sample: Sample, criteria: Sequence[CriterionText], *, instructions: str, aspect: Aspect,
                 task: TaskInfo) -> str:
    """The prompt scoring ``sample`` on every criterion at once (JSON reply)."""
    low, high = judge_scale(aspect)
    listing = "\n".join(f"- {c.key}: {c.name}. {c.definition}" for c in criteria)
    example = json.dumps({c.key: low for c in criteria[:2]})
    return JOINT_TEMPLATE.render(
        instructions=instructions, task=task.task, aspect_name=aspect.name,
        aspect_definition=aspect.definition or aspect.name, sample_block=render_sample(sample, task),
        output_label_lower=task.output_label.lower(), low=low, high=high, criteria_list=listing, example=example)


def _explanation(text: str) -> str:
    """The reasoning before the final ``[[N]]`` marker."""
    cut = text.rfind("[[")
    return (text[:cut] if cut >= 0 else text).strip()


def _joint_scores(text: str, criteria: Sequence[CriterionText], scale: tuple[int, int]) -> dict[str, float]:
    """The free-text fallback of a joint reply: each criterion's value read on its own (off-scale = NaN)."""
    obj = parse_json_object(text)
    out = {}
    for c in criteria:
        value = obj.get(c.key) if isinstance(obj, dict) else None
        if isinstance(value, dict):  # {"key": {"score": 4, ...}}
            value = value.get("score")
        out[c.key] = parse_score(json.dumps({"score": value}) if value is not None else "", *scale)
    return out


def _weighted(reply, scale: tuple[int, int], *, first_position: bool,
              min_mass: float = MIN_FIRST_POSITION_MASS) -> WeightedReading:
    """Probability-weighted score of a score-first reply, at the position of the chosen digit.

    ``first_position`` (free-text prompts that end with the ``Score:`` cue): when the reply chose no
    number, the scale's tokens among the first position's alternatives, if they hold ``min_mass``.
    A JSON reply starts with ``{``, so there the first position says nothing about the score.
    """
    if not reply.logprobs:
        return WeightedReading(math.nan, None, "none")
    return read_weighted(reply.logprobs[0], *scale, first_position=first_position,
                         min_first_position_mass=min_mass)


def _read_one(reply, scale: tuple[int, int], *, schema: dict | None, use_logprobs: bool, reasoning: bool,
              min_mass: float, follow_up: bool, explanation: str = "") -> CriterionScore:
    """One criterion's score from one reply: weighted (if asked), else the JSON, else the free-text fallback."""
    reason = ""
    if use_logprobs:
        reading = _weighted(reply, scale, first_position=schema is None, min_mass=min_mass)
        if math.isfinite(reading.score):
            return CriterionScore(reading.score, reply.text, explanation, reading.source, "", follow_up)
        reason = reading.missing_reason
    if schema is not None:
        got = st.read_json(reply.text, schema)
        if got.ok:
            why = str(got.value.get("explanation", "")).strip() if reasoning else ""
            return CriterionScore(float(got.value["score"]), reply.text, why or explanation, "json", "", follow_up)
        reason = reason or f"reply not read as JSON ({got.error})"
    score = parse_score(reply.text, *scale)
    if math.isfinite(score):
        return CriterionScore(score, reply.text, _explanation(reply.text) if reasoning else explanation, "text",
                          "", follow_up)
    return CriterionScore(math.nan, reply.text, explanation, "missing",
                          reason or "no score on the scale in the reply", follow_up)


def score_criteria(samples: Sequence[Sample], criteria: Sequence[CriterionText], *, instructions: str,
                   aspect: Aspect, task: TaskInfo, llm: LLM, settings: ScoringSettings,
                   progress: Callable[[int, int], None] | None = None) -> list[dict[str, CriterionScore]]:
    """Score every sample on every criterion; one dict per sample keyed by ``CriterionText.key``.

    Parameters
    ----------
    instructions : str
        The method's own wording of what the judge does with a criterion.
    settings : ScoringSettings
        Layout, joint or per-criterion calls, reasoning or score first,
        reply budget, weighted reading and structured replies.
    progress : callable, optional
        ``progress(done, total)`` as the first replies come in.

    Returns
    -------
    list of dict
        Per sample, criterion key -> :class:`CriterionScore` (NaN where the
        reply and its one follow-up gave no score), each saying where it was read.
    """
    return score_criteria_jobs([CriteriaJob(samples, criteria, instructions, aspect)], task=task, llm=llm,
                               settings=settings, progress=progress)[0]


@dataclass(frozen=True)
class CriteriaJob:
    """What one :func:`score_criteria` call scores: samples on criteria under one set of instructions."""

    samples: Sequence[Sample]
    criteria: Sequence[CriterionText]
    instructions: str
    """The method's own wording of what the judge does with a criterion."""
    aspect: Aspect
    """The aspect the prompts name (HD-Eval: the criteria's parent) and whose scale they use."""


def score_criteria_jobs(jobs: Sequence[CriteriaJob], *, task: TaskInfo, llm: LLM, settings: ScoringSettings,
                        progress: Callable[[int, int], None] | None = None) -> list[list[dict[str, CriterionScore]]]:
    """:func:`score_criteria` of every job, their calls sent together: the first turns of all jobs in one
    ``complete_many`` batch, then the follow-ups of all of them in another (HD-Eval's parent groups of a layer
    do not depend on each other; one after the other, each group's last calls left the window half empty).
    Each job gets the same requests, replies and scores as :func:`score_criteria` alone would give it."""
    settings = settings.for_backend(llm)
    plans = [_Plan.of(job, task=task, llm=llm, settings=settings) for job in jobs]
    first = [r for p in plans for r in p.requests]
    replies = llm.complete_many(first, progress=progress) if first else []
    at, follow = 0, []
    for p in plans:
        follow.append(p.read_first(replies[at:at + len(p.requests)]))
        at += len(p.requests)
    second = llm.complete_many([r for f in follow for r in f]) if any(follow) else []
    at = 0
    for p, f in zip(plans, follow):
        p.read_second(second[at:at + len(f)])
        at += len(f)
    return [p.results for p in plans]


@dataclass
class _Plan:
    """One job's requests and, as replies come in, its scores and follow-up turns."""

    job: CriteriaJob
    scale: tuple[int, int]
    settings: ScoringSettings
    use_logprobs: bool
    schema: dict | None
    max_tokens: int
    cells: list[tuple[int, CriterionText | None]]
    requests: list[Request]
    results: list[dict[str, CriterionScore]]
    retry: list[tuple[int, str, Request, str]]
    """(sample index, criterion key, request, first reply) of each cell without a score after the first turn."""

    @classmethod
    def of(cls, job: CriteriaJob, *, task: TaskInfo, llm: LLM, settings: ScoringSettings) -> "_Plan":
        samples, criteria, aspect = job.samples, job.criteria, job.aspect
        keys = [c.key for c in criteria]
        if len(set(keys)) != len(keys):
            raise ValueError("criteria keys must be unique")
        scale = judge_scale(aspect)
        joint, reasoning, max_tokens, structured = (settings.joint, settings.reasoning, settings.max_tokens,
                                                    settings.structured)
        use_logprobs = settings.weighted and not reasoning and not joint and llm.supports_logprobs
        schema = (joint_schema(criteria, aspect) if joint else criterion_schema(aspect, reasoning=reasoning)) \
            if structured and samples and criteria else None
        json_param = st.as_param(schema)
        # a weighted score is read at the digit; the text only backs it up, so a short reply suffices
        # (a JSON reply needs a few more tokens than a bare digit to reach and close its score)
        # A structured score-first reply gets exactly the JSON budget, whatever a smaller max_tokens says: a bare
        # digit's budget of 4 cut {"score": N} before its digit, so every cell went to the follow-up turn.
        weighted_budget = JSON_SCORE_MAX_TOKENS if structured else min(max_tokens, WEIGHTED_MAX_TOKENS)
        # max_tokens is the ceiling; a structured reply asks for no more than its schema's longest reply needs
        max_tokens = st.sized_max_tokens(max_tokens, schema)
        params = (GenerationParams(max_tokens=weighted_budget, top_logprobs=20, json_schema=json_param)
                  if use_logprobs else GenerationParams(max_tokens=max_tokens, json_schema=json_param))
        cells: list[tuple[int, CriterionText | None]] = []
        prompts: list[str] = []
        if not samples or not criteria:
            pass
        elif joint:
            cells = [(i, None) for i in range(len(samples))]
            prompts = [joint_prompt(s, criteria, instructions=job.instructions, aspect=aspect, task=task)
                       for s in samples]
        else:
            cells = [(i, c) for i in range(len(samples)) for c in criteria]
            prompts = [criterion_prompt(samples[i], c, instructions=job.instructions, aspect=aspect, task=task,
                                        settings=settings) for i, c in cells]
        requests = [Request(({"role": "user", "content": p},), params) for p in prompts]
        return cls(job, scale, settings, use_logprobs, schema, max_tokens, cells, requests,
                   [{} for _ in samples], [])

    def read_first(self, replies: Sequence[Completion]) -> list[Request]:
        """Read the first turn's replies; returns the follow-up turns of the cells that gave no score."""
        criteria, scale, schema = self.job.criteria, self.scale, self.schema
        for (i, criterion), request, reply in zip(self.cells, self.requests, replies):
            if criterion is None:  # joint
                self.results[i].update(_read_joint(reply.text, criteria, scale, schema, follow_up=False))
                if any(r.missing for r in self.results[i].values()):
                    self.retry.append((i, "", request, reply.text))
                continue
            read = _read_one(reply, scale, schema=schema, use_logprobs=self.use_logprobs,
                             reasoning=self.settings.reasoning, min_mass=self.settings.min_mass, follow_up=False)
            self.results[i][criterion.key] = read
            if read.missing:
                self.retry.append((i, criterion.key, request, reply.text))
        if not self.retry:
            return []
        # the follow-up asks for the score alone (score first), whatever the first turn asked
        structured = self.settings.structured
        retry_schema = criterion_schema(self.job.aspect, reasoning=False) if structured else None
        retry_budget = JSON_SCORE_MAX_TOKENS if structured else RETRY_MAX_TOKENS
        follow_ups = []
        for _i, key, request, first in self.retry:
            if key:
                ask = (RETRY_JSON.format(low=scale[0], high=scale[1]) if structured
                       else RETRY_TEMPLATE.render(low=scale[0], high=scale[1]))
                fparams = GenerationParams(max_tokens=retry_budget, top_logprobs=20 if self.use_logprobs else 0,
                                           json_schema=st.as_param(retry_schema))
            else:
                ask = JOINT_RETRY
                fparams = GenerationParams(max_tokens=self.max_tokens, json_schema=st.as_param(schema))
            follow_ups.append(Request((*request.messages, {"role": "assistant", "content": first},
                                       {"role": "user", "content": ask}), fparams))
        return follow_ups

    def read_second(self, replies: Sequence[Completion]) -> None:
        """Read the follow-up turns' replies into the cells that asked them."""
        criteria, scale = self.job.criteria, self.scale
        retry_schema = criterion_schema(self.job.aspect, reasoning=False) if self.settings.structured else None
        for (i, key, _, first), reply in zip(self.retry, replies):
            raw = f"{first}\n--- follow-up ---\n{reply.text}"
            if key:
                old = self.results[i][key]
                read = _read_one(reply, scale, schema=retry_schema, use_logprobs=self.use_logprobs, reasoning=False,
                                 min_mass=self.settings.min_mass, follow_up=True, explanation=old.explanation)
                self.results[i][key] = CriterionScore(read.score, raw, read.explanation, read.source,
                                                      read.missing_reason, True)
            else:
                again = _read_joint(reply.text, criteria, scale, self.schema, follow_up=True)
                for k, old in self.results[i].items():
                    if old.missing:
                        new = again[k]
                        self.results[i][k] = CriterionScore(new.score, raw, "", new.source, new.missing_reason, True)


def _read_joint(text: str, criteria: Sequence[CriterionText], scale: tuple[int, int], schema: dict | None, *,
                follow_up: bool) -> dict[str, CriterionScore]:
    """Every criterion's score from a joint reply: the JSON object, else each value read on its own."""
    if schema is not None:
        got = st.read_json(text, schema)
        if got.ok:
            return {c.key: CriterionScore(float(got.value[c.key]), text, "", "json", "", follow_up) for c in criteria}
    fallback = _joint_scores(text, criteria, scale)
    return {k: CriterionScore(v, text, "", "text", "", follow_up) if math.isfinite(v) else
            CriterionScore(v, text, "", "missing", f"no score on the scale for {k!r} in the reply", follow_up)
            for k, v in fallback.items()}


def estimate_criteria_calls(n_samples: int, n_criteria: int, *, joint: bool = False,
                            follow_ups: bool = False) -> int:
    """Calls :func:`score_criteria` makes before cache hits.

    ``follow_ups=True`` gives the upper bound: every first reply unreadable,
    so each call is followed by its one follow-up turn (twice the calls).
    """
    first = n_samples if joint else n_samples * n_criteria
    return 2 * first if follow_ups else first


def source_counts(scores: Sequence[CriterionScore]) -> dict[str, int]:
    """How many scores each :data:`SOURCES` value read (zeros left out)."""
    counts: dict[str, int] = {}
    for s in scores:
        key = s.source or ("missing" if s.missing else "text")
        counts[key] = counts.get(key, 0) + 1
    return counts
