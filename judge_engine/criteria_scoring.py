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
    criterion of a sample. On SmolLM2-135M the written-out scale is what
    makes the reply start with a number (with the paper's answer sentence
    after the criterion it replied in prose, "The summary ...", and every
    cell needed a follow-up turn), and keeping the sample next to the
    criterion and cue kept its scores' correlation with humans near the
    paper layout's (benchmark ``layout``).

With ``joint=True`` a single call per sample scores every criterion and the
reply is a JSON object ``{key: score}``.

A reply without a readable score gets one follow-up turn asking for the
score alone; if that fails too the score is missing (NaN), never a default.

Structured replies
------------------
With ``structured=True`` every request carries a JSON schema
(:mod:`judge_engine.structured`): ``{"explanation": ..., "score": N}`` when
the judge reasons first, ``{"score": N}`` when it scores first (so the
digit comes within the first few tokens, where its logprobs are returned),
and ``{key: N, ...}`` with ``joint``. The prompt then asks for that JSON.
The reply is read with :func:`judge_engine.structured.read_json`; the
free-text parser is only the fallback. Each :class:`CriterionScore` says
where its score was read (``source``). ``structured=False`` (the default,
for callers that have not moved yet) sends today's free-text prompts.

On the embedded SmolLM2-135M, reasoning replies almost never end in a
score; ``reasoning=False, weighted=True`` (score first, probability-weighted
over the scale's tokens from logprobs) with the ``paper`` layout is what
yields usable scores (checked on SummEval: every cell scored). Methods
should expose these as parameters rather than hard-code either choice.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from . import structured as st
from .llm import LLM, GenerationParams, Request
from .parsing import parse_json_object, parse_score, read_weighted
from .prompting import TaskInfo, judge_scale, load_template, render_sample
from .records import Aspect, Sample

LAYOUTS = ("paper", "sample_first")
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
RETRY_MAX_TOKENS = 8
WEIGHTED_MAX_TOKENS = 8
STRUCTURED_SHORT_TOKENS = 16
"""Reply budget of a score-only JSON reply (``{"score": N}`` is about 6 tokens; logprobs cover the first 16)."""

STRUCTURED_FORMAT = {
    True: ('Reply with one JSON object and nothing else: first "explanation", a few short sentences of reasoning, '
           'then "score", your score as a whole number from {low} to {high}. '
           'Example: {{"explanation": "...", "score": {low}}}'),
    False: ('Reply with one JSON object and nothing else, holding only "score", your score as a whole number from '
            '{low} to {high}. Example: {{"score": {low}}}')}
"""The answer wording of structured requests (by ``reasoning``): it describes the schema sent with them."""
STRUCTURED_RETRY = ('Your reply did not contain a score I could read. Reply with the JSON object {{"score": N}} '
                    'only, N a whole number from {low} to {high}.')


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
    """Where the score was read: ``json`` (a reply satisfying the schema), ``text`` (the free-text fallback),
    ``logprobs`` (probability-weighted at the digit's position), ``logprobs_first_position`` (from the first
    position's alternatives of a reply that chose no number), ``missing``."""

    @property
    def missing(self) -> bool:
        return math.isnan(self.score)


def _answer_format(reasoning: bool, scale: tuple[int, int], structured: bool = False) -> str:
    template = STRUCTURED_FORMAT[reasoning] if structured else REASONING_FORMAT if reasoning else SCORE_FIRST_FORMAT
    return template.format(low=scale[0], high=scale[1])


def _sample_first_answer(reasoning: bool, scale: tuple[int, int], structured: bool = False) -> dict[str, str]:
    low, high = scale
    points = "\n".join(f"{k} (worst)" if k == low else f"{k} (best)" if k == high else str(k)
                       for k in range(low, high + 1))
    cue = STRUCTURED_FORMAT[reasoning] if structured else SAMPLE_FIRST_CUE[reasoning]
    return {"answer_format": SAMPLE_FIRST_SCALE[reasoning or structured].format(scale=points),
            "answer_cue": cue.format(low=low, high=high)}


def score_request_schema(scale: tuple[int, int], *, reasoning: bool) -> dict:
    """The schema of one per-criterion score: reasoning first, or the score alone (its digit early)."""
    return st.score_schema(scale[0], scale[1], explanation="before" if reasoning else None)


def joint_request_schema(criteria: Sequence[CriterionText], scale: tuple[int, int]) -> dict:
    """The schema of a joint reply: one score per criterion key (titled SCORE: it is a score reply)."""
    return st.object_schema(st.SCORE, {c.key: st.score_value(*scale) for c in criteria})


def criterion_prompt(sample: Sample, criterion: CriterionText, *, instructions: str, aspect: Aspect,
                     task: TaskInfo, layout: str = "paper", reasoning: bool = True, structured: bool = False) -> str:
    """The prompt scoring ``sample`` on one criterion (``structured``: it asks for the JSON of the schema)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r} is not allowed; choose one of {list(LAYOUTS)}")
    scale = judge_scale(aspect)
    answer = (_sample_first_answer(reasoning, scale, structured) if layout == "sample_first"
              else {"answer_format": _answer_format(reasoning, scale, structured)})
    return CRITERION_TEMPLATES[layout].render(
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
    obj = parse_json_object(text)
    out = {}
    for c in criteria:
        value = obj.get(c.key) if isinstance(obj, dict) else None
        if isinstance(value, dict):  # {"key": {"score": 4, ...}}
            value = value.get("score")
        out[c.key] = parse_score(json.dumps({"score": value}) if value is not None else "", *scale)
    return out


def _weighted(reply, scale: tuple[int, int], first_position: bool = True) -> tuple[float, str]:
    """Probability-weighted score of a score-first reply and where it was read.

    The free-text prompt ends with the score cue, so the first position
    counts when no number was chosen (``first_position``); a structured reply
    starts with ``{``, so only the position of the chosen digit counts there
    (see :func:`~judge_engine.parsing.read_weighted`).
    """
    if not reply.logprobs:
        return math.nan, "missing"
    reading = read_weighted(reply.logprobs[0], *scale, first_position=first_position)
    return reading.score, reading.source if not math.isnan(reading.score) else "missing"


def _structured_score(text: str, schema: dict, *, reasoning: bool) -> tuple[float, str] | None:
    """``(score, explanation)`` of a reply satisfying ``schema``; None when it does not."""
    reading = st.read_json(text, schema)
    if not reading.ok:
        return None
    return float(reading.value["score"]), str(reading.value.get("explanation", "")) if reasoning else ""


def score_criteria(samples: Sequence[Sample], criteria: Sequence[CriterionText], *, instructions: str,
                   aspect: Aspect, task: TaskInfo, llm: LLM, layout: str = "paper", joint: bool = False,
                   reasoning: bool = True, max_tokens: int = 256, weighted: bool = False, structured: bool = False,
                   progress: Callable[[int, int], None] | None = None) -> list[dict[str, CriterionScore]]:
    """Score every sample on every criterion; one dict per sample keyed by ``CriterionText.key``.

    Parameters
    ----------
    instructions : str
        The method's own wording of what the judge does with a criterion.
    layout : {"paper", "sample_first"}
        Order of the prompt parts (ignored with ``joint``).
    joint : bool
        One call per sample scoring all criteria (JSON reply) instead of one
        call per criterion.
    reasoning : bool
        Ask for short reasoning before the score (``True``) or the score
        first (``False``, short replies).
    max_tokens : int
        Length budget of each reply.
    weighted : bool
        With ``reasoning=False`` on a backend that returns logprobs: the
        probability-weighted score over the scale's tokens (as G-Eval does)
        instead of the sampled number; when the reply chose no number, the
        scale's tokens among the first position's alternatives (the score
        cue ends the prompt; free-text prompts only). The follow-up turn is
        read the same way.
    structured : bool
        Send each request with its JSON schema and ask for that JSON (see
        the module notes); the free-text parser is the fallback.
    """
    keys = [c.key for c in criteria]
    if len(set(keys)) != len(keys):
        raise ValueError("criteria keys must be unique")
    if not samples or not criteria:
        return [{} for _ in samples]
    scale = judge_scale(aspect)
    use_logprobs = weighted and not reasoning and not joint and llm.supports_logprobs
    schema = (joint_request_schema(criteria, scale) if joint else score_request_schema(scale, reasoning=reasoning)) \
        if structured else None
    retry_schema = score_request_schema(scale, reasoning=False) if structured else None
    schema_param = st.as_param(schema)
    # a weighted score is read from the score's token; the text only backs it up, so a few tokens suffice
    short = STRUCTURED_SHORT_TOKENS if structured else WEIGHTED_MAX_TOKENS
    params = (GenerationParams(max_tokens=min(max_tokens, short), top_logprobs=20, json_schema=schema_param)
              if use_logprobs else GenerationParams(max_tokens=max_tokens, json_schema=schema_param))
    if joint:
        cells = [(i, None) for i in range(len(samples))]
        prompts = [joint_prompt(s, criteria, instructions=instructions, aspect=aspect, task=task) for s in samples]
    else:
        cells = [(i, c) for i in range(len(samples)) for c in criteria]
        prompts = [criterion_prompt(samples[i], c, instructions=instructions, aspect=aspect, task=task,
                                    layout=layout, reasoning=reasoning, structured=structured) for i, c in cells]
    requests = [Request(({"role": "user", "content": p},), params) for p in prompts]
    replies = llm.complete_many(requests, progress=progress)
    text_source = "text"

    def read_one(reply, schema_: dict | None, reasoning_: bool) -> tuple[float, str, str | None]:
        """(score, source, explanation read from JSON or None) of a per-criterion reply."""
        score, source = _weighted(reply, scale, first_position=not structured) if use_logprobs \
            else (math.nan, "missing")
        found = _structured_score(reply.text, schema_, reasoning=reasoning_) if schema_ else None
        if math.isnan(score) and found is not None:
            score, source = found[0], "json"
        if math.isnan(score):
            score = parse_score(reply.text, *scale)
            source = "missing" if math.isnan(score) else text_source
        return score, source, found[1] if found else None

    results: list[dict[str, CriterionScore]] = [{} for _ in samples]
    retry: list[tuple[int, str, Request, str]] = []  # (sample index, criterion key, request, first reply)
    for (i, criterion), request, reply in zip(cells, requests, replies):
        if joint:
            found = st.read_json(reply.text, schema) if schema else None
            if found is not None and found.ok:
                scores, source = {k: float(v) for k, v in found.value.items()}, "json"
            else:
                scores, source = _joint_scores(reply.text, criteria, scale), text_source
            for key, score in scores.items():
                results[i][key] = CriterionScore(score, reply.text, source="missing" if math.isnan(score) else source)
            if any(math.isnan(s) for s in scores.values()):
                retry.append((i, "", request, reply.text))
            continue
        score, source, explanation = read_one(reply, schema, reasoning)
        if explanation is None:
            explanation = _explanation(reply.text) if reasoning else ""
        results[i][criterion.key] = CriterionScore(score, reply.text, explanation, source)
        if math.isnan(score):
            retry.append((i, criterion.key, request, reply.text))

    if retry:
        follow_ups = []
        for i, key, request, first in retry:
            if key:
                ask = (STRUCTURED_RETRY.format(low=scale[0], high=scale[1]) if structured
                       else RETRY_TEMPLATE.render(low=scale[0], high=scale[1]))
            else:
                ask = "Your reply was not the JSON object I asked for. Reply with that JSON object only."
            follow_schema = st.as_param(retry_schema if key else schema)
            follow_ups.append(Request((*request.messages, {"role": "assistant", "content": first},
                                       {"role": "user", "content": ask}),
                                      GenerationParams(max_tokens=(STRUCTURED_SHORT_TOKENS if structured
                                                                   else RETRY_MAX_TOKENS) if key else max_tokens,
                                                       top_logprobs=20 if use_logprobs and key else 0,
                                                       json_schema=follow_schema)))
        second = llm.complete_many(follow_ups)
        for (i, key, _, first), reply in zip(retry, second):
            raw = f"{first}\n--- follow-up ---\n{reply.text}"
            if key:
                old = results[i][key]
                score, source, _ = read_one(reply, retry_schema, False)
                results[i][key] = CriterionScore(score, raw, old.explanation, source)
            else:
                found = st.read_json(reply.text, schema) if schema else None
                if found is not None and found.ok:
                    again, source = {k: float(v) for k, v in found.value.items()}, "json"
                else:
                    again, source = _joint_scores(reply.text, criteria, scale), text_source
                for k, old in results[i].items():
                    if old.missing:
                        results[i][k] = CriterionScore(again[k], raw,
                                                       source="missing" if math.isnan(again[k]) else source)
    return results


def estimate_criteria_calls(n_samples: int, n_criteria: int, *, joint: bool = False) -> int:
    """Calls :func:`score_criteria` makes before cache hits and follow-ups."""
    return n_samples if joint else n_samples * n_criteria
