"""HPSS's r(𝒯) judging step: one strategy's judge calls on the validation items, and several strategies' at once.

:func:`evaluate_strategy` judges samples with one strategy (§4.1: greedy, one generation each) and reads the
ratings (:func:`read_rating`, with a follow-up turn for a reply without one). :func:`evaluate_strategies`
does the same for strategies that do not depend on each other, such as the 21 of the initialisation
(Algorithm 1): their auxiliaries are made strategy by strategy as before, then every judge call of every
strategy goes out in one ``complete_many`` batch, and every follow-up turn in another. The requests and the
readings are those of one strategy after another; only the waves are fewer (issue 46). Moved here from
:mod:`judge_engine.methods.hpss.method`, which re-exports these names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ... import structured
from ...llm import LLM, GenerationParams, Request
from ...parsing import parse_score, read_weighted
from ...prompting import load_template, to_aspect_range
from ...records import Sample
from .auxiliaries import Auxiliaries, complete_all
from .strategy import Strategy, build_prompt, follow_up_schema, rating_range, rating_schema

SYSTEM_MESSAGE = "You are a helpful assistant."
"""System turn of every judge call (the authors' code; the paper shows none)."""
RETRY_TEMPLATE = load_template("hpss_retry")
"""Follow-up turn for a reply with no readable rating (ours, not the paper's)."""
RETRY_MAX_TOKENS = 16
"""Room for ``{"score": N}`` with a grammar's optional spaces (about 7 tokens); the digit stays within
the positions whose alternatives are returned (:data:`judge_engine.llm.base.LOGPROB_POSITIONS`)."""


@dataclass(frozen=True)
class StrategyScores:
    """One strategy's judgments of a list of samples."""

    scores: tuple[float, ...]
    """On the aspect's human range; NaN = missing."""
    raw: tuple[str, ...]
    judge_scores: tuple[float, ...]
    """As read, on the strategy's own scale."""
    prompts: tuple[str | None, ...]
    missing_aux: int
    """Samples left unscored because an auxiliary they needed is missing."""
    unparsed: int
    """Replies with no rating on the scale (or rejected by the backend)."""
    retried: int = 0
    """Replies that needed the follow-up turn (``retry_unparsed``)."""
    sources: tuple[str, ...] = ()
    """Per sample, where its rating was read: ``json`` (the structured reply), ``text`` (the free-text
    fallback), ``logprobs`` / ``logprobs_first_position`` (probability-weighted, follow-up turn only;
    the latter from the alternatives of a reply that chose no number) or ``missing``."""
    reasons: tuple[str, ...] = ()
    """Per sample, why it has no rating ("" when it has one)."""
    followed_up: tuple[bool, ...] = ()
    """Per sample, whether its rating (or its absence) comes from the follow-up turn."""

    def count(self, source: str) -> int:
        """Samples whose rating was read from ``source``."""
        return sum(1 for s in self.sources if s == source)

    @property
    def from_alternatives(self) -> int:
        """Ratings read from the first position's alternatives of a reply that chose no number."""
        return self.count("logprobs_first_position")


def read_rating(text: str, schema: dict[str, Any], low: int, high: int) -> tuple[float, str, str]:
    """A judge reply's rating: ``(score, source, missing_reason)``.

    The structured reply (``schema``) is the main path; the free-text parser
    (``[[N]]``, ``Score: N``, a bare number) is the fallback for a backend
    that sent the prompt without its schema.
    """
    reading = structured.read_json(text, schema)
    if reading.ok:
        return float(reading.value["score"]), "json", ""
    score = parse_score(text, low, high)
    if not math.isnan(score):
        return score, "text", ""
    return math.nan, "missing", f"no rating from {low} to {high} in the reply ({reading.error})"


FollowUp = tuple[Sequence[Request], Sequence[str], dict[str, Any], int, int]
"""One strategy's follow-up job: its unread requests, their first replies, its follow-up schema, low, high."""


def _follow_up(llm: LLM, requests: Sequence[Request], firsts: Sequence[str], schema: dict[str, Any],
               low: int, high: int) -> list[tuple[float, str, str, str]]:
    """One more turn for replies without a rating: the rating alone, as ``{"score": N}``.

    On a scale of single-token numbers (3 and 5, not 10/50/100) and a backend
    with logprobs, the rating is probability-weighted over the scale's tokens
    at the position where the reply states it (the schema puts the digit
    within the first few tokens). A reply that chose no number is read from
    its first position's alternatives only when the scale's tokens hold
    enough probability there (:func:`judge_engine.parsing.read_weighted`),
    and is then flagged ``logprobs_first_position``. Otherwise the number is
    read from the JSON, else from the free text. Returns ``(score, raw,
    source, missing_reason)`` per request.
    """
    return _follow_up_many(llm, [(requests, firsts, schema, low, high)])[0]


def _follow_up_many(llm: LLM, jobs: Sequence[FollowUp]) -> list[list[tuple[float, str, str, str]]]:
    """:func:`_follow_up` for several strategies' jobs, their turns sent in one batch; one list per job."""
    follow: list[Request] = []
    for requests, firsts, schema, low, high in jobs:
        weighted = llm.supports_logprobs and high <= 9
        params = GenerationParams(temperature=0.0, max_tokens=RETRY_MAX_TOKENS, top_logprobs=20 if weighted else 0,
                                  json_schema=structured.as_param(schema))
        ask = RETRY_TEMPLATE.render(low=low, high=high)
        follow += [Request((*r.messages, {"role": "assistant", "content": first}, {"role": "user", "content": ask}),
                           params) for r, first in zip(requests, firsts)]
    replies = iter(complete_all(llm, follow) if follow else [])
    outs = []
    for _, firsts, schema, low, high in jobs:
        weighted = llm.supports_logprobs and high <= 9
        out = []
        for first, reply in zip(firsts, replies):
            text = reply.text if reply is not None else ""
            raw = f"{first}\n--- follow-up ---\n{text}"
            if reply is None:
                out.append((math.nan, raw, "missing", "the backend rejected the follow-up request"))
                continue
            weighted_reason = ""
            if weighted and reply.logprobs:
                reading = read_weighted(reply.logprobs[0], low, high, first_position=True)
                if not math.isnan(reading.score):
                    out.append((reading.score, raw, reading.source, ""))
                    continue
                weighted_reason = reading.missing_reason
            score, source, reason = read_rating(text, schema, low, high)
            if weighted_reason and math.isnan(score):
                reason = f"{reason}; {weighted_reason}"
            out.append((score, raw, source, reason))
        outs.append(out)
    return outs


@dataclass
class _Judging:
    """One strategy's judging in progress: its prompts and requests, then its replies as read."""

    strategy: Strategy
    low: int
    high: int
    schema: dict[str, Any]
    prompts: list[str | None]
    idx: list[int]
    """Samples with a prompt (their auxiliaries exist), in order."""
    requests: list[Request]
    judge: list[float]
    raw: list[str]
    sources: list[str]
    reasons: list[str]
    followed: list[bool]
    todo: list[tuple[int, Request]]
    """Samples whose reply had no rating and get the follow-up turn."""


def _prepare(strategy: Strategy, samples: Sequence[Sample], aux: Auxiliaries, *, max_tokens: int, leave_out: bool,
             explanation_chars: int) -> _Judging:
    """The strategy's judge requests; the auxiliaries they need are generated here (lazily, by ``aux``)."""
    aspect, task = aux.aspect, aux.task
    low, high = rating_range(strategy[0], aspect)
    schema = rating_schema(strategy, aspect, explanation_chars=explanation_chars)
    inputs = aux.inputs_for(strategy, samples, leave_out=leave_out)
    prompts = [build_prompt(strategy, s, aspect, task, inp) if inp is not None else None
               for s, inp in zip(samples, inputs)]
    params = GenerationParams(temperature=0.0, max_tokens=structured.sized_max_tokens(max_tokens, schema),
                              json_schema=structured.as_param(schema))
    idx = [i for i, p in enumerate(prompts) if p is not None]
    requests = [Request(({"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": prompts[i]}),
                        params) for i in idx]
    n = len(samples)
    return _Judging(strategy, low, high, schema, prompts, idx, requests, judge=[math.nan] * n, raw=[""] * n,
                    sources=["missing"] * n, reasons=["an auxiliary this strategy needs is missing"] * n,
                    followed=[False] * n, todo=[])


def _read(job: _Judging, replies: Sequence[Any], retry: bool) -> None:
    """Read the first replies; with ``retry`` the unread ones are queued for the follow-up turn."""
    for i, reply in zip(job.idx, replies):
        if reply is None:
            job.reasons[i] = "the backend rejected the request"
            continue
        job.raw[i] = reply.text
        job.judge[i], job.sources[i], job.reasons[i] = read_rating(job.raw[i], job.schema, job.low, job.high)
    job.todo = [(i, request) for i, request, reply in zip(job.idx, job.requests, replies)
                if retry and reply is not None and math.isnan(job.judge[i])]


def _result(job: _Judging, aux: Auxiliaries, again: Sequence[tuple[float, str, str, str]]) -> StrategyScores:
    for (i, _), (score, text, source, reason) in zip(job.todo, again):
        job.judge[i], job.raw[i], job.sources[i], job.reasons[i], job.followed[i] = score, text, source, reason, True
    unparsed = sum(math.isnan(job.judge[i]) for i in job.idx)
    scores = tuple(math.nan if math.isnan(x) else to_aspect_range(x, (job.low, job.high), aux.aspect)
                   for x in job.judge)
    return StrategyScores(scores=scores, raw=tuple(job.raw), judge_scores=tuple(job.judge),
                          prompts=tuple(job.prompts), missing_aux=len(job.prompts) - len(job.idx),
                          unparsed=unparsed, retried=len(job.todo), sources=tuple(job.sources),
                          reasons=tuple(job.reasons), followed_up=tuple(job.followed))


def evaluate_strategy(strategy: Strategy, samples: Sequence[Sample], aux: Auxiliaries, *, llm: LLM,
                      max_tokens: int, leave_out: bool, retry: bool = False, explanation_chars: int = 600,
                      progress: Callable[[int, int], None] | None = None) -> StrategyScores:
    """Judge ``samples`` with ``strategy`` (greedy, one generation each; §4.1).

    The judge is asked for the JSON reply of :func:`rating_schema` (its
    explanation before or after the score, or none, as the strategy's
    chain-of-thought value says), with ``max_tokens`` as the ceiling and no
    more than that reply's longest form needs
    (:func:`judge_engine.structured.sized_max_tokens`); :func:`read_rating` reads it. With
    ``retry`` a reply without a rating gets one follow-up turn asking for the
    rating alone (:func:`_follow_up`); still none: missing, with its reason.
    An explanation has at most ``explanation_chars`` characters.
    """
    return evaluate_strategies([strategy], samples, aux, llm=llm, max_tokens=max_tokens, leave_out=leave_out,
                               retry=retry, explanation_chars=explanation_chars, progress=progress)[0]


def evaluate_strategies(strategies: Sequence[Strategy], samples: Sequence[Sample], aux: Auxiliaries, *, llm: LLM,
                        max_tokens: int, leave_out: bool, retry: bool = False, explanation_chars: int = 600,
                        progress: Callable[[int, int], None] | None = None) -> list[StrategyScores]:
    """:func:`evaluate_strategy` for strategies that do not depend on each other, one result each, in order.

    Their auxiliaries are generated strategy by strategy in the order given (so the same generations are
    asked for as one evaluation after another), then all judge requests go out as one batch and all
    follow-up turns as a second: the waves of one strategy, not of each. ``progress`` counts the batch's
    judge calls.
    """
    jobs = [_prepare(s, samples, aux, max_tokens=max_tokens, leave_out=leave_out, explanation_chars=explanation_chars)
            for s in strategies]
    flat = [r for job in jobs for r in job.requests]
    replies = iter(complete_all(llm, flat, progress=progress) if flat else [])
    for job in jobs:
        _read(job, [next(replies) for _ in job.requests], retry)
    waiting = [job for job in jobs if job.todo]
    again = iter(_follow_up_many(llm, [([r for _, r in job.todo], [job.raw[i] for i, _ in job.todo],
                                        follow_up_schema(job.strategy, aux.aspect), job.low, job.high)
                                       for job in waiting]))
    return [_result(job, aux, next(again) if job.todo else []) for job in jobs]
